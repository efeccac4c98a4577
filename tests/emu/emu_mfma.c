/* emu_mfma.c: the emulator's 32x32 and 16x16 bf16 MFMAs against AMD's ground truth.
 *
 *   emu_mfma layout DATA_DIR    hkemu_mfma_layout() vs the layout tables
 *   emu_mfma product DATA_DIR   hkemu_mfma_wave_32x32_bf16() and
 *                               hkemu_mfma_wave_32x32_f8() vs fp64 C + A*B,
 *                               operands placed by the tables, not by the
 *                               emulator's own layout function
 *
 * Ground truth, kpl 4 (gfx90a, gfx942): AMD Matrix Instruction Calculator
 * 1.02 tables in DATA_DIR (tests/data/mfma-layouts; see its README):
 *   cdna3.v_mfma_f32_32x32x8_bf16.{A,B,D}.csv, cdna3.v_mfma_f32_16x16x16_bf16.*
 *   cdna2.v_mfma_f32_32x32x8bf16_1k.{A,B,D}.csv, cdna2.v_mfma_f32_16x16x16bf16_1k.*
 * Ground truth, kpl 8 (gfx950, v_mfma_f32_32x32x16_bf16): the calculator has
 * no CDNA4 tables; cdna4_entry() below writes down the layout of AMD's CDNA4
 * ISA reference ("AMD Instinct MI300/CDNA4 ISA", MFMA data layouts) as also
 * given in the ROCm blog "Matrix Core Programming on AMD CDNA3 and CDNA4
 * Architecture" (rocm.blogs.amd.com, 2025; its 32x32x16 8-bit example has
 * the same 8-k-per-lane placement) and in AMD's gfx950 sample
 * github.com/carlushuang/gcnasm matrix_core_gfx950/matrix_core.cc
 * (v_mfma_f32_32x32x16_f16: offset_a = (tid / 32 * 8) + (tid % 32) * stride_a,
 * C row = tid / 32 * 4 + i % 4 + i / 4 * 8, col = tid % 32):
 *   A (32 x 16): lane l, element j holds A[l % 32][8 * (l / 32) + j]
 *   B (16 x 32): lane l, element j holds B[8 * (l / 32) + j][l % 32]
 *   C/D: as v_mfma_f32_32x32x8: register r of lane l holds
 *        D[(r / 4) * 8 + (l / 32) * 4 + r % 4][l % 32]
 *
 * fp8 (kpl 8): cdna3.v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8}.{A,B,D}.csv, AMD's
 * tables for gfx942's four 32x32x16 fp8/bf8 MFMAs, place the operands of each
 * format pair on gfx942 (FNUZ) and gfx950 (OCP: the same instructions on the
 * OCP formats, CDNA4 ISA); the reference decodes the codes with
 * hk_emu_fp8.h, which emu_fp8 checks against an independent table.
 *
 * Exit status: 0 all checks pass, 1 a check failed (a mismatch), 2 usage or
 * unreadable data. Built twice by tests/Makefile: build/emu_mfma and
 * build/emu_mfma_mutant (runtime built with -DHKEMU_MUTATE_LAYOUT, which
 * must make this program exit 1: test emu_layout_mutant). */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hk_emu_fp8.h"
#include "hkrt_int.h"
#include "../unit/testlib.h"

enum { NLANES = 64, MAXREG = 16 };

/* One operand table: for each lane and element, the matrix entry (row, col):
   A[row][k] -> (row, k), B[k][col] -> (k, col), D[row][col] -> (row, col). */
typedef struct {
  const char *name;
  int nelem;
  int row[NLANES][MAXREG], col[NLANES][MAXREG];
} layout_table;

typedef struct {
  const char *label; /* "cdna3 v_mfma_f32_32x32x8_bf16" */
  int kpl;
  int dim;           /* 32: 32x32xK (K = 2 kpl); 16: 16x16xK (K = 4 kpl) */
  layout_table t[3]; /* A, B, D */
} layout_set;

static int set_k(const layout_set *s) { return s->dim == 32 ? 2 * s->kpl : 4 * s->kpl; }
static int set_nd(const layout_set *s) { return s->dim * s->dim / NLANES; } /* D elements per lane */

/* Reads <dir>/<base>.<X>.csv: comment lines, a header "lane,...", 64 rows
   "lane,X[i][j],...". Every cell must name matrix X, and the 64 x nelem cells
   must cover the matrix exactly once (rows x cols entries). */
static void read_table(const char *dir, const char *base, char which, int rows, int cols,
                       layout_table *t) {
  char path[4096], line[4096];
  snprintf(path, sizeof path, "%s/%s.%c.csv", dir, base, which);
  FILE *f = fopen(path, "r");
  if (!f) t_die("cannot open %s", path);
  int header = 0, lanes = 0;
  static unsigned char seen[64][64];
  memset(seen, 0, sizeof seen);
  t->nelem = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!header) {
      if (!strncmp(line, "lane,", 5)) {
        header = 1;
        for (char *p = line; *p; p++) t->nelem += *p == ',';
        if (t->nelem < 1 || t->nelem > MAXREG) t_die("%s: %d columns", path, t->nelem);
      }
      continue;
    }
    if (!line[0]) continue;
    char *save = NULL, *tok = strtok_r(line, ",", &save);
    char *end;
    long lane = strtol(tok, &end, 10);
    if (*end || lane != lanes || lanes >= NLANES) t_die("%s: row %d: bad lane '%s'", path, lanes, tok);
    for (int i = 0; i < t->nelem; i++) {
      tok = strtok_r(NULL, ",", &save);
      int r, c, n = 0;
      char m;
      if (!tok || sscanf(tok, "%c[%d][%d]%n", &m, &r, &c, &n) != 3 || tok[n] || m != which ||
          r < 0 || r >= rows || c < 0 || c >= cols)
        t_die("%s: lane %ld, element %d: bad cell '%s'", path, lane, i, tok ? tok : "(none)");
      if (seen[r][c]++) t_die("%s: %c[%d][%d] appears twice", path, which, r, c);
      t->row[lane][i] = r;
      t->col[lane][i] = c;
    }
    if (strtok_r(NULL, ",", &save)) t_die("%s: lane %ld: extra cells", path, lane);
    lanes++;
  }
  fclose(f);
  if (!header || lanes != NLANES) t_die("%s: %d lanes, expected 64", path, lanes);
  if (NLANES * t->nelem != rows * cols)
    t_die("%s: %d x %d cells do not cover a %d x %d matrix", path, NLANES, t->nelem, rows, cols);
}

static void load_set(const char *dir, const char *base, const char *label, int kpl, int dim,
                     layout_set *s) {
  s->label = label;
  s->kpl = kpl;
  s->dim = dim;
  read_table(dir, base, 'A', dim, set_k(s), &s->t[0]);
  read_table(dir, base, 'B', set_k(s), dim, &s->t[1]);
  read_table(dir, base, 'D', dim, dim, &s->t[2]);
  if (s->t[0].nelem != kpl || s->t[1].nelem != kpl || s->t[2].nelem != set_nd(s))
    t_die("%s: %d/%d/%d elements per lane, expected %d/%d/%d", base, s->t[0].nelem,
          s->t[1].nelem, s->t[2].nelem, kpl, kpl, set_nd(s));
  s->t[0].name = "A";
  s->t[1].name = "B";
  s->t[2].name = "D";
}

/* The documented CDNA4 v_mfma_f32_32x32x16_bf16 layout (sources above). */
static void cdna4_entry(int which, int lane, int i, int *row, int *col) {
  switch (which) {
  case 0: *row = lane % 32; *col = 8 * (lane / 32) + i; break;          /* A[row][k] */
  case 1: *row = 8 * (lane / 32) + i; *col = lane % 32; break;          /* B[k][col] */
  default: *row = (i / 4) * 8 + (lane / 32) * 4 + i % 4; *col = lane % 32; /* D */
  }
}

/* The documented CDNA4 v_mfma_f32_16x16x32_bf16 layout (the same sources: 8
   k per lane in the 16x16x16 placement, 4 lane groups of 16; C/D as
   16x16x16, register r of lane l holds D[(l / 16) * 4 + r][l % 16]). */
static void cdna4_entry16(int which, int lane, int i, int *row, int *col) {
  switch (which) {
  case 0: *row = lane % 16; *col = 8 * (lane / 16) + i; break;
  case 1: *row = 8 * (lane / 16) + i; *col = lane % 16; break;
  default: *row = (lane / 16) * 4 + i; *col = lane % 16;
  }
}

static void cdna4_set(layout_set *s, int dim) {
  s->label = dim == 32 ? "cdna4 v_mfma_f32_32x32x16_bf16 (ISA document)"
                       : "cdna4 v_mfma_f32_16x16x32_bf16 (ISA document)";
  s->kpl = 8;
  s->dim = dim;
  static const char *const names[3] = {"A", "B", "D"};
  for (int w = 0; w < 3; w++) {
    s->t[w].name = names[w];
    s->t[w].nelem = w == 2 ? set_nd(s) : 8;
    for (int l = 0; l < NLANES; l++)
      for (int i = 0; i < s->t[w].nelem; i++)
        (dim == 32 ? cdna4_entry : cdna4_entry16)(w, l, i, &s->t[w].row[l][i], &s->t[w].col[l][i]);
  }
}

/* ---- emu_layout ----------------------------------------------------------- */

static void check_layout(const layout_set *s) {
  static const emu_operand ops[3] = {EMU_OPERAND_A, EMU_OPERAND_B, EMU_OPERAND_D};
  int before = t_failures, checked = 0;
  for (int w = 0; w < 3; w++)
    for (int l = 0; l < NLANES; l++)
      for (int i = 0; i < s->t[w].nelem; i++) {
        int r = -1, c = -1;
        (s->dim == 32 ? hkemu_mfma_layout : hkemu_mfma16_layout)(ops[w], s->kpl, l, i, &r, &c);
        checked++;
        if (r != s->t[w].row[l][i] || c != s->t[w].col[l][i])
          t_fail("%s: %s lane %d element %d: emulator places %s[%d][%d], the table %s[%d][%d]",
                 s->label, s->t[w].name, l, i, s->t[w].name, r, c, s->t[w].name,
                 s->t[w].row[l][i], s->t[w].col[l][i]);
      }
  printf("layout  %-48s kpl %d: %d lane/element positions, %d mismatches\n", s->label, s->kpl,
         checked, t_failures - before);
}

/* ---- emu_mfma_product ------------------------------------------------------ */

static uint64_t rng; /* t_uniform(&rng): splitmix64, seeded in main */

#define PRODUCT_TOL 1e-6
#define PRODUCT_TRIALS 25

/* One trial: random A, B (bf16) and C (fp32) scattered to the lanes through
   the tables, D gathered through the D table, compared with fp64. */
static double product_trial(const layout_set *s) {
  const int K = set_k(s), n = s->dim, nd = set_nd(s);
  unsigned short A[32][32], B[32][32];
  float C[32][32];
  double ref[32][32], got[32][32];
  int have[32][32];
  for (int r = 0; r < n; r++)
    for (int k = 0; k < K; k++) A[r][k] = t_to_bf16(t_uniform(&rng));
  for (int k = 0; k < K; k++)
    for (int c = 0; c < n; c++) B[k][c] = t_to_bf16(t_uniform(&rng));
  for (int r = 0; r < n; r++)
    for (int c = 0; c < n; c++) C[r][c] = (float)t_uniform(&rng);

  static unsigned short a[64][8], b[64][8];
  static float c[64][16], d[64][16];
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  for (int l = 0; l < NLANES; l++) {
    for (int j = 0; j < s->kpl; j++) {
      a[l][j] = A[s->t[0].row[l][j]][s->t[0].col[l][j]];
      b[l][j] = B[s->t[1].row[l][j]][s->t[1].col[l][j]];
    }
    for (int i = 0; i < 16; i++) {
      c[l][i] = i < nd ? C[s->t[2].row[l][i]][s->t[2].col[l][i]] : NAN;
      d[l][i] = NAN;
    }
  }
  (n == 32 ? hkemu_mfma_wave_32x32_bf16 : hkemu_mfma_wave_16x16_bf16)(
      s->kpl, (const unsigned short(*)[8])a, (const unsigned short(*)[8])b, (const float(*)[16])c, d);
  memset(have, 0, sizeof have);
  for (int l = 0; l < NLANES; l++)
    for (int i = 0; i < nd; i++) {
      int r = s->t[2].row[l][i], col = s->t[2].col[l][i];
      got[r][col] = d[l][i];
      have[r][col]++;
    }
  double num = 0, den = 0;
  for (int r = 0; r < n; r++)
    for (int col = 0; col < n; col++) {
      double acc = C[r][col];
      for (int k = 0; k < K; k++) acc += t_from_bf16(A[r][k]) * t_from_bf16(B[k][col]);
      ref[r][col] = acc;
      if (have[r][col] != 1) return INFINITY; /* cannot happen: tables are checked */
      if (isnan(got[r][col]) || isinf(got[r][col])) return NAN;
      num += (got[r][col] - ref[r][col]) * (got[r][col] - ref[r][col]);
      den += ref[r][col] * ref[r][col];
    }
  return sqrt(num / den);
}

/* fp8: random finite codes of magnitude at most 64 (subnormals included, so
   every product and sum stays well inside fp32), C random fp32. */
static unsigned char fp8_random_code(int fmt) {
  for (;;) {
    unsigned c = (unsigned)(t_uniform(&rng) * 128.0 + 128.0) & 0xffu;
    float v = hkemu_fp8_decode(c, fmt);
    if (v == v && fabsf(v) <= 64.0f) return (unsigned char)c;
  }
}

static double fp8_product_trial(const layout_set *s, int fa, int fb) {
  unsigned char A[32][16], B[16][32];
  float C[32][32];
  for (int r = 0; r < 32; r++)
    for (int k = 0; k < 16; k++) A[r][k] = fp8_random_code(fa);
  for (int k = 0; k < 16; k++)
    for (int c = 0; c < 32; c++) B[k][c] = fp8_random_code(fb);
  for (int r = 0; r < 32; r++)
    for (int c = 0; c < 32; c++) C[r][c] = (float)(64.0 * t_uniform(&rng));
  static unsigned char a[64][16], b[64][16];
  static float c[64][16], d[64][16];
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  for (int l = 0; l < NLANES; l++) {
    for (int j = 0; j < 8; j++) {
      a[l][j] = A[s->t[0].row[l][j]][s->t[0].col[l][j]];
      b[l][j] = B[s->t[1].row[l][j]][s->t[1].col[l][j]];
    }
    for (int i = 0; i < 16; i++) {
      c[l][i] = C[s->t[2].row[l][i]][s->t[2].col[l][i]];
      d[l][i] = NAN;
    }
  }
  hkemu_mfma_wave_32x32_f8(fa, fb, (const unsigned char(*)[16])a, (const unsigned char(*)[16])b,
                           (const float(*)[16])c, d);
  double num = 0, den = 0;
  for (int l = 0; l < NLANES; l++)
    for (int i = 0; i < 16; i++) {
      int r = s->t[2].row[l][i], col = s->t[2].col[l][i];
      double ref = C[r][col];
      for (int k = 0; k < 16; k++)
        ref += (double)hkemu_fp8_decode(A[r][k], fa) * (double)hkemu_fp8_decode(B[k][col], fb);
      if (isnan(d[l][i]) || isinf(d[l][i])) return NAN;
      num += (d[l][i] - ref) * (d[l][i] - ref);
      den += ref * ref;
    }
  return sqrt(num / den);
}

static void check_fp8_product(const layout_set *s, const char *target, int fa, int fb) {
  double worst = 0;
  int bad = 0;
  for (int t = 0; t < PRODUCT_TRIALS; t++) {
    double e = fp8_product_trial(s, fa, fb);
    if (!(e <= PRODUCT_TOL)) {
      bad++;
      t_fail("%s fp8 %s x %s: trial %d: relative L2 error %.3e (tolerance %.0e)", target, hkemu_fp8_name(fa),
             hkemu_fp8_name(fb), t, e, PRODUCT_TOL);
    }
    if (!(e <= worst)) worst = e;
  }
  printf("product %s v_mfma_f32_32x32x16 %-9s x %-9s (table) kpl 8: %d trials, worst relative L2 "
         "%.3e, %d over %.0e\n",
         target, hkemu_fp8_name(fa), hkemu_fp8_name(fb), PRODUCT_TRIALS, worst, bad, PRODUCT_TOL);
}

static void check_product(const layout_set *s) {
  double worst = 0;
  int bad = 0;
  for (int t = 0; t < PRODUCT_TRIALS; t++) {
    double e = product_trial(s);
    if (!(e <= PRODUCT_TOL)) { /* NaN fails too */
      bad++;
      t_fail("%s: trial %d: relative L2 error %.3e (tolerance %.0e)", s->label, t, e, PRODUCT_TOL);
    }
    if (!(e <= worst)) worst = e;
  }
  printf("product %-48s kpl %d: %d trials, worst relative L2 %.3e, %d over %.0e\n", s->label,
         s->kpl, PRODUCT_TRIALS, worst, bad, PRODUCT_TOL);
}

int main(int argc, char **argv) {
  t_prog = "emu_mfma";
  if (argc != 3 || (strcmp(argv[1], "layout") && strcmp(argv[1], "product"))) {
    fprintf(stderr, "usage: %s layout|product DATA_DIR\n", argv[0]);
    return 2;
  }
  enum { NSETS = 6, NF8 = 4 }; /* bf16 forms (32x32, 16x16), then the fp8 ones */
  static layout_set sets[NSETS + NF8];
  load_set(argv[2], "cdna3.v_mfma_f32_32x32x8_bf16", "cdna3 v_mfma_f32_32x32x8_bf16 (table)", 4, 32,
           &sets[0]);
  load_set(argv[2], "cdna2.v_mfma_f32_32x32x8bf16_1k", "cdna2 v_mfma_f32_32x32x8bf16_1k (table)",
           4, 32, &sets[1]);
  cdna4_set(&sets[2], 32);
  load_set(argv[2], "cdna3.v_mfma_f32_16x16x16_bf16", "cdna3 v_mfma_f32_16x16x16_bf16 (table)", 4,
           16, &sets[3]);
  load_set(argv[2], "cdna2.v_mfma_f32_16x16x16bf16_1k", "cdna2 v_mfma_f32_16x16x16bf16_1k (table)",
           4, 16, &sets[4]);
  cdna4_set(&sets[5], 16);
  static const char *const f8names[NF8] = {"fp8_fp8", "fp8_bf8", "bf8_fp8", "bf8_bf8"}; /* A x B */
  static char f8labels[NF8][64]; /* kept: the sets point at them */
  for (int i = 0; i < NF8; i++) {
    char base[64];
    snprintf(base, sizeof base, "cdna3.v_mfma_f32_32x32x16_%s", f8names[i]);
    snprintf(f8labels[i], sizeof f8labels[i], "cdna3 v_mfma_f32_32x32x16_%s (table)", f8names[i]);
    load_set(argv[2], base, f8labels[i], 8, 32, &sets[NSETS + i]);
  }
  if (!strcmp(argv[1], "layout")) {
    for (int i = 0; i < NSETS + NF8; i++) check_layout(&sets[i]);
  } else {
    const char *env = getenv("HKGEN_TEST_SEED");
    unsigned long long seed = env && *env ? strtoull(env, NULL, 0)
                                          : (unsigned long long)time(NULL) ^ ((unsigned long long)clock() << 20);
    printf("seed %llu (HKGEN_TEST_SEED=%llu repeats this run)\n", seed, seed);
    rng = seed;
    for (int i = 0; i < NSETS; i++) check_product(&sets[i]);
    for (int fa = 0; fa < 2; fa++)
      for (int fb = 0; fb < 2; fb++) {
        const layout_set *t = &sets[NSETS + 2 * fa + fb]; /* the table of this format pair */
        check_fp8_product(t, "gfx942", HKEMU_FP8_E4M3_FNUZ + fa, HKEMU_FP8_E4M3_FNUZ + fb);
        check_fp8_product(t, "gfx950", HKEMU_FP8_E4M3_OCP + fa, HKEMU_FP8_E4M3_OCP + fb);
      }
  }
  if (t_failures) {
    printf("%s: %d mismatch%s\n", argv[1], t_failures, t_failures == 1 ? "" : "es");
    return 1;
  }
  printf("%s: all checks passed\n", argv[1]);
  return 0;
}
