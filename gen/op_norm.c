/* op_norm.c: RMSNorm and LayerNorm (one op, `kind'), fused with dropout and
   the residual add: s = dropout(x) + residual, y = norm(s) * weight (+ bias);
   forward, backward and the backward's deterministic row reduction (`phase').
   bf16 tensors, fp32 statistics. Skeleton: templates/norm.hip.m4. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emutest.h"
#include "op.h"
#include "target.h"

static const char *const norm_kinds[] = {"rmsnorm", "layernorm", NULL};
static const char *const norm_phases[] = {"fwd", "bwd", "bwd_reduce", NULL};
static const char *const norm_wtypes[] = {"bf16", "fp32", NULL};
static const char *const norm_threads[] = {"128", "256", "512", "1024", NULL};
static const char *const norm_reduces[] = {"lds", "shfl", NULL};
static const char *const norm_statses[] = {"twopass", "welford", "shifted", NULL};
static const char *const norm_accs[] = {"regs", "lds", NULL};
static const char *const norm_rpbs[] = {"1", "2", "4", NULL};
static const char *const norm_hintses[] = {"none", "ld", "st", "all", NULL};
static const char *const norm_partses[] = {"132", "264", "396", "512", "528", NULL};
static const char *const norm_redcolses[] = {"8", "16", "32", "64", NULL};
static const char *const norm_vecs[] = {"both", "only", NULL};
static const char *const norm_occs[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "10", "12", "16", NULL};

#define NORM_MAX_HIDDEN (1L << 20)

static const op_param norm_params[] = {
    {"kind", OP_ENUM, norm_kinds, 0, 0, "rmsnorm", 0, "", "rmsnorm: s * rstd * w; layernorm: (s - mean) * rstd * w + b"},
    {"phase", OP_ENUM, norm_phases, 0, 0, "fwd", 0, "",
     "fwd: y, s, rstd (mean); bwd: dx (d_residual) and per-block dweight/dbias partials; bwd_reduce: "
     "their sum"},
    {"weight_dtype", OP_ENUM, norm_wtypes, 0, 0, "bf16", 0, "w", "element type of weight and bias"},
    {"residual", OP_BOOL, NULL, 0, 0, "true", 0, "res", "add a residual: s = dropout(x) + residual"},
    {"dropout", OP_FLOAT, NULL, 0, 0, "0", 0, "dp",
     "probability of dropping an element of x, below 1 (left out: no dropout); Philox mask from seed, offset"},
    {"eps", OP_FLOAT, NULL, 0, 0, "1e-5", 0, "eps", "added to the variance (mean square) before the root"},
    {"rows", OP_INT, NULL, 1, 2147483647L, OP_ANY, 1, "r", "rows (tokens) per launch"},
    {"hidden", OP_INT, NULL, 1, NORM_MAX_HIDDEN, OP_ANY, 1, "h", "elements per row (any size)"},
    {"threads", OP_ENUM, norm_threads, 0, 0, "256", 0, "t",
     "threads per row (fwd) or per block of rows (bwd); default by target, phase and hidden (norm_target_default)"},
    {"reduce", OP_ENUM, norm_reduces, 0, 0, "lds", 0, "rd",
     "block sums: lds (two LDS stages, two barriers) or shfl (warp shuffles, one barrier; not on AMD)"},
    {"prefetch", OP_BOOL, NULL, 0, 0, "false", 0, "pf",
     "load weight (and bias) with the row, before the statistics, instead of after (registers for latency)"},
    {"batch", OP_BOOL, NULL, 0, 0, "false", 0, "bt",
     "forward: issue the loads of all held units before the first store (one memory round trip, not one a "
     "unit: a store may alias a later load, so the compiler keeps them in order)"},
    {"wbatch", OP_BOOL, NULL, 0, 0, "false", 0, "wb",
     "forward: the weights of all held units loaded before the first y store (batch implies it)"},
    {"l2prefetch", OP_BOOL, NULL, 0, 0, "false", 0, "l2",
     "forward without prefetch: ask for the row's weights in L2 with its loads (no registers; a no-op on AMD)"},
    {"pack", OP_BOOL, NULL, 0, 0, "false", 0, "pk",
     "hold s (forward) and bf16 weights in registers as bf16 pairs (half the registers, more instructions)"},
    {"occupancy", OP_ENUM, norm_occs, 0, 0, "0", 0, "oc",
     "sm_90a: blocks per SM the registers are limited for (0: the compiler's choice; AMD ignores it)"},
    {"pipeline", OP_BOOL, NULL, 0, 0, "false", 0, "pp",
     "backward: load the next row (s, dy, its statistics) before this row's sums (needs prefetch)"},
    {"rpb", OP_ENUM, norm_rpbs, 0, 0, "1", 0, "rp",
     "forward: rows a block (grid cdiv(rows, rpb)); above 1, every load of the rows first, s stored with y, "
     "the weights loaded once for the rows (a baked hidden the registers hold; layernorm with stats: shifted)"},
    {"slate", OP_BOOL, NULL, 0, 0, "false", 0, "sl",
     "forward: store the held units' s with y, after the sums, instead of as soon as it is made (no store "
     "before the row's last load: every load of a thread goes out at once, no registers for raw copies)"},
    {"acc", OP_ENUM, norm_accs, 0, 0, "regs", 0, "acc",
     "backward: the block's partial dweight / dbias in registers or in LDS (baked hidden, LDS permitting)"},
    {"stats", OP_ENUM, norm_statses, 0, 0, "twopass", 0, "st",
     "layernorm statistics: twopass (mean, then squared deviations), welford (one pass, Chan's merge; shfl) or "
     "shifted (sums of s - s[0] and their squares, one block sum)"},
    {"hints", OP_ENUM, norm_hintses, 0, 0, "none", 0, "hn",
     "cache hints: the row's streamed inputs (x, residual; s, dy, ds_in) read evict-first (ld), its outputs (y, s; "
     "dx, d_residual) stored evict-first (st), both (all); plain accesses on AMD"},
    {"parts", OP_ENUM, norm_partses, 0, 0, "512", 0, "pt",
     "backward: blocks (partial rows of dweight / dbias) at most; bwd_reduce must have the same; a fixed number, "
     "so dweight is the same bits on every device"},
    {"vec", OP_ENUM, norm_vecs, 0, 0, "both", 0, "v",
     "forward: both (16-byte accesses when hidden % 8 == 0 and every bf16 tensor is 16-byte aligned, element "
     "accesses otherwise, picked at run time) or only (the 16-byte path alone: fewer registers; a baked hidden "
     "% 8 == 0, and libhkrt refuses a bf16 tensor that is not 16-byte aligned, naming it)"},
    {"red_cols", OP_ENUM, norm_redcolses, 0, 0, "32", 0, "rc",
     "bwd_reduce: columns a block sums (256 / red_cols groups of partial rows a column)"},
};

_Static_assert(sizeof norm_params / sizeof norm_params[0] <= OP_MAX_PARAMS, "norm: raise OP_MAX_PARAMS");

static const char *const norm_tuning[] = {"threads", "reduce", "prefetch", "batch", "wbatch", "l2prefetch", "pack",
                                          "occupancy", "pipeline", "acc", "stats", "hints", "red_cols", "parts", "slate",
                                          "rpb", "vec", NULL};

/* Threads of the reduction kernel: fixed; the partial rows of the backward
   (parts) are a parameter, not per device, so that dweight is the same bits
   on every device of a target too. */
#define NORM_T_RED 256

static int norm_is(const op_inst *k, const char *param, const char *v) { return !strcmp(op_val(k, param), v); }
static int norm_ln(const op_inst *k) { return norm_is(k, "kind", "layernorm"); }
static int norm_drop(const op_inst *k) { return strtod(op_val(k, "dropout"), NULL) > 0; }
static int norm_res(const op_inst *k) { return (int)op_int(k, "residual"); }

static int norm_shfl(const op_inst *k) { return norm_is(k, "reduce", "shfl"); }
static int norm_vec_only(const op_inst *k) { return norm_is(k, "vec", "only"); }
static long norm_parts(const op_inst *k) { return op_int(k, "parts"); }
static int norm_hint(const op_inst *k, const char *which) {
  return norm_is(k, "hints", which) || norm_is(k, "hints", "all");
}

/* Bytes of LDS the backward keeps its partial sums in (acc: lds): dweight's
   row, and dbias's for layernorm. */
static long norm_acc_bytes(const op_inst *k) {
  if (!norm_is(k, "acc", "lds") || !norm_is(k, "phase", "bwd") || op_is_any(k, "hidden")) return 0;
  return 4 * op_int(k, "hidden") * (norm_ln(k) ? 2 : 1);
}

/* Static LDS a workgroup may have besides the sums' scratch: 48 KiB on sm_90a
   (more needs dynamic shared memory), 64 KiB on AMD. */
#define NORM_ACC_MAX_SM90 (46L * 1024)
#define NORM_ACC_MAX_AMD (60L * 1024)

static int norm_check(const op_inst *k, char *msg, size_t n) {
  double p = strtod(op_val(k, "dropout"), NULL);
  if (!(p < 1)) {
    snprintf(msg, n, "dropout must be below 1 (got %s): it is the probability of dropping an element",
             op_val(k, "dropout"));
    return -1;
  }
  if (norm_shfl(k) && tgt_name_has(k->target, TGT_AMD)) {
    snprintf(msg, n, "reduce: shfl needs the warp shuffle of hk_sm90.h, which target %s lacks (allowed "
             "there: lds)", k->target);
    return -1;
  }
  if (norm_is(k, "acc", "lds") && norm_is(k, "phase", "bwd")) {
    long max = tgt_name_has(k->target, TGT_AMD) ? NORM_ACC_MAX_AMD : NORM_ACC_MAX_SM90;
    if (op_is_any(k, "hidden")) {
      snprintf(msg, n, "acc: lds sizes its LDS by a baked hidden (allowed with hidden: any: acc: regs)");
      return -1;
    }
    if (norm_acc_bytes(k) > max) {
      snprintf(msg, n, "acc: lds needs %ld bytes of LDS for hidden %s, more than the %ld it may take on %s "
               "(allowed: acc: regs)", norm_acc_bytes(k), op_val(k, "hidden"), max, k->target);
      return -1;
    }
  }
  int fwd = norm_is(k, "phase", "fwd");
  if (norm_vec_only(k) && (!fwd || op_is_any(k, "hidden") || op_int(k, "hidden") % 8)) {
    snprintf(msg, n, "vec: only is the forward's 16-byte path alone and needs phase fwd with a baked hidden that "
             "is a multiple of 8 (allowed otherwise: vec: both)");
    return -1;
  }
  if (op_int(k, "pipeline") && !op_int(k, "prefetch")) {
    snprintf(msg, n, "pipeline: true loads the next row's inputs early and needs prefetch: true");
    return -1;
  }
  if (fwd && op_int(k, "rpb") > 1) {
    long rpb = op_int(k, "rpb"), t = op_int(k, "threads");
    if (op_is_any(k, "hidden") || ((op_int(k, "hidden") + 7) / 8 + t - 1) / t > 8) {
      snprintf(msg, n, "rpb: %ld holds every unit of its rows in registers and needs a baked hidden of at most "
               "%ld at %ld threads (allowed otherwise: rpb: 1)", rpb, 64 * t, t);
      return -1;
    }
    if (norm_ln(k) && !norm_is(k, "stats", "shifted")) {
      snprintf(msg, n, "rpb: %ld layernorm takes its statistics in one block sum and needs stats: shifted", rpb);
      return -1;
    }
  }
  if (norm_is(k, "stats", "welford") && !norm_shfl(k)) {
    snprintf(msg, n, "stats: welford merges in warp shuffles and needs reduce: shfl (allowed with reduce: "
             "lds: twopass, shifted)");
    return -1;
  }
  return 0;
}

/* sm_90a, measured on the H200 (docs/PERF.md's norm section): warp
   shuffles, s and bf16 weights held packed, shifted LayerNorm sums, weights
   loaded after the sums (forward); the backward holds its weights and, where
   a baked hidden fits, keeps its partial sums in LDS, at two blocks an SM up
   to hidden 4096 (plain bf16 kernels: more registers spill there), in 264
   partial rows summed 16 columns a block. AMD keeps the LDS sums, two-pass
   statistics (its emulator has no general lane shuffle) and 512 partial rows;
   both take 512 threads for the backward. */
static const char *norm_target_default(const op_inst *k, const char *param) {
  int fwd = norm_is(k, "phase", "fwd"), rt = op_is_any(k, "hidden");
  if (!strcmp(param, "threads")) return fwd ? NULL : "512";
  /* the forward's 16-byte path alone where a baked hidden allows it: H200 RMSNorm 4096, 32 registers against
     40; gfx942 / gfx950 LayerNorm 8192, 64 / 70 VGPRs against 96 (7-8 waves a SIMD against 5) */
  if (!strcmp(param, "vec")) return fwd && !rt && op_int(k, "hidden") % 8 == 0 ? "only" : NULL;
  if (tgt_name_has(k->target, TGT_AMD)) return NULL;
  long bytes = rt ? 0 : 4 * op_int(k, "hidden") * (norm_ln(k) ? 2 : 1);
  int acc = !fwd && !rt && bytes <= NORM_ACC_MAX_SM90;
  int plain = norm_is(k, "weight_dtype", "bf16") && !norm_drop(k);
  if (!strcmp(param, "reduce")) return "shfl";
  /* 264 partial rows: one wave of two backward blocks an SM on 132 SMs; the reduction over
     16 columns a block (256 blocks at hidden 4096) */
  if (!strcmp(param, "parts")) return "264";
  if (!strcmp(param, "red_cols")) return "16";
  if (!strcmp(param, "pack")) return "true";
  if (!strcmp(param, "stats")) return "shifted";
  if (!strcmp(param, "prefetch")) return !fwd && !rt ? "true" : NULL;
  if (!strcmp(param, "acc")) return acc ? "lds" : NULL;
  if (!strcmp(param, "occupancy")) return acc && plain && op_int(k, "hidden") <= 4096 ? "2" : NULL;
  return NULL;
}

static const char *norm_wptr(const op_inst *k, int is_const) {
  int f32 = norm_is(k, "weight_dtype", "fp32");
  return is_const ? (f32 ? "const float *" : "const hk_bf16 *") : (f32 ? "float *" : "hk_bf16 *");
}

static void norm_args_tail(const op_inst *k, op_plan *p) {
  if (norm_drop(k) && !norm_is(k, "phase", "bwd_reduce")) {
    op_arg_add(p->args, &p->nargs, "long", "seed");
    op_arg_add(p->args, &p->nargs, "long", "offset");
  }
  if (op_is_any(k, "rows")) op_arg_add(p->args, &p->nargs, "int", "rows");
  if (op_is_any(k, "hidden")) op_arg_add(p->args, &p->nargs, "int", "hidden");
}

static void norm_args_fwd(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  op_arg_add(a, n, "const hk_bf16 *", "x");
  if (norm_res(k)) op_arg_add(a, n, "const hk_bf16 *", "residual");
  op_arg_add(a, n, norm_wptr(k, 1), "weight");
  if (norm_ln(k)) op_arg_add(a, n, norm_wptr(k, 1), "bias");
  op_arg_add(a, n, "hk_bf16 *", "y");
  if (norm_res(k) || norm_drop(k)) op_arg_add(a, n, "hk_bf16 *", "s_out");
  op_arg_add(a, n, "float *", "rstd");
  if (norm_ln(k)) op_arg_add(a, n, "float *", "mean");
  /* vec: only, 16-byte accesses alone: every bf16 tensor 16-byte aligned (fp32 weights are read by element) */
  for (int i = 0; norm_vec_only(k) && i < *n; i++)
    if (strstr(a[i].ctype, "hk_bf16 *")) a[i].ptr_align = 16;
}

static void norm_args_bwd(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  op_arg_add(a, n, "const hk_bf16 *", "dy");
  op_arg_add(a, n, "const hk_bf16 *", "s");
  op_arg_add(a, n, norm_wptr(k, 1), "weight");
  op_arg_add(a, n, "const float *", "rstd");
  if (norm_ln(k)) op_arg_add(a, n, "const float *", "mean");
  if (norm_res(k)) op_arg_add(a, n, "const hk_bf16 *", "ds_in");
  op_arg_add(a, n, "hk_bf16 *", "dx");
  if (norm_res(k) && norm_drop(k)) op_arg_add(a, n, "hk_bf16 *", "dres");
  op_arg_add(a, n, "float *", "dw_part");
  if (norm_ln(k)) op_arg_add(a, n, "float *", "db_part");
}

static void norm_args_reduce(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  op_arg_add(a, n, "const float *", "dw_part");
  if (norm_ln(k)) op_arg_add(a, n, "const float *", "db_part");
  op_arg_add(a, n, "float *", "dweight");
  if (norm_ln(k)) op_arg_add(a, n, "float *", "dbias");
}

/* Units of 8 elements a thread keeps in registers: all of a baked row up
   to the cap (8 forward, 2 backward: the backward holds four arrays), else
   the cap (hidden 8192 in registers either way). */
static long norm_units(const op_inst *k, int threads, long cap) {
  if (op_is_any(k, "hidden")) return cap;
  long u = ((op_int(k, "hidden") + 7) / 8 + threads - 1) / threads;
  return u < cap ? u : cap;
}

/* Selection's cost of an sm_90a forward (op_plan.cost, ns on an H200), for a
   catalogue that holds a row's kernel at 256 and at 512 threads (a spec's
   `threads: [256, 512]`): a fixed time, then the row's bytes at a rate.
   Measured 2026-12-03 10:40 (docs/PERF.md), hidden 4096, 1-16384 rows: 512
   threads take 5.2-7.4 us up to 256 rows against 6.0-8.3 for 256, whose more
   blocks an SM win from 1024 rows on (LayerNorm 14.2 against 15.3 us; 16384
   rows 132.6-133.4 against 134.4-139.6): the rates put the crossing near 570
   rows. Other thread counts were not measured and get no cost. */
static const struct {
  int threads, fixed_ns, b_per_ns;
} norm_h200_fwd[] = {{256, 6000, 4250}, {512, 5200, 3600}};

static void norm_plan_cost(const op_inst *k, op_plan *p) {
  if (tgt_name_has(k->target, TGT_AMD) || !norm_is(k, "phase", "fwd") || op_int(k, "rpb") > 1) return;
  long t = op_int(k, "threads"), elem = 2 * (2 + 2 * (norm_res(k) || norm_drop(k)));
  for (size_t i = 0; i < sizeof norm_h200_fwd / sizeof norm_h200_fwd[0]; i++)
    if (norm_h200_fwd[i].threads == t)
      op_formula(p->cost, "%d+%s*%s*%ld/%d", norm_h200_fwd[i].fixed_ns, op_term(k, "rows"), op_term(k, "hidden"), elem,
                 norm_h200_fwd[i].b_per_ns);
}

static void norm_plan(const op_inst *k, op_plan *p) {
  const char *rows = op_term(k, "rows"), *hidden = op_term(k, "hidden");
  int t = (int)op_int(k, "threads");
  if (norm_is(k, "phase", "fwd")) {
    p->block = t;
    op_plan_tune(p, "units", norm_units(k, t, op_is_any(k, "hidden") ? 4 * 256 / t : 8));
    long rpb = op_int(k, "rpb");
    if (rpb > 1)
      snprintf(p->grid[0], OP_FORMULA, "cdiv(%s, %ld)", rows, rpb);
    else
      snprintf(p->grid[0], OP_FORMULA, "%s", rows);
    norm_args_fwd(k, p);
  } else if (norm_is(k, "phase", "bwd")) {
    p->block = t;
    op_plan_tune(p, "units", norm_units(k, t, 2 * 512 / t > 1 ? 2 * 512 / t : 1));
    snprintf(p->grid[0], OP_FORMULA, "min(%s, %ld)", rows, norm_parts(k));
    norm_args_bwd(k, p);
  } else {
    p->block = NORM_T_RED;
    op_plan_tune(p, "units", 1);
    snprintf(p->grid[0], OP_FORMULA, "cdiv(%s, %ld)", hidden, op_int(k, "red_cols"));
    norm_args_reduce(k, p);
  }
  op_plan_tune(p, "parts", norm_parts(k));
  op_plan_tune(p, "red_cols", op_int(k, "red_cols"));
  op_plan_tune(p, "hints", norm_hint(k, "ld") + 2 * norm_hint(k, "st")); /* bit 0 loads, bit 1 stores */
  op_plan_tune(p, "shfl", norm_shfl(k));
  op_plan_tune(p, "prefetch", op_int(k, "prefetch"));
  op_plan_tune(p, "pack", op_int(k, "pack"));
  op_plan_tune(p, "batch", op_int(k, "batch"));
  op_plan_tune(p, "l2prefetch", op_int(k, "l2prefetch"));
  op_plan_tune(p, "wbatch", op_int(k, "wbatch"));
  op_plan_tune(p, "occupancy", op_int(k, "occupancy"));
  op_plan_tune(p, "slate", op_int(k, "slate"));
  op_plan_tune(p, "vec_only", norm_vec_only(k));
  op_plan_tune(p, "rpb", norm_is(k, "phase", "fwd") ? op_int(k, "rpb") : 1);
  op_plan_tune(p, "pipeline", op_int(k, "pipeline"));
  op_plan_tune(p, "acc_bytes", norm_acc_bytes(k));
  op_plan_tune(p, "welford", norm_is(k, "stats", "welford"));
  op_plan_tune(p, "shifted", norm_is(k, "stats", "shifted"));
  norm_plan_cost(k, p);
  norm_args_tail(k, p);
}

/* ---- `hkgen test` ------------------------------------------------------------ */

/* Rows past parts (at most 528) and a row past the registers: backward blocks add
   two rows into their scratch row (backward kernels only). */
#define NORM_MANY_ROWS 601

/* RMSNorm's gradient at hidden 1 is rstd * g * eps / (s^2 + eps): all
   cancellation, no test of the kernel. */
static int norm_shape_ok(const op_inst *k, const long *shape) {
  int bwd = norm_is(k, "phase", "bwd");
  if (shape[op_param_index(k->op, "rows")] == NORM_MANY_ROWS) return bwd;
  return !(bwd && !norm_ln(k) && shape[op_param_index(k->op, "hidden")] == 1);
}

/* Odd and round hidden sizes, tails of 1..7, rows past one register pass
   (9000 > 4 x 256 x 8 forward and 2 x 512 x 8 backward), rows that share a
   backward block (600 > parts, with a small hidden; NORM_MANY_ROWS). */
static int norm_emu_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const char *const dims[] = {"rows", "hidden"};
  static const long cases[][2] = {{3, 1000}, {2, 4097}, {2, 5120}, {2, 8192}, {5, 1},  {7, 7},
                                  {4, 64},   {1, 300},  {2, 9000}, {600, 24}, {9, 136}, {NORM_MANY_ROWS, 8200}};
  return et_shapes_from_cases(k, dims, 2, &cases[0][0], (int)(sizeof cases / sizeof cases[0]), norm_shape_ok,
                              out, max);
}

/* Philox 4x32-10, as the template's norm_philox. */
static void norm_philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[1] = (uint32_t)p1;
    c[3] = (uint32_t)p0;
    c[0] = n0;
    c[2] = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

/* The dropout factor of element (row, col): 0 or 1 / (1 - p). */
static double norm_keep(long row, long col, double p, uint64_t seed, uint64_t offset) {
  if (p <= 0) return 1;
  uint32_t c[4] = {(uint32_t)(col / 4), (uint32_t)row, (uint32_t)offset, (uint32_t)(offset >> 32)};
  norm_philox(c, (uint32_t)seed, (uint32_t)(seed >> 32));
  uint32_t thr = (uint32_t)(p * 4294967296.0);
  return c[col % 4] >= thr ? (double)(float)(1.0 / (1.0 - p)) : 0;
}

/* One run's host data and device buffers. */
typedef struct {
  long R, H;
  int ln, res, f32w;
  double p, eps;
  uint64_t seed, offset;
  et_ctx *c;
  double worst;
  int misalign; /* the first bf16 input 2 bytes off 16: the element path at hidden % 8 == 0 */
  long parts;   /* the backward's partial rows at most */
} norm_run;

/* A bf16 tensor of n random elements, uploaded; host copy in *host. */
static void *norm_bf16_in(norm_run *r, size_t n, double scale, unsigned short **host) {
  unsigned short *h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) h[i] = et_to_bf16(scale * et_uniform(r->c));
  int off = r->misalign ? 1 : 0;
  r->misalign = 0;
  unsigned short *d = (unsigned short *)et_alloc(r->c, (n + 1) * 2) + off;
  et_upload(r->c, d, h, n * 2);
  *host = h;
  return d;
}

/* A weight-like vector (bf16 or fp32 as the kernel takes it) of values
   around `center'; the values as the kernel sees them in w. */
static void *norm_weight_in(norm_run *r, double center, double *w) {
  size_t n = (size_t)r->H;
  void *d = et_alloc(r->c, n * (r->f32w ? 4 : 2));
  if (r->f32w) {
    float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++) w[i] = h[i] = (float)(center + 0.5 * et_uniform(r->c));
    et_upload(r->c, d, h, n * 4);
    free(h);
  } else {
    unsigned short *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) w[i] = et_from_bf16(h[i] = et_to_bf16(center + 0.5 * et_uniform(r->c)));
    et_upload(r->c, d, h, n * 2);
    free(h);
  }
  return d;
}

/* Downloads n bf16 (or fp32) values and records their relative error. */
static void norm_cmp(norm_run *r, const void *dev, int f32, const double *ref, size_t n, const char *what) {
  double *got = malloc(n * sizeof *got);
  void *h = malloc(n * 4);
  et_download(r->c, h, dev, n * (f32 ? 4 : 2));
  for (size_t i = 0; i < n; i++) got[i] = f32 ? ((float *)h)[i] : et_from_bf16(((unsigned short *)h)[i]);
  double e = et_rel_l2(ref, got, n);
  if (e > r->worst) {
    r->worst = e;
    et_note(r->c, "worst: %s", what);
  }
  free(got);
  free(h);
}

/* fp64 statistics of row s[0..H): mean (0 for rmsnorm) and rstd. */
static void norm_ref_stats(const norm_run *r, const double *s, double *mean, double *rstd) {
  double m = 0, v = 0;
  for (long j = 0; j < r->H; j++) m += s[j];
  m = r->ln ? m / (double)r->H : 0;
  for (long j = 0; j < r->H; j++) v += (s[j] - m) * (s[j] - m);
  *mean = m;
  *rstd = 1 / sqrt(v / (double)r->H + r->eps);
}

static void norm_set_common(norm_run *r) {
  if (r->p > 0) {
    et_arg_int(r->c, "seed", (long)r->seed);
    et_arg_int(r->c, "offset", (long)r->offset);
  }
}

static void norm_set_dims(const op_inst *k, norm_run *r) {
  if (op_is_any(k, "rows")) et_arg_int(r->c, "rows", r->R);
  if (op_is_any(k, "hidden")) et_arg_int(r->c, "hidden", r->H);
}

/* s (bf16, as the kernel makes it) of the forward: dropout(x) + residual. */
static void norm_ref_s(const norm_run *r, const unsigned short *x, const unsigned short *res, double *s) {
  for (long i = 0; i < r->R; i++)
    for (long j = 0; j < r->H; j++) {
      size_t e = (size_t)(i * r->H + j);
      double v = (double)(float)(et_from_bf16(x[e]) * norm_keep(i, j, r->p, r->seed, r->offset));
      if (r->res) v += et_from_bf16(res[e]);
      s[e] = et_from_bf16(et_to_bf16(v));
    }
}

/* Mask check: an element dropped by one side only shows as a whole x value. */
static int norm_mask_ok(norm_run *r, const void *s_dev, const double *s_ref) {
  size_t n = (size_t)(r->R * r->H);
  unsigned short *h = malloc(n * 2);
  et_download(r->c, h, s_dev, n * 2);
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    double g = et_from_bf16(h[i]);
    bad += !(fabs(g - s_ref[i]) <= 0x1p-7 * fabs(s_ref[i]) + 1e-30);
  }
  free(h);
  if (bad) et_note(r->c, "%ld of %zu elements of s differ by more than a bf16 ulp (dropout mask?)", bad, n);
  return bad == 0;
}

static int norm_emu_fwd(const op_inst *k, norm_run *r) {
  size_t n = (size_t)(r->R * r->H), H = (size_t)r->H;
  unsigned short *hx, *hr = NULL;
  double *w = malloc(H * sizeof *w), *b = malloc(H * sizeof *b), *s = malloc(n * sizeof *s);
  double *y = malloc(n * sizeof *y), *rs = malloc((size_t)r->R * sizeof *rs), *mu = malloc((size_t)r->R * sizeof *mu);
  et_arg_ptr(r->c, "x", norm_bf16_in(r, n, 2, &hx));
  if (r->res) et_arg_ptr(r->c, "residual", norm_bf16_in(r, n, 1, &hr));
  et_arg_ptr(r->c, "weight", norm_weight_in(r, 1, w));
  if (r->ln) et_arg_ptr(r->c, "bias", norm_weight_in(r, 0, b));
  void *dy = et_alloc(r->c, n * 2), *ds = NULL, *drs = et_alloc(r->c, (size_t)r->R * 4), *dmu = NULL;
  et_arg_ptr(r->c, "y", dy);
  if (r->res || r->p > 0) et_arg_ptr(r->c, "s_out", ds = et_alloc(r->c, n * 2));
  et_arg_ptr(r->c, "rstd", drs);
  if (r->ln) et_arg_ptr(r->c, "mean", dmu = et_alloc(r->c, (size_t)r->R * 4));
  norm_set_common(r);
  norm_set_dims(k, r);
  int rc = et_launch(r->c);
  if (rc == 0) {
    norm_ref_s(r, hx, hr, s);
    for (long i = 0; i < r->R; i++) {
      norm_ref_stats(r, s + i * r->H, &mu[i], &rs[i]);
      for (long j = 0; j < r->H; j++)
        y[i * r->H + j] = (s[i * r->H + j] - mu[i]) * rs[i] * w[j] + (r->ln ? b[j] : 0);
    }
    norm_cmp(r, dy, 0, y, n, "y");
    norm_cmp(r, drs, 1, rs, (size_t)r->R, "rstd");
    if (dmu) norm_cmp(r, dmu, 1, mu, (size_t)r->R, "mean");
    if (ds) {
      norm_cmp(r, ds, 0, s, n, "s");
      if (!norm_mask_ok(r, ds, s)) r->worst = INFINITY;
    }
  }
  free(hx);
  free(hr);
  free(w);
  free(b);
  free(s);
  free(y);
  free(rs);
  free(mu);
  return rc;
}

/* Host inputs of the backward: s, dy, the gradient of the emitted s, the
   statistics of s (as fp32, the forward's output type). */
typedef struct {
  unsigned short *s, *dy, *dsin;
  double *w, *mean, *rstd;
} norm_bwd_in;

static void norm_bwd_inputs(const op_inst *k, norm_run *r, norm_bwd_in *in) {
  size_t n = (size_t)(r->R * r->H);
  in->w = malloc((size_t)r->H * sizeof *in->w);
  in->mean = calloc((size_t)r->R, sizeof *in->mean);
  in->rstd = malloc((size_t)r->R * sizeof *in->rstd);
  in->dsin = NULL;
  et_arg_ptr(r->c, "dy", norm_bf16_in(r, n, 1, &in->dy));
  et_arg_ptr(r->c, "s", norm_bf16_in(r, n, 2, &in->s));
  et_arg_ptr(r->c, "weight", norm_weight_in(r, 1, in->w));
  if (r->res) et_arg_ptr(r->c, "ds_in", norm_bf16_in(r, n, 0.5, &in->dsin));
  float *fm = malloc((size_t)r->R * 4), *fr = malloc((size_t)r->R * 4);
  double *row = malloc((size_t)r->H * sizeof *row);
  for (long i = 0; i < r->R; i++) {
    for (long j = 0; j < r->H; j++) row[j] = et_from_bf16(in->s[i * r->H + j]);
    double m, q;
    norm_ref_stats(r, row, &m, &q);
    in->mean[i] = fm[i] = (float)m;
    in->rstd[i] = fr[i] = (float)q;
  }
  void *drs = et_alloc(r->c, (size_t)r->R * 4);
  et_upload(r->c, drs, fr, (size_t)r->R * 4);
  et_arg_ptr(r->c, "rstd", drs);
  if (r->ln) {
    void *dmu = et_alloc(r->c, (size_t)r->R * 4);
    et_upload(r->c, dmu, fm, (size_t)r->R * 4);
    et_arg_ptr(r->c, "mean", dmu);
  }
  (void)k;
  free(fm);
  free(fr);
  free(row);
}

/* fp64 gradients of one row: ds (with the emitted s's gradient), dx, and
   the row's dweight / dbias terms added into dw / db. */
static void norm_ref_bwd_row(const norm_run *r, const norm_bwd_in *in, long i, double *ds, double *dx, double *dw,
                             double *db) {
  long H = r->H;
  double a = 0, b = 0;
  for (long j = 0; j < H; j++) {
    double xh = (et_from_bf16(in->s[i * H + j]) - in->mean[i]) * in->rstd[i];
    double g = et_from_bf16(in->dy[i * H + j]) * in->w[j];
    a += g;
    b += g * xh;
    dw[j] += et_from_bf16(in->dy[i * H + j]) * xh;
    db[j] += et_from_bf16(in->dy[i * H + j]);
  }
  double ma = r->ln ? a / (double)H : 0, mb = b / (double)H;
  for (long j = 0; j < H; j++) {
    double xh = (et_from_bf16(in->s[i * H + j]) - in->mean[i]) * in->rstd[i];
    double g = et_from_bf16(in->dy[i * H + j]) * in->w[j];
    double d = in->rstd[i] * (g - ma - xh * mb) + (r->res ? et_from_bf16(in->dsin[i * H + j]) : 0);
    ds[i * H + j] = d;
    dx[i * H + j] = d * norm_keep(i, j, r->p, r->seed, r->offset);
  }
}

/* The kernel's partial rows [min(R, PARTS)][H] summed on the host in fp64. */
static void norm_cmp_parts(norm_run *r, const void *dev, const double *ref, const char *what) {
  long parts = r->R < r->parts ? r->R : r->parts;
  size_t n = (size_t)(parts * r->H);
  float *h = malloc(n * 4);
  double *got = calloc((size_t)r->H, sizeof *got);
  et_download(r->c, h, dev, n * 4);
  for (long q = 0; q < parts; q++)
    for (long j = 0; j < r->H; j++) got[j] += h[q * r->H + j];
  double e = et_rel_l2(ref, got, (size_t)r->H);
  if (e > r->worst) {
    r->worst = e;
    et_note(r->c, "worst: %s", what);
  }
  free(h);
  free(got);
}

static int norm_emu_bwd(const op_inst *k, norm_run *r) {
  size_t n = (size_t)(r->R * r->H), H = (size_t)r->H;
  size_t parts = (size_t)(r->R < r->parts ? r->R : r->parts);
  norm_bwd_in in;
  norm_bwd_inputs(k, r, &in);
  void *ddx = et_alloc(r->c, n * 2), *ddres = NULL, *ddw = et_alloc(r->c, parts * H * 4), *ddb = NULL;
  et_arg_ptr(r->c, "dx", ddx);
  if (r->res && r->p > 0) et_arg_ptr(r->c, "dres", ddres = et_alloc(r->c, n * 2));
  et_arg_ptr(r->c, "dw_part", ddw);
  if (r->ln) et_arg_ptr(r->c, "db_part", ddb = et_alloc(r->c, parts * H * 4));
  norm_set_common(r);
  norm_set_dims(k, r);
  int rc = et_launch(r->c);
  if (rc == 0) {
    double *ds = malloc(n * sizeof *ds), *dx = malloc(n * sizeof *dx);
    double *dw = calloc(H, sizeof *dw), *db = calloc(H, sizeof *db);
    for (long i = 0; i < r->R; i++) norm_ref_bwd_row(r, &in, i, ds, dx, dw, db);
    norm_cmp(r, ddx, 0, dx, n, "dx");
    if (ddres) norm_cmp(r, ddres, 0, ds, n, "dres");
    norm_cmp_parts(r, ddw, dw, "dweight");
    if (ddb) norm_cmp_parts(r, ddb, db, "dbias");
    free(ds);
    free(dx);
    free(dw);
    free(db);
  }
  free(in.s);
  free(in.dy);
  free(in.dsin);
  free(in.w);
  free(in.mean);
  free(in.rstd);
  return rc;
}

/* Random partial rows in, their fp64 column sums as the reference. */
static void *norm_parts_in(norm_run *r, double *sum) {
  size_t parts = (size_t)(r->R < r->parts ? r->R : r->parts), H = (size_t)r->H;
  float *h = malloc(parts * H * 4);
  for (size_t j = 0; j < H; j++) sum[j] = 0;
  for (size_t q = 0; q < parts; q++)
    for (size_t j = 0; j < H; j++) sum[j] += h[q * H + j] = (float)et_uniform(r->c);
  void *d = et_alloc(r->c, parts * H * 4);
  et_upload(r->c, d, h, parts * H * 4);
  free(h);
  return d;
}

static int norm_emu_reduce(const op_inst *k, norm_run *r) {
  size_t H = (size_t)r->H;
  double *sw = malloc(H * sizeof *sw), *sb = malloc(H * sizeof *sb);
  void *dw = et_alloc(r->c, H * 4), *db = NULL;
  et_arg_ptr(r->c, "dw_part", norm_parts_in(r, sw));
  et_arg_ptr(r->c, "dweight", dw);
  if (r->ln) {
    et_arg_ptr(r->c, "db_part", norm_parts_in(r, sb));
    et_arg_ptr(r->c, "dbias", db = et_alloc(r->c, H * 4));
  }
  norm_set_dims(k, r);
  int rc = et_launch(r->c);
  if (rc == 0) {
    norm_cmp(r, dw, 1, sw, H, "dweight");
    if (db) norm_cmp(r, db, 1, sb, H, "dbias");
  }
  free(sw);
  free(sb);
  return rc;
}

static int norm_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
  norm_run r;
  memset(&r, 0, sizeof r);
  r.R = shape[op_param_index(k->op, "rows")];
  r.H = shape[op_param_index(k->op, "hidden")];
  r.ln = norm_ln(k);
  r.res = norm_res(k);
  r.f32w = norm_is(k, "weight_dtype", "fp32");
  r.p = strtod(op_val(k, "dropout"), NULL);
  r.eps = (float)strtod(op_val(k, "eps"), NULL);
  r.c = c;
  r.seed = et_rand(c);
  r.offset = et_rand(c) % (1ull << 40);
  r.misalign = r.R == 4 && !norm_vec_only(k); /* the 4 x 64 case (vec: only refuses it: rt_catalog) */
  r.parts = norm_parts(k);
  int rc = norm_is(k, "phase", "fwd")   ? norm_emu_fwd(k, &r)
           : norm_is(k, "phase", "bwd") ? norm_emu_bwd(k, &r)
                                        : norm_emu_reduce(k, &r);
  *err = r.worst;
  return rc;
}

/* The estimate's work, in bytes (no matrix work): forward reads x (and
   the residual) and writes y (and the sum s); backward reads s and dy and
   writes dx (and ds) plus its parts partial rows of fp32 weight (and
   bias) gradients; the reduction reads those partial rows. About 8 FLOPs
   per element forward, 12 backward. */
static int norm_work(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n) {
  (void)msg;
  (void)n;
  double R = (double)shape[op_param_index(k->op, "rows")], H = (double)shape[op_param_index(k->op, "hidden")];
  double wb = norm_is(k, "weight_dtype", "fp32") ? 4 : 2, nw = norm_ln(k) ? 2 : 1, res = norm_res(k);
  double parts = R < norm_parts(k) ? R : (double)norm_parts(k);
  memset(w, 0, sizeof *w);
  if (norm_is(k, "phase", "fwd")) {
    w->bytes = 2 * R * H * (2 + 2 * res) + nw * wb * H;
    w->flops = 8 * R * H;
  } else if (norm_is(k, "phase", "bwd")) {
    w->bytes = 2 * R * H * (3 + res) + nw * wb * H + parts * nw * 4 * H;
    w->flops = 12 * R * H;
  } else {
    w->bytes = parts * nw * 4 * H + nw * wb * H;
    w->flops = parts * nw * H;
  }
  return 0;
}

/* norm_work's bytes as a formula (no matrix work), for the AMD cost. */
static void norm_work_formula(const op_inst *k, char *mma_flops, char *bytes) {
  const char *R = op_term(k, "rows"), *H = op_term(k, "hidden");
  int wb = norm_is(k, "weight_dtype", "fp32") ? 4 : 2, nw = norm_ln(k) ? 2 : 1, res = norm_res(k);
  snprintf(mma_flops, OP_FORMULA, "0");
  if (norm_is(k, "phase", "fwd"))
    op_formula(bytes, "%d*%s*%s+%d*%s", 2 * (2 + 2 * res), R, H, nw * wb, H);
  else if (norm_is(k, "phase", "bwd"))
    op_formula(bytes, "%d*%s*%s+%d*%s+min(%s,%ld)*%d*%s", 2 * (3 + res), R, H, nw * wb, H, R, norm_parts(k), nw * 4, H);
  else op_formula(bytes, "min(%s,%ld)*%d*%s+%d*%s", R, norm_parts(k), nw * 4, H, nw * wb, H);
}

const op_desc op_norm = {
    .name = "norm",
    .doc = "RMSNorm / LayerNorm of rows [rows][hidden] fused with dropout and the residual add, fwd and bwd",
    .skeleton = "norm.hip.m4",
    .params = norm_params,
    .nparams = (int)(sizeof norm_params / sizeof norm_params[0]),
    .tuning = norm_tuning,
    .check = norm_check,
    .target_default = norm_target_default,
    .plan = norm_plan,
    .emu_shapes = norm_emu_shapes,
    .emu_run = norm_emu_run,
    .work = norm_work,
    .work_formula = norm_work_formula,
    .bench_shape = "rows=16384,hidden=4096",
};
