/* op_gemm.c: bf16 GEMM, C = A x B^T (layout nt) or C = A x B (layout nn),
   fp32 accumulation, bf16 output. Skeletons: templates/gemm.hip.m4 (AMD),
   templates/gemm.sm90.hip.m4 (sm_90a). Small and short shapes: split_k
   (both) and persistent blocks (sm_90a), and on sm_90a a cost model that
   hkrt_select ranks kernels by (gemm_plan_cost).
   fp8 GEMM (dtype fp8_*, layout nt): A and B fp8 codes dequantised by scale
   tensors (per tensor, per row of A and column of B, or DeepSeek-V3's 1x128
   and 128x128 blocks), fp32 accumulation, bf16 or fp32 output. Skeletons:
   templates/gemm_fp8.hip.m4 and gemm_fp8.sm90.hip.m4 (docs/FP8.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emutest.h"
#include "op.h"
#include "target.h"

static const char *const gemm_dtypes[] = {"bf16", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3_fnuz", "fp8_e5m2_fnuz", NULL};
static const char *const gemm_scales[] = {"none", "tensor", "row", "block", NULL};
static const char *const gemm_outs[] = {"bf16", "f32", NULL};
static const char *const gemm_layouts[] = {"nt", "nn", NULL};
static const char *const gemm_tiles[] = {"64", "128", "256", NULL};
static const char *const gemm_promotes[] = {"serial", "alternate", "overlap", NULL};
static const char *const gemm_epilogues[] = {"direct", "tma", NULL};

#define GEMM_MAX_SPLIT 16
#define GEMM_WGMMA_MAX_STAGES 8

#define GEMM_DIM(n, d) \
  {n, OP_INT, NULL, 1, 2147483647L, OP_ANY, 1, n, d}

static const op_param gemm_params[] = {
    {"dtype", OP_ENUM, gemm_dtypes, 0, 0, "bf16", 0, "",
     "element type of A and B (and of C for bf16): bf16; fp8_e4m3, fp8_e5m2 (OCP: gfx950, sm_90a); "
     "fp8_e4m3_fnuz, fp8_e5m2_fnuz (gfx942)"},
    {"layout", OP_ENUM, gemm_layouts, 0, 0, "nt", 0, "",
     "nt: C = A x B^T with B stored N x K; nn: C = A x B with B stored K x N (row-major)"},
    GEMM_DIM("M", "rows of A and C"),
    GEMM_DIM("N", "columns of C"),
    GEMM_DIM("K", "reduction length"),
    {"tile_m", OP_ENUM, gemm_tiles, 0, 0, "128", 0, "tm",
     "rows of C per workgroup (256: AMD only; the default on gfx942 and gfx950)"},
    {"tile_n", OP_ENUM, gemm_tiles, 0, 0, "128", 0, "tn",
     "columns of C per workgroup (256: the default on gfx942, gfx950 and sm_90a)"},
    /* small and short shapes (gemm_sched_*): features, at their defaults the
       kernels are as before they existed */
    {"split_k", OP_INT, NULL, 1, GEMM_MAX_SPLIT, "1", 0, "sk",
     "k ranges per C tile, summed in split order by the last to finish (> 1 takes a workspace "
     "and counters)"},
    {"persistent", OP_BOOL, NULL, 0, 0, "false", 0, "ps",
     "min(work units, multiprocessors) blocks, each walking units (sm_90a)"},
    {"stream_k", OP_BOOL, NULL, 0, 0, "false", 0, "skx",
     "min(tiles x k-tiles, multiprocessors) blocks, each an equal share of the tiles' k-tiles; tiles "
     "shared by blocks summed in k order by the last (sm_90a; takes a workspace and counters)"},
    {"stages", OP_INT, NULL, 0, GEMM_WGMMA_MAX_STAGES, "0", 0, "st",
     "shared-memory stages (sm_90a; 0: as many as fit); with 64-row tiles, few enough for two blocks per "
     "SM compile for two"},
    {"scale", OP_ENUM, gemm_scales, 0, 0, "none", 0, "",
     "fp8 dequantisation: tensor (scale_a, scale_b one float each), row (scale_a per row of A, scale_b per "
     "row of B), block (scale_a per 1 x 128 block of A, scale_b per 128 x 128 block of B; K a multiple of "
     "128); none for bf16"},
    {"out", OP_ENUM, gemm_outs, 0, 0, "bf16", 0, "", "element type of C (f32: fp8 dtypes only)"},
    /* sm_90a fp8 kernel structure (gemm_fp8.sm90.hip.m4) */
    {"maxnreg", OP_BOOL, NULL, 0, 0, "false", 0, "mr",
     "registers moved from the producer warpgroup to the consumers (setmaxnreg: 40 and 232 a thread; sm_90a "
     "fp8, tile_m 128)"},
    {"promote", OP_ENUM, gemm_promotes, 0, 0, "serial", 0, "pr",
     "block scales on sm_90a: serial (each k-tile's wgmma waited for, then scaled into the accumulator), "
     "alternate (the same, the two consumer warpgroups issuing in turn so that one scales while the other's "
     "products run; tile_m 128) or overlap (two partial accumulators: k-tile t + 1's wgmma runs while t is "
     "scaled; takes maxnreg)"},
    {"cluster", OP_INT, NULL, 1, 2, "1", 0, "cl",
     "blocks per cluster on sm_90a fp8: 2 takes m-tiles in pairs sharing B, each block copying half of it "
     "to both (TMA multicast)"},
    {"group_m", OP_INT, NULL, 1, 64, "8", 0, "gm",
     "m-tiles per group of the block order on sm_90a fp8 (a group's blocks sweep the n-tiles together, "
     "sharing A and B in L2)"},
    {"epilogue", OP_ENUM, gemm_epilogues, 0, 0, "direct", 0, "ep",
     "how C is written on sm_90a: direct (stores from registers) or tma (through shared memory and "
     "bulk tensor stores; out bf16, split_k 1, no stream_k)"},
};

static const char *const gemm_tuning[] = {"tile_m",   "tile_n", "split_k", "persistent", "stream_k",
                                          "stages",   "maxnreg", "promote", "cluster",  "group_m", "epilogue", NULL};
static const char *const gemm_features[] = {"split_k", "persistent", "stream_k", "stages",   "scale",
                                            "out",     "maxnreg",    "promote",  "cluster",  "group_m", "epilogue", NULL};
static const char *const gemm_omissible[] = {"dtype", NULL};

#define GEMM_WGMMA_TILE_K 64 /* k per shared-memory stage: 128-byte rows of bf16 */

/* Hopper's path: wgmma fed by bulk tensor copies (TMA). */
static int gemm_is_wgmma(const op_inst *k) { return tgt_name_has(k->target, TGT_WGMMA | TGT_TMA); }

/* Work units instead of one block per C tile: split-K or persistent blocks
   (the skeleton's gemm_sched section). */
static int gemm_split(const op_inst *k) { return (int)op_int(k, "split_k"); }
static int gemm_is_sched(const op_inst *k) {
  return gemm_split(k) > 1 || op_int(k, "persistent") || op_int(k, "stream_k");
}
/* A workspace and counters: split-K or stream-K. */
static int gemm_has_ws(const op_inst *k) { return gemm_split(k) > 1 || op_int(k, "stream_k"); }

/* ---- fp8 ------------------------------------------------------------------
   A dtype's format: the tile headers' token and its encoding, which the
   target table says a target has (TGT_FP8_OCP: gfx950, sm_90a;
   TGT_FP8_FNUZ: gfx942). */
typedef struct {
  const char *dtype, *token;
  int fnuz;
} gemm_fp8_fmt;
static const gemm_fp8_fmt gemm_fp8_fmts[] = {{"fp8_e4m3", "E4M3_OCP", 0},
                                             {"fp8_e5m2", "E5M2_OCP", 0},
                                             {"fp8_e4m3_fnuz", "E4M3_FNUZ", 1},
                                             {"fp8_e5m2_fnuz", "E5M2_FNUZ", 1}};
#define GEMM_FP8_BLOCK 128 /* the block scales' k (and B's n) extent */

/* k's fp8 format, NULL for bf16. */
static const gemm_fp8_fmt *gemm_fp8(const op_inst *k) {
  for (size_t i = 0; i < sizeof gemm_fp8_fmts / sizeof gemm_fp8_fmts[0]; i++)
    if (!strcmp(op_val(k, "dtype"), gemm_fp8_fmts[i].dtype)) return &gemm_fp8_fmts[i];
  return NULL;
}

static int gemm_fp8_on(const char *target, int fnuz) {
  return tgt_name_has(target, fnuz ? TGT_FP8_FNUZ : TGT_FP8_OCP);
}

static int gemm_scale_is(const op_inst *k, const char *mode) { return !strcmp(op_val(k, "scale"), mode); }

/* The dtypes target has, as one line. */
static void gemm_dtypes_on(const char *target, char *out, size_t n) {
  int w = snprintf(out, n, "bf16");
  for (size_t i = 0; i < sizeof gemm_fp8_fmts / sizeof gemm_fp8_fmts[0]; i++)
    if (gemm_fp8_on(target, gemm_fp8_fmts[i].fnuz) && w > 0 && (size_t)w < n)
      w += snprintf(out + w, n - (size_t)w, ", %s", gemm_fp8_fmts[i].dtype);
}

static int gemm_check_fp8(const op_inst *k, const gemm_fp8_fmt *f, char *msg, size_t n) {
  char allowed[128];
  gemm_dtypes_on(k->target, allowed, sizeof allowed);
  if (!gemm_fp8_on(k->target, f->fnuz)) {
    snprintf(msg, n, "dtype %s (%s) is not an fp8 format %s has; allowed there: %s", f->dtype, f->token,
             k->target, allowed);
    return -1;
  }
  if (gemm_scale_is(k, "none")) {
    snprintf(msg, n, "dtype %s needs a scale mode; allowed: tensor, row, block", f->dtype);
    return -1;
  }
  if (strcmp(op_val(k, "layout"), "nt")) {
    snprintf(msg, n, "dtype %s needs layout nt (B stored N x K, k contiguous, as weights are); allowed: nt",
             f->dtype);
    return -1;
  }
  if (gemm_scale_is(k, "block") && !op_is_any(k, "K") && op_int(k, "K") % GEMM_FP8_BLOCK) {
    snprintf(msg, n, "scale block needs K a multiple of %d (here %ld)", GEMM_FP8_BLOCK, op_int(k, "K"));
    return -1;
  }
  /* AMD: 32 x 32 fp8 MFMA tiles, 4 wave columns */
  if (!gemm_is_wgmma(k) && op_int(k, "tile_n") < 128) {
    snprintf(msg, n, "dtype %s on %s needs tile_n 128 or 256 (wave tiles of whole 32 x 32 fp8 MFMAs)",
             f->dtype, k->target);
    return -1;
  }
  /* sm_90a block scales: two accumulators of tile_n / 2 floats a thread */
  if (gemm_is_wgmma(k) && gemm_scale_is(k, "block") && op_int(k, "tile_n") > 128) {
    snprintf(msg, n, "scale block on %s needs tile_n 64 or 128 (two accumulators per thread)", k->target);
    return -1;
  }
  if (!gemm_is_wgmma(k)) return 0;
  if (op_int(k, "maxnreg") && op_int(k, "tile_m") != 128) {
    snprintf(msg, n, "maxnreg needs tile_m 128 (a producer and two consumer warpgroups); allowed here: false");
    return -1;
  }
  if (strcmp(op_val(k, "promote"), "serial") && !gemm_scale_is(k, "block")) {
    snprintf(msg, n, "promote %s is for scale block (here %s); allowed: serial", op_val(k, "promote"),
             op_val(k, "scale"));
    return -1;
  }
  if (!strcmp(op_val(k, "promote"), "alternate") && op_int(k, "tile_m") != 128) {
    snprintf(msg, n, "promote alternate needs tile_m 128 (two consumer warpgroups taking turns)");
    return -1;
  }
  if (!strcmp(op_val(k, "promote"), "overlap") && !op_int(k, "maxnreg")) {
    snprintf(msg, n, "promote overlap holds three accumulators a thread and needs maxnreg true");
    return -1;
  }
  if (!strcmp(op_val(k, "epilogue"), "tma") && strcmp(op_val(k, "out"), "bf16")) {
    snprintf(msg, n, "epilogue tma needs out bf16 (here %s); allowed: direct", op_val(k, "out"));
    return -1;
  }
  return 0;
}

/* epilogue tma: C through shared memory and bulk tensor stores (templates/gemm_tma_c.m4) */
static int gemm_tma_c(const op_inst *k) { return !strcmp(op_val(k, "epilogue"), "tma"); }

static int gemm_check(const op_inst *k, char *msg, size_t n) {
  if ((gemm_split(k) > 1 || op_int(k, "stream_k")) && strcmp(op_val(k, "dtype"), "bf16")) {
    snprintf(msg, n, "split_k and stream_k are for dtype bf16 (here %s); allowed: split_k 1, stream_k false",
             op_val(k, "dtype"));
    return -1;
  }
  if ((op_int(k, "maxnreg") || strcmp(op_val(k, "promote"), "serial") || op_int(k, "group_m") != 8 ||
       op_int(k, "cluster") != 1) &&
      (!gemm_is_wgmma(k) || !gemm_fp8(k))) {
    snprintf(msg, n, "maxnreg, promote, cluster and group_m are for fp8 dtypes on sm_90a (here %s on "
             "%s); allowed: false, serial, 1, 8", op_val(k, "dtype"), k->target);
    return -1;
  }
  if (gemm_tma_c(k) && (!gemm_is_wgmma(k) || gemm_split(k) > 1 || op_int(k, "stream_k"))) {
    snprintf(msg, n, "epilogue tma needs sm_90a and whole tiles per block (here %s, split_k %d, stream_k %s); "
             "allowed: direct", k->target, gemm_split(k), op_int(k, "stream_k") ? "true" : "false");
    return -1;
  }
  if (op_int(k, "stages") && !gemm_is_wgmma(k)) {
    snprintf(msg, n, "stages needs sm_90a (here %s; AMD kernels pick theirs); allowed here: 0", k->target);
    return -1;
  }
  if (op_int(k, "stages") == 1) {
    snprintf(msg, n, "stages 1 leaves nothing to overlap; allowed: 0 (as many as fit) or 2 to %d",
             GEMM_WGMMA_MAX_STAGES);
    return -1;
  }
  if (op_int(k, "stream_k") && (!gemm_is_wgmma(k) || gemm_split(k) > 1)) {
    snprintf(msg, n, "stream_k needs sm_90a and split_k 1 (here %s, split_k %d); allowed: stream_k false",
             k->target, gemm_split(k));
    return -1;
  }
  if (op_int(k, "persistent") && !gemm_is_wgmma(k)) {
    snprintf(msg, n, "persistent needs sm_90a for now (here %s); allowed here: persistent false", k->target);
    return -1;
  }
  if (op_int(k, "tile_m") == 256 && gemm_is_wgmma(k)) {
    snprintf(msg, n, "tile_m 256 needs an AMD target (here %s); allowed: 64, 128", k->target);
    return -1;
  }
  const gemm_fp8_fmt *f = gemm_fp8(k);
  if (f) return gemm_check_fp8(k, f, msg, n);
  if (!gemm_scale_is(k, "none")) {
    snprintf(msg, n, "scale %s is for fp8 dtypes; allowed for bf16: none", op_val(k, "scale"));
    return -1;
  }
  if (strcmp(op_val(k, "out"), "bf16")) {
    snprintf(msg, n, "out %s is for fp8 dtypes; allowed for bf16: bf16", op_val(k, "out"));
    return -1;
  }
  return 0;
}

static const char *gemm_skeleton_of(const op_inst *k) { return gemm_fp8(k) ? "gemm_fp8.hip.m4" : NULL; }

/* The tensor map of matrix `tensor' (outer x inner bf16, leading dimension
   ld): boxes of box_inner x box_outer elements, 128-byte swizzle. */
static void gemm_tmap(op_arg *a, int *n, const char *name, const char *tensor, const char *inner,
                      const char *outer, const char *ld, int box_inner, int box_outer);

/* fp8: the scale tensors (float), and for row and block scales the shapes
   the caller says they have (rows x columns, row-major), checked at launch
   against the mode's (gemm_fp8_rules). */
static void gemm_fp8_args(const op_inst *k, op_plan *p) {
  op_arg_add(p->args, &p->nargs, "const float *", "scale_a");
  op_arg_add(p->args, &p->nargs, "const float *", "scale_b");
  if (gemm_scale_is(k, "tensor")) return;
  static const char *const dims[] = {"scale_a_rows", "scale_a_cols", "scale_b_rows", "scale_b_cols"};
  for (int i = 0; i < 4; i++) op_arg_add(p->args, &p->nargs, "int", dims[i]);
}

static void gemm_fp8_rules(const op_inst *k, op_plan *p) {
  /* AMD reads scale_a's rows through a buffer: 32-bit byte offsets */
  if (!gemm_is_wgmma(k) && !gemm_scale_is(k, "tensor"))
    op_plan_check(p, "M <= 536870911", "scale row and block: M at most 2^29 - 1 (32-bit offsets into scale_a)");
  if (gemm_scale_is(k, "row")) {
    op_plan_check(p, "scale_a_rows == M && scale_a_cols == 1", "scale row: scale_a is M x 1 (one per row of A)");
    op_plan_check(p, "scale_b_rows == N && scale_b_cols == 1", "scale row: scale_b is N x 1 (one per row of B)");
  } else if (gemm_scale_is(k, "block")) {
    op_plan_check(p, "K % 128 == 0", "scale block: K must be a multiple of 128");

    op_plan_check(p, "scale_a_rows == K / 128 && scale_a_cols == M",
                  "scale block: scale_a is K/128 x M (block kb of row m at kb * M + m)");
    op_plan_check(p, "scale_b_rows == cdiv(N,128) && scale_b_cols == K / 128",
                  "scale block: scale_b is cdiv(N,128) x K/128 (block nb, kb at nb * K/128 + kb)");
  }
}

static void gemm_args(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  const int fp8 = gemm_fp8(k) != NULL;
  op_arg_add(a, n, fp8 ? "const hk_fp8 *" : "const hk_bf16 *", "A");
  op_arg_add(a, n, fp8 ? "const hk_fp8 *" : "const hk_bf16 *", "B");
  op_arg_add(a, n, !strcmp(op_val(k, "out"), "f32") ? "float *" : "hk_bf16 *", "C");
  op_arg_add(a, n, "int", "lda");
  op_arg_add(a, n, "int", "ldb");
  op_arg_add(a, n, "int", "ldc");
  static const char *const dims[] = {"M", "N", "K"};
  for (int i = 0; i < 3; i++)
    if (op_is_any(k, dims[i])) op_arg_add(a, n, "int", dims[i]);
  if (gemm_has_ws(k)) {
    op_arg_add(a, n, "float *", "workspace");
    op_arg_add(a, n, "long", "workspace_bytes");
    op_arg_add(a, n, "int *", "counters");
    op_arg_add(a, n, "long", "counters_len");
  }
  if (fp8) gemm_fp8_args(k, p);
  if (gemm_is_wgmma(k)) {
    /* A: boxes of k-tile x tile_m; B: nt k-tile x tile_n, nn 64 columns x k-tile */
    int tk = (int)op_tune(p, "tile_k");
    gemm_tmap(a, n, "tmap_a", "A", "K", "M", "lda", tk, (int)op_int(k, "tile_m"));
    /* fp8 clusters: each block copies 1 / cluster of B's tile to all of them */
    const int cl = gemm_fp8(k) ? (int)op_int(k, "cluster") : 1;
    if (!strcmp(op_val(k, "layout"), "nt"))
      gemm_tmap(a, n, "tmap_b", "B", "K", "N", "ldb", tk, (int)op_int(k, "tile_n") / cl);
    else
      gemm_tmap(a, n, "tmap_b", "B", "N", "K", "ldb", 64, tk);
    /* epilogue tma: C by boxes of 64 columns (128 bytes) x 64 rows (a consumer warpgroup's) */
    if (gemm_tma_c(k)) gemm_tmap(a, n, "tmap_c", "C", "N", "M", "ldc", 64, 64);
  }
}

/* Hopper (wgmma): shared-memory stages of k = tile_k (A tile_m x k and B
   tile_n x k bf16), as many as fit in GEMM_WGMMA_STAGE_BUDGET bytes (at most
   GEMM_WGMMA_MAX_STAGES), in dynamic shared memory; then bar_bytes of
   mbarriers (two per stage), plus 1024 bytes so that the skeleton can align
   the region to 1024 bytes (the 128-byte swizzle's period). A producer
   warpgroup and one consumer warpgroup per 64 rows of the tile. */
#define GEMM_WGMMA_STAGE_BUDGET (192 * 1024)
static void gemm_plan_wgmma(const op_inst *k, op_plan *p) {
  /* 128-byte rows either way: 64 bf16 or 128 fp8 (one block scale's k) */
  const long esize = gemm_fp8(k) ? 1 : 2, tk = GEMM_WGMMA_TILE_K * 2 / esize;
  long stage = (op_int(k, "tile_m") + op_int(k, "tile_n")) * tk * esize;
  /* persistent, epilogue tma: C staged for its bulk stores beside the
     stages (64 x 128 bf16 a consumer warpgroup, a 256-wide tile in two
     rounds), the stages taking what the block may have besides */
  const tgt_info *t = tgt_find(k->target);
  const long c_stage = op_int(k, "persistent") && gemm_tma_c(k)
                           ? op_int(k, "tile_m") * (op_int(k, "tile_n") < 128 ? op_int(k, "tile_n") : 128) * 2
                           : 0;
  long stages = c_stage ? ((long)t->lds_bytes - c_stage - 256 - 1024) / stage : GEMM_WGMMA_STAGE_BUDGET / stage;
  if (stages > GEMM_WGMMA_MAX_STAGES) stages = GEMM_WGMMA_MAX_STAGES;
  /* stages asked for (at most what fits): 64-row tiles whose blocks then fit
     twice in an SM's shared memory compile for two blocks per SM (at most
     128 registers a thread for 256 threads) */
  long want = op_int(k, "stages");
  if (want && want < stages) stages = want;
  op_plan_tune(p, "tile_k", tk);
  op_plan_tune(p, "stages", stages);
  op_plan_tune(p, "bar_bytes", 256);
  op_plan_tune(p, "c_stage_bytes", c_stage);
  p->block = 128 + 2 * (int)op_int(k, "tile_m");
  p->dynamic_lds = (int)(stages * stage + c_stage + op_tune(p, "bar_bytes") + 1024);
  if (want && op_int(k, "tile_m") == 64 && 2 * (p->dynamic_lds + 1024L) <= (long)t->lds_unit)
    op_plan_tune(p, "blocks_per_sm", 2);
}

/* AMD: 8 waves in a 2 x 4 grid (wave tiles of 128 x 64 at 256 x 256, as the
   fastest AMD GEMMs use), LDS stages as below, an LDS swizzle for the
   target's bank count, and registers for 2 waves per SIMD. Static LDS only. */
#define GEMM_AMD_TILE_K 64
#define GEMM_AMD_PP_TILE_K 32 /* ping-pong: three stages of k 32 */
#define GEMM_AMD_GROUP_M 4    /* tile rows per L2 group */
static void gemm_plan_amd(const op_inst *k, op_plan *p) {
  const tgt_info *t = tgt_find(k->target);
  long rows = op_int(k, "tile_m") + op_int(k, "tile_n");
  long stage = rows * GEMM_AMD_TILE_K * 2, pp_stage = rows * GEMM_AMD_PP_TILE_K * 2;
  int nt = !strcmp(op_val(k, "layout"), "nt");
  /* 8-wave ping-pong (two wave groups a phase apart, three stages of k 32)
     where A and B can both go global -> LDS directly (16-byte LDS DMA:
     gfx950) and the stages fit. Layout nn transposes B through registers;
     with A alone by DMA it spilled (clang-22, 2026-12-01): no ping-pong
     there. Otherwise two stages of k 64 where they fit (gfx950 nn), one on
     gfx942 (64 KiB holds one 256 x 256 stage). */
  /* a k-32 stage must give each wave whole 1024-byte DMA instructions and
     each thread whole 16-byte vectors: tiles of 128 or more */
  int big = op_int(k, "tile_m") >= 128 && op_int(k, "tile_n") >= 128;
  int pp = tgt_has(t, TGT_LDS_DMA) && nt && big && 3 * pp_stage <= (long)t->lds_bytes;
  op_plan_tune(p, "tile_k", pp ? GEMM_AMD_PP_TILE_K : GEMM_AMD_TILE_K);
  op_plan_tune(p, "stages", pp ? 3 : 2 * stage <= (long)t->lds_bytes ? 2 : 1);
  op_plan_tune(p, "pingpong", pp);
  op_plan_tune(p, "lds_dma", pp);
  op_plan_tune(p, "lds_bytes", t->lds_bytes);
  op_plan_tune(p, "waves_m", 2);
  op_plan_tune(p, "waves_n", 4);
  /* the target's LDS banks (tgt_mem): 32 banks take 128 bytes a pass, one
     line's worth; 64 take two lines, which the swizzle then keys in pairs */
  op_plan_tune(p, "lds_swizzle_shift", t->mem && t->mem->banks > 32 ? 1 : 0);
  op_plan_tune(p, "group_m", GEMM_AMD_GROUP_M);
  op_plan_tune(p, "waves_per_simd", 2);
  /* A fragments per LDS wait: all of them; none (the compiler's waits) in
     two-stage steps that hold the next tile in registers across the multiply,
     which have no registers left for it at 2 waves per SIMD */
  op_plan_tune(p, "mma_a_group", op_int(k, "tile_m") / 2 / 16);
  op_plan_tune(p, "mma_a_group_staged", 0);
  p->block = 64 * 2 * 4;
}

/* Split-K and persistent blocks (gemm_is_sched): a work unit is one k range
   of one C tile, units = tiles x split_k, numbered tile-major so that the
   splits of a tile run together; a 1-D grid of one block per unit, or
   (persistent) min(units, device_units) blocks, each walking units
   gridDim apart, its producer running ahead into the next unit's stages
   while the consumers store. split_k > 1: every split stores its fp32
   partial tile (rows inside M) to the workspace, fences and counts; the
   block that brings the tile's counter to split_k adds the partials in
   split order (the same bits whichever finishes last), stores C and sets
   the counter back to 0: the caller zeroes the counters once, and
   launches that share them must not overlap. */
static void gemm_split_checks(const op_inst *k, op_plan *p);

/* Stream-K with at most this many m-tiles: one lane of blocks per m-tile,
   the lanes reading B in step (the template's STREAM_LANES). */
#define GEMM_STREAM_LANES 4

static void gemm_plan_sched(const op_inst *k, op_plan *p) {
  char tiles[OP_FORMULA];
  op_formula(tiles, "cdiv(%s,%s)*cdiv(%s,%s)", op_term(k, "M"), op_val(k, "tile_m"), op_term(k, "N"),
           op_val(k, "tile_n"));
  op_plan_tune(p, "split_k", gemm_split(k));
  op_plan_tune(p, "persistent", op_int(k, "persistent"));
  op_plan_tune(p, "stream_k", op_int(k, "stream_k"));
  op_plan_tune(p, "stream_lanes", GEMM_STREAM_LANES);
  /* 128 x 256 stream-K: the partial sums' addresses and the walk do not fit
     beside the accumulators in 168 registers a thread (spills); setmaxnreg
     gives the consumers 232 */
  op_plan_tune(p, "move_regs", op_int(k, "stream_k") && op_int(k, "tile_m") == 128 && op_int(k, "tile_n") == 256);
  if (op_int(k, "stream_k"))
    op_formula(p->grid[0], "min(%s*cdiv(%s,64),device_units)", tiles, op_term(k, "K"));
  else if (op_int(k, "persistent"))
    op_formula(p->grid[0], "min(%s*%d,device_units)", tiles, gemm_split(k));
  else op_formula(p->grid[0], "%s*%d", tiles, gemm_split(k));
  snprintf(p->grid[1], OP_FORMULA, "1");
  gemm_split_checks(k, p);
}

/* split_k > 1: the workspace and counter sizes, checked at launch. */
static void gemm_split_checks(const op_inst *k, op_plan *p) {
  if (!gemm_has_ws(k)) return;
  char tiles[OP_FORMULA], rule[OP_FORMULA];
  op_formula(tiles, "cdiv(%s,%s)*cdiv(%s,%s)", op_term(k, "M"), op_val(k, "tile_m"), op_term(k, "N"),
             op_val(k, "tile_n"));
  long slot = op_int(k, "tile_m") * op_int(k, "tile_n") * 4;
  if (op_int(k, "stream_k")) {
    op_formula(rule, "workspace_bytes >= min(%s*cdiv(%s,64),device_units)*%ld", tiles, op_term(k, "K"), 2 * slot);
    op_plan_check(p, rule, "two partial tiles per block: 2*tile_m*tile_n*4 bytes for each of the grid's blocks");
  } else {
    op_formula(rule, "workspace_bytes >= %s*%ld", tiles, gemm_split(k) * slot);
    op_plan_check(p, rule, "the split partials: split_k*tile_m*tile_n*4 bytes per C tile");
  }
  op_formula(rule, "counters_len >= %s", tiles);
  op_plan_check(p, rule, "one split counter per C tile, zeroed before the first launch");
}

/* Selection's cost model on sm_90a (op_plan.cost, nanoseconds on an H200),
   its constants fitted to the H200 runs of 2026-12-02 (docs/PERF.md): a
   block's time per k-tile depends on its tile and on the rows of A inside M
   (GEMM_H200_KTILE: measured with one row, M = 1, and at M >= tile_m, linear
   in between); rounds = units over the device's SMs; each round of blocks
   pays a fill (persistent blocks: once, then a tile's epilogue per unit; two
   blocks per SM: half the rounds); split-K pays its partials' traffic and a
   fixed time per round for counting and summing; stream-K an equal share
   of all k-tiles, one fill, two partial tiles per block and a fixed time
   for the shared tiles' sums (GEMM_H200_STREAM_NS, fitted to the picks of
   the 2026-12-04 02:05-02:32 runs; 64 x 256 and 128 x 128 stream-K, slower
   than another variant everywhere, are left out of the measured catalogue,
   tests/device/smallgemm.yaml); its DRAM term counts the panels read again
   (at 8192^3 128 x 256 stream-K took 1.7x the persistent kernel's time). The
   launch takes the larger of that and the compulsory DRAM bytes at
   GEMM_H200_DRAM_B_PER_NS, plus an eighth of the smaller. */
#define GEMM_H200_DRAM_B_PER_NS 2500
#define GEMM_H200_FILL_NS 500
#define GEMM_H200_SPLIT_B_PER_NS 20 /* partial tiles stored and read back */
#define GEMM_H200_SPLIT_NS 2000     /* per round: the count, fences and the last split's sum */
#define GEMM_H200_STREAM_NS 13700   /* stream-K: the shared tiles' sums */
#define GEMM_H200_L2_REUSE_B (32L << 20) /* stream-K: an operand up to this size is read from DRAM once */
#define GEMM_H200_ROUND_MEM_NS 10000 /* DRAM side: a further round of blocks (fitted 2026-12-04: 224 tiles of
                                        64 x 128 at M = 1 took 15% longer than 112 of 64 x 256) */
static const struct {
  int tm, tn, one_row, full; /* ns per k-tile at M = 1 and at M >= tm */
} gemm_h200_ktile[] = {
    /* full: 2 tm tn 64 flops / (TFLOP/s of main's kernel at 4096^3 nt, 2026-11-29 / 132 SMs);
       one_row (64-row tiles): 8B o projection at M = 1, 2026-12-02; then 128 x 128 full, 64 x 64
       full, 64 x 256 one_row and the split traffic refitted to the picks of the 2026-12-03 07:36
       run (tests/device/smallgemm_select.py replays them: 43 -> 47 of 54 shapes >= 0.9 cuBLAS);
       64 x 256 one_row again to the two 2026-12-04 02:0x runs' picks (105 -> 106 of 128) */
    {128, 256, 882, 882}, {128, 128, 475, 475}, {128, 64, 328, 328},
    {64, 256, 414, 515},  {64, 128, 195, 301},  {64, 64, 234, 189},
};

/* k-tile time as a formula of M ("" when the tile has no figures). */
static void gemm_ktile_ns(const op_inst *k, char *out) {
  int tm = (int)op_int(k, "tile_m"), tn = (int)op_int(k, "tile_n");
  out[0] = 0;
  for (size_t i = 0; i < sizeof gemm_h200_ktile / sizeof gemm_h200_ktile[0]; i++) {
    if (gemm_h200_ktile[i].tm != tm || gemm_h200_ktile[i].tn != tn) continue;
    int one = gemm_h200_ktile[i].one_row, full = gemm_h200_ktile[i].full;
    /* linear in min(M, tm), written so that no division sees a negative value */
    op_formula(out, "(%d%c%d*min(%s,%d)/%d)", one, full >= one ? '+' : '-', full >= one ? full - one : one - full,
               op_term(k, "M"), tm, tm);
  }
}

static void gemm_plan_cost(const op_inst *k, op_plan *p) {
  int tm = (int)op_int(k, "tile_m"), tn = (int)op_int(k, "tile_n"), s = gemm_split(k);
  int ps = (int)op_int(k, "persistent"), bps = op_tune(p, "blocks_per_sm") ? (int)op_tune(p, "blocks_per_sm") : 1;
  const char *M = op_term(k, "M"), *N = op_term(k, "N"), *K = op_term(k, "K");
  char step[OP_FORMULA], units[OP_FORMULA], rounds[OP_FORMULA], fill[OP_FORMULA], dram[OP_COST / 4];
  char sm[OP_COST / 2 - 16];
  gemm_ktile_ns(k, step);
  if (!step[0]) return;
  op_formula(units, "cdiv(%s,%d)*cdiv(%s,%d)*%d", M, tm, N, tn, s);
  op_formula(rounds, "cdiv(%s,device_units)", units);
  /* persistent: each further unit pays its tile's epilogue, half of it when
     the bulk tensor stores run on behind the next unit's k-tiles */
  if (ps) op_formula(fill, "%d+(%s-1)*%d", GEMM_H200_FILL_NS, rounds, tm * tn / (gemm_tma_c(k) ? 128 : 64));
  else op_formula(fill, "cdiv(%s,device_units*%d)*%d", units, bps, GEMM_H200_FILL_NS);
  int wd, w = snprintf(sm, sizeof sm, "%s*cdiv(cdiv(%s,64),%d)*%s+%s", rounds, K, s, step, fill);
  if (op_int(k, "stream_k")) /* an equal share of every tile's k-tiles, two partial tiles a block */
    w = snprintf(sm, sizeof sm,
                 "cdiv(cdiv(%s,%d)*cdiv(%s,%d)*cdiv(%s,64),device_units)*%s+%d+%s*%d+%d*min(%s,%d)/%d+%d",
                 M, tm, N, tn, K, step, GEMM_H200_FILL_NS, rounds, tm * tn / 64, 2 * tn * 4, M, tm,
                 GEMM_H200_SPLIT_B_PER_NS, GEMM_H200_SPLIT_NS + GEMM_H200_STREAM_NS);
  if (s > 1 && w > 0 && (size_t)w < sizeof sm)
    w += snprintf(sm + w, sizeof sm - (size_t)w, "+(%s+%d)*min(%s,%d)*%d/%d+%s*%d", rounds, s, M, tm, tn * 4,
                  GEMM_H200_SPLIT_B_PER_NS, rounds, GEMM_H200_SPLIT_NS);
  if (op_int(k, "stream_k")) /* blocks reach a shared panel at different k: an operand over
                                GEMM_H200_L2_REUSE_B is read again by each tile column (A) or row (B),
                                B not with at most GEMM_STREAM_LANES m-tiles (the lanes read it in step) */
    wd = snprintf(dram, sizeof dram,
             "(%s*%s*(1+(cdiv(%s,%d)-1)*min(1,max(0,cdiv(%s,%d)-%d))*min(1,max(0,%s*%s-%ld)))"
             "+%s*%s*(1+(cdiv(%s,%d)-1)*min(1,max(0,%s*%s-%ld)))+%s*%s)*2/%d",
             N, K, M, tm, M, tm, GEMM_STREAM_LANES, N, K, GEMM_H200_L2_REUSE_B / 2, M, K, N, tn, M, K,
             GEMM_H200_L2_REUSE_B / 2, M, N, GEMM_H200_DRAM_B_PER_NS);
  else /* and each further round of units (blocks, or the tiles a persistent block takes in turn) a ramp
          and a tail of its own: fitted so, persistent kernels included */
    wd = snprintf(dram, sizeof dram, "(%s*%s+%s*%s+%s*%s)*2/%d+(cdiv(%s,device_units*%d)-1)*%d", N, K, M, K, M, N,
                  GEMM_H200_DRAM_B_PER_NS, units, bps, GEMM_H200_ROUND_MEM_NS);
  if (w < 0 || (size_t)w >= sizeof sm || wd < 0 || (size_t)wd >= sizeof dram) return; /* too long: no cost */
  w = snprintf(p->cost, sizeof p->cost, "max(%s,%s)+min(%s,%s)/8", sm, dram, sm, dram);
  if (w < 0 || (size_t)w >= sizeof p->cost) p->cost[0] = 0;
}

/* AMD split-K: the one-workgroup-per-tile grid with z = split_k; workgroup
   z multiplies its k range and the last split of a tile sums them, as on
   sm_90a (the skeleton's split-K section). */
static void gemm_plan_split_amd(const op_inst *k, op_plan *p) {
  op_plan_tune(p, "split_k", gemm_split(k));
  snprintf(p->grid[2], OP_FORMULA, "%d", gemm_split(k));
  gemm_split_checks(k, p);
}

/* AMD fp8: the bf16 kernel's 2 x 4 waves and 128-byte LDS rows, here of
   128 codes (one block scale's k), 32 x 32 x 16 fp8 MFMAs; two stages where
   they fit (gfx950), else one (gfx942: 64 KiB is one 256 x 256 stage). */
static void gemm_plan_amd_fp8(const op_inst *k, op_plan *p) {
  const tgt_info *t = tgt_find(k->target);
  long stage = (op_int(k, "tile_m") + op_int(k, "tile_n")) * GEMM_FP8_BLOCK;
  int stages = 2 * stage <= (long)t->lds_bytes ? 2 : 1;
  op_plan_tune(p, "tile_k", GEMM_FP8_BLOCK);
  op_plan_tune(p, "stages", stages);
  /* direct global -> LDS loads (gfx950) where two stages fit: no staging
     registers, which block scales' two accumulators need */
  op_plan_tune(p, "lds_dma", tgt_has(t, TGT_LDS_DMA) && stages == 2);
  op_plan_tune(p, "lds_bytes", t->lds_bytes);
  op_plan_tune(p, "waves_m", 2);
  op_plan_tune(p, "waves_n", 4);
  op_plan_tune(p, "lds_swizzle_shift", t->mem && t->mem->banks > 32 ? 1 : 0);
  op_plan_tune(p, "group_m", GEMM_AMD_GROUP_M);
  op_plan_tune(p, "waves_per_simd", 2);
  p->block = 64 * 2 * 4;
}

static void gemm_plan(const op_inst *k, op_plan *p) {
  if (gemm_is_wgmma(k)) gemm_plan_wgmma(k, p);
  else if (gemm_fp8(k)) gemm_plan_amd_fp8(k, p);
  else gemm_plan_amd(k, p);
  if (gemm_fp8(k)) op_plan_tune(p, "scale_block", GEMM_FP8_BLOCK);
  gemm_args(k, p);
  const long cl = gemm_fp8(k) && gemm_is_wgmma(k) ? op_int(k, "cluster") : 1;
  if (cl > 1) {
    /* fp8 clusters: a one-dimensional grid of clusters, each a pair of
       m-tiles (units) at one n-tile; persistent: at most a block per
       multiprocessor */
    char units[OP_FORMULA];
    op_formula(units, "cdiv(cdiv(%s,%s),%ld)*cdiv(%s,%s)", op_term(k, "M"), op_val(k, "tile_m"), cl,
               op_term(k, "N"), op_val(k, "tile_n"));
    if (op_int(k, "persistent")) {
      op_plan_tune(p, "persistent", 1);
      op_formula(p->grid[0], "%ld*min(%s,max(device_units/%ld,1))", cl, units, cl);
    } else {
      op_formula(p->grid[0], "%ld*%s", cl, units);
    }
    snprintf(p->grid[1], OP_FORMULA, "1");
  } else if (gemm_is_sched(k) && gemm_is_wgmma(k)) {
    gemm_plan_sched(k, p);
  } else {
    snprintf(p->grid[0], OP_FORMULA, "cdiv(%s,%s)", op_term(k, "N"), op_val(k, "tile_n"));
    snprintf(p->grid[1], OP_FORMULA, "cdiv(%s,%s)", op_term(k, "M"), op_val(k, "tile_m"));
    if (gemm_split(k) > 1) gemm_plan_split_amd(k, p);
  }
  if (gemm_is_wgmma(k)) gemm_plan_cost(k, p);
  int nt = !strcmp(op_val(k, "layout"), "nt");
  op_plan_check(p, "lda >= K", "A is M x K, row-major");
  op_plan_check(p, nt ? "ldb >= K" : "ldb >= N", nt ? "layout nt: B is N x K, row-major" : "layout nn: B is K x N, row-major");
  op_plan_check(p, "ldc >= N", "C is M x N, row-major");
  /* tile and k-step counts are 32-bit ints: a dimension and a tile's worth
     more must fit one */
  op_plan_check(p, "M <= 2147483391 && N <= 2147483391 && K <= 2147483391",
                "M, N and K at most 2^31 - 257 (32-bit tile counts)");
  if (gemm_fp8(k)) gemm_fp8_rules(k, p);
}

/* Problem sizes for `hkgen test`: tails in every dimension, K below one
   k-tile, and one of each 1. 300 x 520 x 264: several whole 256-wide tiles
   and k-tiles before the tails, so that the main loop's buffer loads (rows
   past M and N zeroed by their range check) run, for layout nn too. Baked
   dimensions keep their value. */
static int gemm_emu_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const char *const dims[] = {"M", "N", "K"};
  /* fp8: tails in M and N (and in K where the mode allows), K below a
     k-tile of 128, and several k-tiles (the main loop's fast steps) and
     256-wide tiles before the tails */
  static const long fp8[][3] = {{100, 77, 93}, {1, 1, 1}, {130, 257, 200}, {300, 520, 520}};
  static const long fp8_block[][3] = {{100, 77, 128}, {1, 1, 128}, {130, 257, 384}, {300, 520, 256}};
  if (gemm_fp8(k))
    return et_shapes_from_cases(k, dims, 3, gemm_scale_is(k, "block") ? &fp8_block[0][0] : &fp8[0][0], 4,
                                NULL, out, max);
  static const long cases[][3] = {{100, 77, 93}, {1, 1, 1},    {17, 33, 45},
                                  {64, 64, 32},  {130, 257, 70}, {129, 64, 200},
                                  {300, 520, 264}};
  return et_shapes_from_cases(k, dims, 3, &cases[0][0], (int)(sizeof cases / sizeof cases[0]), NULL,
                              out, max);
}

/* Random bf16 matrix of rows x ld (the padding is random too). */
static unsigned short *gemm_random(et_ctx *c, long rows, long ld) {
  unsigned short *h = malloc((size_t)(rows * ld) * 2 + 2);
  for (long i = 0; i < rows * ld; i++) h[i] = et_to_bf16(et_uniform(c));
  return h;
}

/* split_k > 1: the workspace and zeroed counters, as the launch rules size
   them; a launch with either one short must be refused naming it (then the
   note is cleared). Returns 0, or -1 with a note. */
typedef struct {
  void *ws, *cnt;
  long ws_bytes, cnt_len;
} gemm_split_bufs;

static void gemm_split_alloc(const op_inst *k, et_ctx *c, long M, long N, gemm_split_bufs *b) {
  long tm = op_int(k, "tile_m"), tn = op_int(k, "tile_n");
  b->cnt_len = ((M + tm - 1) / tm) * ((N + tn - 1) / tn);
  b->ws_bytes = b->cnt_len * gemm_split(k) * tm * tn * 4;
  b->ws = et_alloc(c, (size_t)b->ws_bytes);
  b->cnt = et_alloc(c, (size_t)b->cnt_len * 4);
  int *zero = calloc((size_t)b->cnt_len, 4);
  et_upload(c, b->cnt, zero, (size_t)b->cnt_len * 4);
  free(zero);
}

/* One launch's arguments (the split-K ones when split_k > 1, with the sizes given). */
typedef struct {
  void *A, *B, *C;
  long lda, ldb, ldc, M, N, K;
} gemm_emu_dev;

static void gemm_split_args(et_ctx *c, const gemm_split_bufs *b, long ws_bytes, long cnt_len);

static void gemm_emu_args(et_ctx *c, const op_inst *k, const gemm_emu_dev *d, const gemm_split_bufs *b,
                          long ws_bytes, long cnt_len) {
  et_args_clear(c);
  et_arg_ptr(c, "A", d->A);
  et_arg_ptr(c, "B", d->B);
  et_arg_ptr(c, "C", d->C);
  et_arg_int(c, "lda", d->lda);
  et_arg_int(c, "ldb", d->ldb);
  et_arg_int(c, "ldc", d->ldc);
  static const char *const dims[] = {"M", "N", "K"};
  long vals[] = {d->M, d->N, d->K};
  for (int i = 0; i < 3; i++)
    if (op_is_any(k, dims[i])) et_arg_int(c, dims[i], vals[i]);
  if (gemm_split(k) > 1) gemm_split_args(c, b, ws_bytes, cnt_len);
}

static void gemm_split_args(et_ctx *c, const gemm_split_bufs *b, long ws_bytes, long cnt_len) {
  et_arg_ptr(c, "workspace", b->ws);
  et_arg_int(c, "workspace_bytes", ws_bytes);
  et_arg_ptr(c, "counters", b->cnt);
  et_arg_int(c, "counters_len", cnt_len);
}

static int gemm_split_refused(et_ctx *c, const op_inst *k, const gemm_emu_dev *d, const gemm_split_bufs *b) {
  static const char *const names[] = {"workspace_bytes", "counters_len"};
  for (int i = 0; i < 2; i++) {
    char note[1024];
    gemm_emu_args(c, k, d, b, b->ws_bytes - (i == 0), b->cnt_len - (i == 1));
    int rc = et_launch(c);
    et_note_get(c, note, sizeof note);
    if (rc == 0 || !strstr(note, names[i])) {
      et_note(c, "%s one short was not refused by name: %s", names[i], rc == 0 ? "it launched" : note);
      return -1;
    }
  }
  et_note(c, "%s", "");
  return 0;
}

/* After a split-K launch every counter is back to 0. */
static int gemm_split_after(et_ctx *c, const gemm_split_bufs *b) {
  int *cnt = malloc((size_t)b->cnt_len * 4), bad = 0;
  et_download(c, cnt, b->cnt, (size_t)b->cnt_len * 4);
  for (long i = 0; i < b->cnt_len && !bad; i++)
    if (cnt[i]) {
      et_note(c, "split counter %ld is %d after the launch, not 0", i, cnt[i]);
      bad = 1;
    }
  free(cnt);
  return bad ? -1 : 0;
}

/* The value of fp8 code c of format f (docs/FP8.md's table): E4M3 bias 7
   (OCP) or 8 (FNUZ), E5M2 bias 15 or 16; exponent field 0 is subnormal. */
static double gemm_fp8_value(const gemm_fp8_fmt *f, unsigned c) {
  const int e5 = f->token[1] == '5', mbits = e5 ? 2 : 3, bias = (e5 ? 15 : 7) + f->fnuz;
  const int e = (int)(c >> mbits) & (e5 ? 31 : 15), m = (int)c & ((1 << mbits) - 1);
  const double mag = e ? ldexp(1.0 + m / (double)(1 << mbits), e - bias) : ldexp(m / (double)(1 << mbits), 1 - bias);
  return c & 0x80 ? -mag : mag;
}

/* A random finite code of magnitude about 2^-4 .. 2^2 (values of fp8 GEMM
   inputs after quantisation), one in 16 subnormal or zero. */
static unsigned char gemm_fp8_random(const gemm_fp8_fmt *f, et_ctx *c) {
  const int e5 = f->token[1] == '5', mbits = e5 ? 2 : 3, bias = (e5 ? 15 : 7) + f->fnuz;
  const unsigned r = (unsigned)et_rand(c);
  const int e = r % 16 == 0 ? 0 : bias - 4 + (int)((r >> 4) % 7);
  unsigned code = ((r >> 8) & 0x80u) | ((unsigned)e << mbits) | ((r >> 12) & ((1u << mbits) - 1));
  return (unsigned char)(f->fnuz && code == 0x80 ? 0 : code); /* FNUZ: 0x80 is NaN */
}

/* A positive scale 2^-3 .. 2^3 with random mantissa bits (an fp32 value). */
static float gemm_fp8_scale(et_ctx *c) { return (float)ldexp(1.0 + et_uniform(c), (int)(et_rand(c) % 7) - 4); }

typedef struct {
  float *sa, *sb;
  long sa_n, sb_n;
  int rows[4]; /* scale_a_rows, scale_a_cols, scale_b_rows, scale_b_cols */
} gemm_scales_t;

/* Scale tensors of k's mode for an M x N x K problem. */
static void gemm_fp8_make_scales(const op_inst *k, et_ctx *c, long M, long N, long K, gemm_scales_t *s) {
  const long kb = K / GEMM_FP8_BLOCK, nb = (N + GEMM_FP8_BLOCK - 1) / GEMM_FP8_BLOCK;
  if (gemm_scale_is(k, "tensor")) s->sa_n = s->sb_n = 1;
  int rows = gemm_scale_is(k, "row");
  if (!gemm_scale_is(k, "tensor")) {
    s->sa_n = rows ? M : kb * M;
    s->sb_n = rows ? N : nb * kb;
    const int d[4] = {rows ? (int)M : (int)kb, rows ? 1 : (int)M, rows ? (int)N : (int)nb, rows ? 1 : (int)kb};
    memcpy(s->rows, d, sizeof d);
  }
  s->sa = malloc((size_t)s->sa_n * sizeof *s->sa);
  s->sb = malloc((size_t)s->sb_n * sizeof *s->sb);
  for (long i = 0; i < s->sa_n; i++) s->sa[i] = gemm_fp8_scale(c);
  for (long i = 0; i < s->sb_n; i++) s->sb[i] = gemm_fp8_scale(c);
}

/* The scales of A[m][q] and B[n][q]. */
static double gemm_fp8_sa(const op_inst *k, const gemm_scales_t *s, long M, long m, long q) {
  if (gemm_scale_is(k, "tensor")) return s->sa[0];
  if (gemm_scale_is(k, "row")) return s->sa[m];
  return s->sa[(q / GEMM_FP8_BLOCK) * M + m];
}
static double gemm_fp8_sb(const op_inst *k, const gemm_scales_t *s, long K, long n, long q) {
  if (gemm_scale_is(k, "tensor")) return s->sb[0];
  if (gemm_scale_is(k, "row")) return s->sb[n];
  return s->sb[(n / GEMM_FP8_BLOCK) * (K / GEMM_FP8_BLOCK) + q / GEMM_FP8_BLOCK];
}

static void gemm_fp8_set_scales(const op_inst *k, et_ctx *c, const gemm_scales_t *s) {
  void *sa = et_alloc(c, (size_t)s->sa_n * 4), *sb = et_alloc(c, (size_t)s->sb_n * 4);
  et_upload(c, sa, s->sa, (size_t)s->sa_n * 4);
  et_upload(c, sb, s->sb, (size_t)s->sb_n * 4);
  et_arg_ptr(c, "scale_a", sa);
  et_arg_ptr(c, "scale_b", sb);
  static const char *const dims[] = {"scale_a_rows", "scale_a_cols", "scale_b_rows", "scale_b_cols"};
  if (!gemm_scale_is(k, "tensor"))
    for (int i = 0; i < 4; i++) et_arg_int(c, dims[i], s->rows[i]);
}

/* fp8: C = dequantised A x dequantised B^T against fp64. Leading dimensions
   of A and B: K rounded up to 16 (16-byte rows: the fast loads), by chance 16
   more, or one in three K + 3 (the element-wise path); C's N + 5, poisoned
   (NaN) to catch stray writes. */
static int gemm_emu_run_fp8(const op_inst *k, const long *shape, et_ctx *c, double *err) {
  const gemm_fp8_fmt *f = gemm_fp8(k);
  long M = shape[op_param_index(k->op, "M")], N = shape[op_param_index(k->op, "N")],
       K = shape[op_param_index(k->op, "K")];
  const int f32 = !strcmp(op_val(k, "out"), "f32"), esz = f32 ? 4 : 2;
  const long k16 = (K + 15) / 16 * 16;
  const int odd = et_rand(c) % 3 == 0;
  long lda = odd ? K + 3 : k16 + (et_rand(c) % 2 ? 16 : 0), ldb = odd ? K + 3 : k16 + (et_rand(c) % 2 ? 16 : 0);
  long ldc = N + 5;
  unsigned char *hA = malloc((size_t)(M * lda)), *hB = malloc((size_t)(N * ldb));
  for (long i = 0; i < M * lda; i++) hA[i] = gemm_fp8_random(f, c);
  for (long i = 0; i < N * ldb; i++) hB[i] = gemm_fp8_random(f, c);
  gemm_scales_t sc = {0};
  gemm_fp8_make_scales(k, c, M, N, K, &sc);
  unsigned char *hC = malloc((size_t)(M * ldc * esz));
  void *A = et_alloc(c, (size_t)(M * lda)), *B = et_alloc(c, (size_t)(N * ldb)), *C = et_alloc(c, (size_t)(M * ldc * esz));
  memset(hC, 0xff, (size_t)(M * ldc * esz));
  et_upload(c, C, hC, (size_t)(M * ldc * esz));
  et_upload(c, A, hA, (size_t)(M * lda));
  et_upload(c, B, hB, (size_t)(N * ldb));
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
  gemm_fp8_set_scales(k, c, &sc);
  int rc = et_launch(c);
  if (rc == 0) {
    et_download(c, hC, C, (size_t)(M * ldc * esz));
    double *ref = malloc((size_t)(M * N) * sizeof *ref), *got = malloc((size_t)(M * N) * sizeof *got);
    /* the dequantised inputs, once: the reference is then a plain fp64 product */
    double *va = malloc((size_t)K * sizeof *va), *vb = malloc((size_t)(N * K) * sizeof *vb);
    for (long j = 0; j < N; j++)
      for (long q = 0; q < K; q++) vb[j * K + q] = gemm_fp8_value(f, hB[j * ldb + q]) * gemm_fp8_sb(k, &sc, K, j, q);
    int outside = 0;
    for (long i = 0; i < M; i++) {
      for (long q = 0; q < K; q++) va[q] = gemm_fp8_value(f, hA[i * lda + q]) * gemm_fp8_sa(k, &sc, M, i, q);
      for (long j = 0; j < N; j++) {
        double s = 0;
        for (long q = 0; q < K; q++) s += va[q] * vb[j * K + q];
        ref[i * N + j] = s;
        if (f32) {
          float v;
          memcpy(&v, hC + (i * ldc + j) * 4, 4);
          got[i * N + j] = v;
        } else {
          unsigned short v;
          memcpy(&v, hC + (i * ldc + j) * 2, 2);
          got[i * N + j] = et_from_bf16(v);
        }
      }
      for (long j = N * esz; j < ldc * esz; j++) outside |= hC[i * ldc * esz + j] != 0xff;
    }
    *err = outside ? INFINITY : et_rel_l2(ref, got, (size_t)(M * N));
    if (outside) et_note(c, "wrote C outside its N columns");
    free(ref);
    free(got);
    free(va);
    free(vb);
  }
  free(hA);
  free(hB);
  free(hC);
  free(sc.sa);
  free(sc.sb);
  return rc;
}

static int gemm_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
  if (gemm_fp8(k)) return gemm_emu_run_fp8(k, shape, c, err);
  long M = shape[op_param_index(k->op, "M")], N = shape[op_param_index(k->op, "N")],
       K = shape[op_param_index(k->op, "K")];
  int nt = !strcmp(op_val(k, "layout"), "nt");
  /* leading dimensions: padded or not; B's by 3 elements at random (rows
     that are not 16-byte aligned: the element-wise loads), except where its
     rows are a multiple of 8 elements long, which keep 16-byte alignment (by
     8) so that those shapes always take the fast path's buffer loads. C padded
     so that a write past column N shows up as a changed poison value */
  long brow = nt ? K : N;
  long lda = K + (et_rand(c) % 2 ? 8 : 0), ldb = brow + (et_rand(c) % 2 ? (brow % 8 ? 3 : 8) : 0);
  long ldc = N + 5, brows = nt ? N : K;
  if (et_dense(c)) lda = K, ldb = brow, ldc = N; /* timed: packed, as benchmarks are */
  unsigned short *hA = gemm_random(c, M, lda), *hB = gemm_random(c, brows, ldb);
  unsigned short *hC = malloc((size_t)(M * ldc) * 2);
  void *A = et_alloc(c, (size_t)(M * lda) * 2), *B = et_alloc(c, (size_t)(brows * ldb) * 2);
  void *C = et_alloc(c, (size_t)(M * ldc) * 2);
  et_upload(c, A, hA, (size_t)(M * lda) * 2);
  et_upload(c, B, hB, (size_t)(brows * ldb) * 2);
  gemm_emu_dev d = {A, B, C, lda, ldb, ldc, M, N, K};
  gemm_split_bufs sb = {0};
  int rc = 0;
  if (gemm_split(k) > 1) {
    gemm_split_alloc(k, c, M, N, &sb);
    rc = gemm_split_refused(c, k, &d, &sb);
  }
  gemm_emu_args(c, k, &d, &sb, sb.ws_bytes, sb.cnt_len);
  if (rc == 0) rc = et_launch(c);
  if (rc == 0 && gemm_split(k) > 1) rc = gemm_split_after(c, &sb);
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

static void gemm_tmap(op_arg *a, int *n, const char *name, const char *tensor, const char *inner,
                      const char *outer, const char *ld, int box_inner, int box_outer) {
  const char *const dims[] = {inner, outer}, *const strides[] = {ld};
  const int box[] = {box_inner, box_outer};
  op_tmap t = op_tmap_make(tensor, 2, dims, strides, box, 128);
  op_arg_tmap(a, n, name, &t);
}

/* wgmma: 128 x 256 tiles measured fastest on the H200 (docs/PERF.md). CDNA3
   and CDNA4: 256 x 256 (8 waves of 128 x 64, as HipKittens); gfx90a keeps
   128 x 128. */
static const char *gemm_target_default(const op_inst *k, const char *param) {
  /* fp8 block scales: two accumulators, so 128 x 128 tiles (sm_90a:
     gemm_check_fp8; AMD: 256-row tiles spill at 2 waves per SIMD) */
  if (gemm_fp8(k) && gemm_scale_is(k, "block") && (!strcmp(param, "tile_n") || !strcmp(param, "tile_m")))
    return "128";
  /* sm_90a fp8: persistent blocks storing C by bulk tensor stores (bf16),
     registers handed to the consumers and, with block scales, the next
     k-tile's wgmma overlapping the promotion: the fastest structure measured
     (docs/PERF.md "gemm fp8"); parameters earlier in the table (tile_m,
     out, maxnreg) are already the kernel's here */
  if (gemm_fp8(k) && gemm_is_wgmma(k)) {
    const int tm128 = op_int(k, "tile_m") == 128;
    if (!strcmp(param, "persistent")) return "true";
    if (!strcmp(param, "epilogue")) return !strcmp(op_val(k, "out"), "bf16") ? "tma" : NULL;
    if (!strcmp(param, "maxnreg")) return tm128 ? "true" : NULL;
    if (!strcmp(param, "promote"))
      return gemm_scale_is(k, "block") && tm128 && op_int(k, "maxnreg") ? "overlap" : NULL;
  }
  /* sm_90a bf16: C by bulk tensor stores wherever a block writes whole
     tiles (2-10% faster than stores from registers at every shape measured,
     most at short K), and 128-row tiles persistent (the next tile's stages
     load while C goes out: 8192x8192x1024 1.06 of cuBLAS against 0.92 a
     block per tile; docs/PERF.md "gemm") */
  const int whole = gemm_split(k) == 1 && !op_int(k, "stream_k");
  if (gemm_is_wgmma(k) && !strcmp(param, "epilogue")) return whole ? "tma" : NULL;
  if (gemm_is_wgmma(k) && !strcmp(param, "persistent"))
    return whole && op_int(k, "tile_m") == 128 ? "true" : NULL;
  if (gemm_is_wgmma(k)) return !strcmp(param, "tile_n") ? "256" : NULL;
  if (strcmp(k->target, "gfx942") && strcmp(k->target, "gfx950")) return NULL;
  return !strcmp(param, "tile_m") || !strcmp(param, "tile_n") ? "256" : NULL;
}

/* The estimate's work: 2MNK useful FLOPs; the matrix cores also compute
   the padding of the last tile row and column; A, B read and C written
   once (gemm_work_formula: the same as formulas). */
static int gemm_work(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n) {
  (void)msg;
  (void)n;
  double M = (double)shape[op_param_index(k->op, "M")], N = (double)shape[op_param_index(k->op, "N")],
         K = (double)shape[op_param_index(k->op, "K")];
  double tm = (double)op_int(k, "tile_m"), tn = (double)op_int(k, "tile_n");
  w->flops = 2 * M * N * K;
  w->mma_flops = 2 * ceil(M / tm) * tm * ceil(N / tn) * tn * K;
  const double esz = gemm_fp8(k) ? 1 : 2, csz = !strcmp(op_val(k, "out"), "f32") ? 4 : 2;
  w->bytes = esz * (M * K + N * K) + csz * M * N;
  w->trips = 0;
  return 0;
}

/* gemm_work's matrix FLOPs and bytes as formulas, for the AMD cost. */
static void gemm_work_formula(const op_inst *k, char *mma_flops, char *bytes) {
  const char *M = op_term(k, "M"), *N = op_term(k, "N"), *K = op_term(k, "K");
  const char *tm = op_val(k, "tile_m"), *tn = op_val(k, "tile_n");
  op_formula(mma_flops, "2*cdiv(%s,%s)*%s*cdiv(%s,%s)*%s*%s", M, tm, tm, N, tn, tn, K);
  op_formula(bytes, "%d*(%s*%s+%s*%s)+%d*%s*%s", gemm_fp8(k) ? 1 : 2, M, K, N, K,
             !strcmp(op_val(k, "out"), "f32") ? 4 : 2, M, N);
}

const op_desc op_gemm = {
    .name = "gemm",
    .doc = "bf16 or scaled fp8 GEMM with fp32 accumulation: C[M][N] = A[M][K] x B (B^T for layout nt)",
    .skeleton = "gemm.hip.m4",
    .skeleton_of = gemm_skeleton_of,
    .params = gemm_params,
    .nparams = (int)(sizeof gemm_params / sizeof gemm_params[0]),
    .check = gemm_check,
    .tuning = gemm_tuning,
    .features = gemm_features,
    .omissible = gemm_omissible,
    .plan = gemm_plan,
    .emu_shapes = gemm_emu_shapes,
    .emu_run = gemm_emu_run,
    .target_default = gemm_target_default,
    .work = gemm_work,
    .work_formula = gemm_work_formula,
    .bench_shape = "M=4096,N=4096,K=4096",
};
