/* op_gemm.c: bf16 GEMM, C = A x B^T (layout nt) or C = A x B (layout nn),
   fp32 accumulation, bf16 output. Skeleton: templates/gemm.hip.m4. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emutest.h"
#include "op.h"
#include "target.h"

static const char *const gemm_dtypes[] = {"bf16", NULL};
static const char *const gemm_layouts[] = {"nt", "nn", NULL};
static const char *const gemm_tiles[] = {"64", "128", NULL};

#define GEMM_DIM(n, d) \
  {n, OP_INT, NULL, 1, 2147483647L, OP_ANY, 1, n, d}

static const op_param gemm_params[] = {
    {"dtype", OP_ENUM, gemm_dtypes, 0, 0, "bf16", 0, "", "element type of A, B and C"},
    {"layout", OP_ENUM, gemm_layouts, 0, 0, "nt", 0, "",
     "nt: C = A x B^T with B stored N x K; nn: C = A x B with B stored K x N (row-major)"},
    GEMM_DIM("M", "rows of A and C"),
    GEMM_DIM("N", "columns of C"),
    GEMM_DIM("K", "reduction length"),
    {"tile_m", OP_ENUM, gemm_tiles, 0, 0, "128", 0, "tm", "rows of C per workgroup"},
    {"tile_n", OP_ENUM, gemm_tiles, 0, 0, "128", 0, "tn", "columns of C per workgroup"},
};

static int gemm_check(const op_inst *k, char *msg, size_t n) {
  (void)k;
  (void)msg;
  (void)n;
  return 0; /* every combination of valid values forms a kernel */
}

static int gemm_args(const op_inst *k, op_arg *a) {
  int n = 0;
  op_arg_add(a, &n, "const hk_bf16 *", "A");
  op_arg_add(a, &n, "const hk_bf16 *", "B");
  op_arg_add(a, &n, "hk_bf16 *", "C");
  op_arg_add(a, &n, "int", "lda");
  op_arg_add(a, &n, "int", "ldb");
  op_arg_add(a, &n, "int", "ldc");
  static const char *const dims[] = {"M", "N", "K"};
  for (int i = 0; i < 3; i++)
    if (op_is_any(k, dims[i])) op_arg_add(a, &n, "int", dims[i]);
  return n;
}

static int gemm_block(const op_inst *k) {
  (void)k;
  return 256; /* 4 waves in a 2 x 2 grid */
}

static void gemm_grid(const op_inst *k, char out[3][96]) {
  snprintf(out[0], 96, "cdiv(%s,%s)", op_term(k, "N"), op_val(k, "tile_n"));
  snprintf(out[1], 96, "cdiv(%s,%s)", op_term(k, "M"), op_val(k, "tile_m"));
  snprintf(out[2], 96, "1");
}

/* Problem sizes for `hkgen test`: tails in every dimension, K below one
   k-tile, and one of each 1. Baked dimensions keep their value. */
static int gemm_emu_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const char *const dims[] = {"M", "N", "K"};
  static const long cases[][3] = {{100, 77, 93}, {1, 1, 1},    {17, 33, 45},
                                  {64, 64, 32},  {130, 257, 70}, {129, 64, 200}};
  return et_shapes_from_cases(k, dims, 3, &cases[0][0], (int)(sizeof cases / sizeof cases[0]), NULL,
                              out, max);
}

/* Random bf16 matrix of rows x ld (the padding is random too). */
static unsigned short *gemm_random(et_ctx *c, long rows, long ld) {
  unsigned short *h = malloc((size_t)(rows * ld) * 2 + 2);
  for (long i = 0; i < rows * ld; i++) h[i] = et_to_bf16(et_uniform(c));
  return h;
}

static int gemm_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
  long M = shape[op_param_index(k->op, "M")], N = shape[op_param_index(k->op, "N")],
       K = shape[op_param_index(k->op, "K")];
  int nt = !strcmp(op_val(k, "layout"), "nt");
  /* leading dimensions: padded or not (exercises both load paths); C padded
     so that a write past column N shows up as a changed poison value */
  long lda = K + (et_rand(c) % 2 ? 8 : 0), ldb = (nt ? K : N) + (et_rand(c) % 2 ? 3 : 0);
  long ldc = N + 5, brows = nt ? N : K;
  unsigned short *hA = gemm_random(c, M, lda), *hB = gemm_random(c, brows, ldb);
  unsigned short *hC = malloc((size_t)(M * ldc) * 2);
  void *A = et_alloc(c, (size_t)(M * lda) * 2), *B = et_alloc(c, (size_t)(brows * ldb) * 2);
  void *C = et_alloc(c, (size_t)(M * ldc) * 2);
  et_upload(c, A, hA, (size_t)(M * lda) * 2);
  et_upload(c, B, hB, (size_t)(brows * ldb) * 2);
  et_arg_ptr(c, "A", A);
  et_arg_ptr(c, "B", B);
  et_arg_ptr(c, "C", C);
  et_arg_int(c, "lda", lda);
  et_arg_int(c, "ldb", ldb);
  et_arg_int(c, "ldc", ldc);
  static const char *const dims[] = {"M", "N", "K"};
  long vals[] = {M, N, K};
  for (int i = 0; i < 3; i++)
    if (op_is_any(k, dims[i])) et_arg_int(c, dims[i], vals[i]);
  int rc = et_launch(c);
  if (rc == 0) {
    et_download(c, hC, C, (size_t)(M * ldc) * 2);
    double *ref = malloc((size_t)(M * N) * sizeof *ref), *got = malloc((size_t)(M * N) * sizeof *got);
    int outside = 0;
    for (long i = 0; i < M; i++) {
      for (long j = 0; j < N; j++) {
        double s = 0;
        for (long q = 0; q < K; q++)
          s += et_from_bf16(hA[i * lda + q]) *
               et_from_bf16(nt ? hB[j * ldb + q] : hB[q * ldb + j]);
        ref[i * N + j] = s;
        got[i * N + j] = et_from_bf16(hC[i * ldc + j]);
      }
      for (long j = N; j < ldc; j++) outside |= hC[i * ldc + j] != 0xffff;
    }
    *err = outside ? INFINITY : et_rel_l2(ref, got, (size_t)(M * N));
    if (outside) et_note(c, "wrote C outside its N columns");
    free(ref);
    free(got);
  }
  free(hA);
  free(hB);
  free(hC);
  return rc;
}

/* sm_90a, layout nt (wgmma): GEMM_SM90_STAGES shared-memory stages of k =
   GEMM_SM90_TILE_K (A tile_m x k and B tile_n x k bf16), in dynamic shared
   memory, plus GEMM_LDS_SLACK bytes so that the skeleton can align the region
   to 1024 bytes (the 128-byte swizzle's period). gemm.sm90.hip.m4 derives its
   stage count from hkm_dynamic_lds with the same formula. Everything else
   (nn, AMD) uses static shared memory only. */
#ifndef GEMM_SM90_STAGES
#define GEMM_SM90_STAGES 4
#endif
#ifndef GEMM_SM90_TILE_K
#define GEMM_SM90_TILE_K 32 /* templates/gemm.sm90.hip.m4 hkm_gemm_wgmma_k */
#endif
#define GEMM_LDS_SLACK 1024
static int gemm_dynamic_lds(const op_inst *k) {
  const tgt_info *t = tgt_find(k->target);
  if (!t || strcmp(t->arch, "sm90") || strcmp(op_val(k, "layout"), "nt")) return 0;
  long stage = (op_int(k, "tile_m") + op_int(k, "tile_n")) * GEMM_SM90_TILE_K * 2;
  return (int)(GEMM_SM90_STAGES * stage + GEMM_LDS_SLACK);
}

const op_desc op_gemm = {
    .name = "gemm",
    .doc = "bf16 GEMM with fp32 accumulation: C[M][N] = A[M][K] x B (B^T for layout nt)",
    .skeleton = "gemm.hip.m4",
    .params = gemm_params,
    .nparams = (int)(sizeof gemm_params / sizeof gemm_params[0]),
    .check = gemm_check,
    .args = gemm_args,
    .block = gemm_block,
    .grid = gemm_grid,
    .emu_shapes = gemm_emu_shapes,
    .emu_run = gemm_emu_run,
    .dynamic_lds = gemm_dynamic_lds,
};
