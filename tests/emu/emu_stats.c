/* emu_stats.c: the emulator's access statistics (hkrt_emu_stats_*) on the
 * hand-written kernel tests/emu/stats_kernels.hip (build/emu/stats_kernels.so),
 * for one target:
 *
 *   emu_stats TARGET SO_DIR
 *
 * Each case launches the kernel with a lane-offset pattern and compares the
 * counts with those this test computes itself from AMD's rules, written out
 * below as the sources state them (not read from common/target.c, so that a
 * wrong table entry fails too): the bank count, the bytes one pass serves,
 * the lane groups of 16-byte reads, broadcast of one dword to the lanes that
 * share it, 128-byte cache lines. Cases cover a conflict-free and an n-way
 * conflicted pattern for every width and direction, broadcast, divergent
 * lanes (a masked access, and two call sites taken by the two halves of a
 * wave), repetitions with and without barriers, a partial last wave, and a
 * contiguous and a strided global load. Exit status 0 when every check
 * passes, 1 otherwise, 2 on a setup error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkrt.h"
#include "../unit/testlib.h"

#define CHECK T_CHECK

/* ---- the rules, per target ------------------------------------------------ */

typedef struct {
  const char *target;
  int banks;             /* dword banks */
  int read_pass, write_pass; /* bytes one pass serves */
  const char *b128_read; /* lane groups of a 16-byte read (lower half; the upper half is +32) */
} rule;

/* CDNA2/3: 32 banks, 128 bytes a pass; ds_read_b128 in 8 groups of 8 lanes.
   CDNA4: 64 banks; reads 256 bytes a pass (ds_read_b128: 4 phases of 16
   lanes), writes 128. Sources: see tgt_mem in common/target.c. */
static const rule rules[] = {
    {"gfx90a", 32, 128, 128, "0-3,20-23 4-7,16-19 8-11,28-31 12-15,24-27"},
    {"gfx942", 32, 128, 128, "0-3,20-23 4-7,16-19 8-11,28-31 12-15,24-27"},
    {"gfx950", 64, 256, 128, "0-3,12-15,20-23,24-27 4-11,16-19,28-31"},
};
#define LINE_BYTES 128

/* The group of lane in a list like "0-3,20-23 4-7,16-19" (groups split by
   spaces); -1 when the list does not name it. */
static int group_of(const char *list, int lane) {
  int g = 0;
  for (const char *p = list; *p;) {
    char *end;
    long lo = strtol(p, &end, 10), hi = lo;
    if (*end == '-') hi = strtol(end + 1, &end, 10);
    if (lane >= lo && lane <= hi) return g;
    if (*end == ' ') g++;
    p = *end ? end + 1 : end;
  }
  return -1;
}

static int pass_of(const rule *r, int write, int width, int lane) {
  if (!write && width == 16) {
    int groups = 1;
    for (const char *p = r->b128_read; *p; p++) groups += *p == ' ';
    return group_of(r->b128_read, lane % 32) + (lane / 32) * groups;
  }
  return lane / ((write ? r->write_pass : r->read_pass) / width);
}

/* Cycles and conflict-free cycles of one wave's access: off[l] < 0 means
   lane l takes no part. A pass costs its busiest bank's count of distinct
   dwords. */
static void lds_cost(const rule *r, int write, int width, const long *off, unsigned long long *cycles,
                     unsigned long long *ideal) {
  for (int p = 0; p < 64; p++) {
    long dwords[256];
    int n = 0, any = 0;
    for (int l = 0; l < 64; l++) {
      if (off[l] < 0 || pass_of(r, write, width, l) != p) continue;
      any = 1;
      for (int j = 0; j < width / 4; j++) {
        long w = off[l] / 4 + j, dup = 0;
        for (int i = 0; i < n; i++) dup |= dwords[i] == w;
        if (!dup) dwords[n++] = w;
      }
    }
    if (!any) continue;
    int worst = 0;
    for (int b = 0; b < r->banks; b++) {
      int c = 0;
      for (int i = 0; i < n; i++) c += dwords[i] % r->banks == b;
      if (c > worst) worst = c;
    }
    *cycles += (unsigned long long)worst;
    *ideal += 1;
  }
}

/* ---- launching -------------------------------------------------------------- */

typedef struct {
  unsigned *out;
  const uint16_t *src;
  int write, width, stride, active, reps, barrier, split, gstride;
  const int *offs;
} stats_args; /* stats_kernels.hip's struct hk_args */

typedef struct {
  const char *what;
  int threads;
  stats_args a;
  const int *host_offs; /* the lane offsets a.offs points to on the device, or NULL */
} scase;

static const hkrt_emu_site *find_site(const hkrt_emu_stats *st, hkrt_emu_access kind, unsigned bytes, int nth) {
  for (int i = 0; i < st->nsites; i++)
    if (st->sites[i].kind == kind && st->sites[i].bytes == bytes && nth-- == 0) return &st->sites[i];
  return NULL;
}

/* The lane offsets of wave w's LDS access in case c (-1: not taking part);
   half selects the lanes of one call site of the split case (0 or 1; -1:
   all). */
static void case_offsets(const scase *c, int w, int half, long off[64]) {
  for (int l = 0; l < 64; l++) {
    int t = w * 64 + l;
    int on = t < c->threads && (c->a.split ? half < 0 || (l < 32) == (half == 0) : l % c->a.active == 0);
    long o = c->host_offs ? c->host_offs[l] : (long)(((unsigned)l * (unsigned)c->a.stride) % 65536u);
    off[l] = on ? o : -1;
  }
}

static void run_case(hkrt_device *d, hkrt_func *fn, const rule *r, const scase *c, unsigned *out,
                     const uint16_t *src) {
  stats_args a = c->a;
  a.out = out;
  a.src = src;
  unsigned grid[3] = {1, 1, 1}, block[3] = {(unsigned)c->threads, 1, 1};
  if (hkrt_emu_stats_reset(d) != HKRT_OK) t_die("hkrt_emu_stats_reset");
  hkrt_status s = hkrt_launch(fn, grid, block, &a, sizeof a, NULL);
  CHECK(s == HKRT_OK, "%s: launch: %s", c->what, hkrt_error());
  hkrt_emu_stats st;
  if (hkrt_emu_stats_get(d, &st) != HKRT_OK) t_die("hkrt_emu_stats_get");
  CHECK(st.banks == r->banks && st.bank_bytes == 4 && st.line_bytes == LINE_BYTES,
        "%s: the device reports %d banks of %d bytes and %d-byte lines; the rule says %d, 4, %d", c->what,
        st.banks, st.bank_bytes, st.line_bytes, r->banks, LINE_BYTES);
  CHECK(st.dropped == 0, "%s: %llu accesses dropped", c->what, st.dropped);

  int waves = (c->threads + 63) / 64, halves = c->a.split ? 2 : 1;
  hkrt_emu_access kind = c->a.write ? HKRT_EMU_LDS_WRITE : HKRT_EMU_LDS_READ;
  unsigned width = c->a.split ? 4u : (unsigned)c->a.width;
  unsigned long long all_cycles = 0, all_ideal = 0;
  for (int h = 0; h < halves; h++) {
    unsigned long long cycles = 0, ideal = 0, partial = 0, insts = 0;
    for (int w = 0; w < waves; w++) {
      long off[64];
      case_offsets(c, w, c->a.split ? h : -1, off);
      int lanes = 0, wave_lanes = c->threads - w * 64 < 64 ? c->threads - w * 64 : 64;
      for (int l = 0; l < 64; l++) lanes += off[l] >= 0;
      if (!lanes) continue;
      unsigned long long cy = 0, id = 0;
      lds_cost(r, c->a.write, (int)width, off, &cy, &id);
      cycles += cy * (unsigned)c->a.reps;
      ideal += id * (unsigned)c->a.reps;
      insts += (unsigned)c->a.reps;
      partial += lanes < wave_lanes ? (unsigned)c->a.reps : 0;
    }
    const hkrt_emu_site *e = find_site(&st, kind, width, h);
    CHECK(e != NULL, "%s: no %s site of %u bytes (#%d)", c->what, kind ? "write" : "read", width, h);
    if (!e) continue;
    CHECK(e->insts == insts && e->partial == partial,
          "%s (site %d): %llu instructions, %llu partial; the rule gives %llu, %llu", c->what, h, e->insts,
          e->partial, insts, partial);
    CHECK(e->cycles == cycles && e->ideal == ideal,
          "%s (site %d): %llu bank cycles, %llu conflict-free; the rule gives %llu, %llu", c->what, h,
          e->cycles, e->ideal, cycles, ideal);
    all_cycles += cycles;
    all_ideal += ideal;
  }
  CHECK(find_site(&st, kind, width, halves) == NULL, "%s: more LDS sites than the kernel has", c->what);
  CHECK(st.lds_cycles == all_cycles && st.lds_ideal == all_ideal,
        "%s: totals %llu / %llu cycles, the rule gives %llu / %llu", c->what, st.lds_cycles, st.lds_ideal,
        all_cycles, all_ideal);

  /* the global load: 16 bytes per lane, every lane */
  unsigned long long req = 0, lines = 0;
  for (int w = 0; w < waves; w++) {
    unsigned long long seen[64];
    int n = 0;
    for (int l = 0; l < 64 && w * 64 + l < c->threads; l++) {
      for (unsigned long long b = 0; b < 16; b += 15) { /* a 16-byte access spans at most two lines */
        unsigned long long line = ((unsigned long long)(uintptr_t)src + (unsigned long long)l * c->a.gstride * 2 + b) / LINE_BYTES;
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= seen[i] == line;
        if (!dup && n < 64) seen[n++] = line;
      }
      req += 16;
    }
    lines += (unsigned long long)n * LINE_BYTES;
  }
  req *= (unsigned)c->a.reps;
  lines *= (unsigned)c->a.reps;
  const hkrt_emu_site *g = find_site(&st, HKRT_EMU_GLOBAL_READ, 16, 0);
  CHECK(g && g->req_bytes == req && g->line_bytes == lines,
        "%s: global %llu B requested in %llu B of lines; the rule gives %llu in %llu", c->what,
        g ? g->req_bytes : 0, g ? g->line_bytes : 0, req, lines);
  printf("  %-44s lds %6llu cycles / %6llu conflict-free (%.2fx), global %6llu B in %6llu B of lines\n", c->what,
         st.lds_cycles, st.lds_ideal, st.lds_ideal ? (double)st.lds_cycles / (double)st.lds_ideal : 0.0,
         st.global_req_bytes, st.global_line_bytes);
}

/* ---- the cases -------------------------------------------------------------- */

/* Seeded random lane offsets (naturally aligned, within 4 KiB): they tell
   AMD's lane groups from consecutive ones, which the regular patterns above
   cannot. The seed is fixed and printed. */
static void random_cases(hkrt_device *d, hkrt_func *fn, const rule *r, unsigned *out, const uint16_t *src) {
  uint64_t rng = 0x5eed5eedull;
  void *doffs = NULL;
  if (hkrt_alloc(d, 64 * sizeof(int), &doffs) != HKRT_OK) t_die("hkrt_alloc");
  printf("  random offsets, seed 0x5eed5eed:\n");
  for (int i = 0; i < 12; i++) {
    int write = i % 2, width = 4 << (i / 2 % 3), offs[64];
    for (int l = 0; l < 64; l++) offs[l] = (int)(t_splitmix64(&rng) % (4096 / (unsigned)width)) * width;
    if (hkrt_copy_to_device(d, doffs, offs, sizeof offs) != HKRT_OK) t_die("copy to device");
    char what[64];
    snprintf(what, sizeof what, "%s b%d, random offsets #%d", write ? "write" : "read", width * 8, i);
    scase c = {.what = what, .threads = 64, .a = {.write = write, .width = width, .active = 1, .reps = 1, .gstride = 8, .offs = doffs},
               .host_offs = offs};
    run_case(d, fn, r, &c, out, src);
  }
  hkrt_free(d, doffs);
}

static void test_target(const rule *r, const char *dir) {
  hkrt_device *d = NULL;
  if (hkrt_device_open(HKRT_BACKEND_EMU, r->target, &d) != HKRT_OK) t_die("cannot open emulator %s", r->target);
  char path[4096];
  snprintf(path, sizeof path, "%s/stats_kernels.so", dir);
  hkrt_module *m = NULL;
  hkrt_func *fn = NULL;
  if (hkrt_module_load(d, path, &m) != HKRT_OK || hkrt_module_function(m, "stats_access", &fn) != HKRT_OK)
    t_die("cannot load stats_access from %s", path);
  void *out = NULL, *src = NULL;
  if (hkrt_alloc(d, 256 * 4, &out) != HKRT_OK || hkrt_alloc(d, 64 * 512 * 2 + 64, &src) != HKRT_OK)
    t_die("hkrt_alloc");

  /* statistics off: the launch counts nothing */
  scase off = {.what = "statistics off", .threads = 64, .a = {.width = 4, .stride = 128, .active = 1, .reps = 1, .gstride = 8}};
  if (hkrt_emu_stats_enable(d, 0) != HKRT_OK) t_die("hkrt_emu_stats_enable");
  stats_args a = off.a;
  a.out = out;
  a.src = src;
  unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  CHECK(hkrt_launch(fn, grid, block, &a, sizeof a, NULL) == HKRT_OK, "launch: %s", hkrt_error());
  hkrt_emu_stats st;
  CHECK(hkrt_emu_stats_get(d, &st) == HKRT_OK && st.lds_insts == 0 && st.global_insts == 0 && st.nsites == 0,
        "statistics off: %llu LDS and %llu global instructions counted", st.lds_insts, st.global_insts);
  if (hkrt_emu_stats_enable(d, 1) != HKRT_OK) t_die("hkrt_emu_stats_enable");

  printf("emu_stats %s: %d banks, read pass %d B, write pass %d B\n", r->target, r->banks, r->read_pass,
         r->write_pass);
  int worst_nway = 0;
  for (int write = 0; write < 2; write++)
    for (int width = 4; width <= 16; width *= 2) {
      char what[2][64];
      /* consecutive lanes on consecutive addresses: conflict-free by every rule */
      snprintf(what[0], sizeof what[0], "%s b%d, stride %d (linear)", write ? "write" : "read", width * 8, width);
      scase lin = {.what = what[0], .threads = 128, .a = {.write = write, .width = width, .stride = width, .active = 1, .reps = 2,
                                  .barrier = 1, .gstride = 8}};
      run_case(d, fn, r, &lin, out, src);
      /* a stride of the whole bank row: every lane of a pass on the same banks */
      snprintf(what[1], sizeof what[1], "%s b%d, stride %d (one bank row)", write ? "write" : "read", width * 8,
               r->banks * 4);
      scase row = {.what = what[1], .threads = 128, .a = {.write = write, .width = width, .stride = r->banks * 4, .active = 1, .reps = 2,
                                  .barrier = 0, .gstride = 64}};
      run_case(d, fn, r, &row, out, src);
      /* the n-way case must cost more than the linear one: the rule is not vacuous */
      long o[64];
      unsigned long long cl = 0, il = 0, cr = 0, ir = 0;
      case_offsets(&lin, 0, -1, o);
      lds_cost(r, write, width, o, &cl, &il);
      case_offsets(&row, 0, -1, o);
      lds_cost(r, write, width, o, &cr, &ir);
      CHECK(cl == il && cr > ir, "%s / %s: linear %llu/%llu, row %llu/%llu", what[0], what[1], cl, il, cr, ir);
      if (cr / ir > (unsigned long long)worst_nway) worst_nway = (int)(cr / ir);
    }
  scase more[] = {
      {.what = "read b32, stride 0 (broadcast)", .threads = 64, .a = {.width = 4, .stride = 0, .active = 1, .reps = 1, .gstride = 8}},
      {.what = "read b128, stride 0 (broadcast)", .threads = 64, .a = {.width = 16, .stride = 0, .active = 1, .reps = 1, .gstride = 8}},
      {.what = "read b64, stride 8, even lanes only", .threads = 128, .a = {.width = 8, .stride = 8, .active = 2, .reps = 3, .gstride = 8}},
      {.what = "read b128, stride 32, every 4th lane", .threads = 64, .a = {.width = 16, .stride = 32, .active = 4, .reps = 1, .gstride = 8}},
      {.what = "read b32, two call sites by half wave", .threads = 128, .a = {.width = 4, .stride = 256, .active = 1, .reps = 2,
                                                      .split = 1, .gstride = 8}},
      {.what = "write b64, stride 136, 96 threads (partial wave)", .threads = 96, .a = {.write = 1, .width = 8, .stride = 136,
                                                                .active = 1, .reps = 1, .gstride = 2}},
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) run_case(d, fn, r, &more[i], out, src);
  random_cases(d, fn, r, out, src);
  printf("  worst n-way of the bank-row cases: %d\n", worst_nway);
  hkrt_module_unload(m);
  hkrt_device_close(d);
}

int main(int argc, char **argv) {
  t_prog = "emu_stats";
  T_DIE_NOTE(hkrt_error);
  const rule *r = NULL;
  for (size_t i = 0; argc == 3 && i < sizeof rules / sizeof rules[0]; i++)
    if (!strcmp(argv[1], rules[i].target)) r = &rules[i];
  if (!r) {
    fprintf(stderr, "usage: %s gfx90a|gfx942|gfx950 SO_DIR\n", argv[0]);
    return 2;
  }
  test_target(r, argv[2]);
  printf("emu_stats %s: %d checks, %d failed\n", r->target, t_checks, t_failures);
  return t_failures ? 1 : 0;
}
