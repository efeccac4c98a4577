/* op_gemm.c: bf16 GEMM, C = A x B^T (layout nt) or C = A x B (layout nn),
   fp32 accumulation, bf16 output. Skeleton: templates/gemm.hip.m4. */
#include <stdio.h>

#include "op.h"

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
};
