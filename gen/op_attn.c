/* op_attn.c: attention forward, O = softmax(scale * Q K^T + mask) V, with the
   log-sum-exp of each row as a second output for the backward pass.
   bf16 Q, K, V, O; fp32 softmax and accumulation; MHA, GQA and MQA (heads_q a
   multiple of heads_k); causal masks aligned bottom-right when seqlen_q !=
   seqlen_k, as FlashAttention does. Layouts by strides. Serving features,
   each baked so that a kernel without it has none of its code: a sliding
   window, attention sinks, logit soft-capping (AMD and sm_90a) and packed
   variable-length sequences (varlen). Skeletons:
   templates/attn_fwd.hip.m4, attn_fwd.sm90.hip.m4. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "emutest.h"
#include "op.h"
#include "target.h"

static const char *const attn_dtypes[] = {"bf16", NULL};
static const char *const attn_dims[] = {"64", "96", "128", "192", "256", NULL};

#define ATTN_INT(n, tag, hi, d) {n, OP_INT, NULL, 1, hi, OP_ANY, 1, tag, d}

#define ATTN_SHARED_PARAMS                                                                                    \
  {"dtype", OP_ENUM, attn_dtypes, 0, 0, "bf16", 0, "", "element type of Q, K, V and O"},                      \
      {"head_dim", OP_ENUM, attn_dims, 0, 0, "128", 0, "d", "elements per head"},                             \
      {"causal", OP_BOOL, NULL, 0, 0, "false", 0, "c", "mask keys after the query (bottom-right aligned)"},   \
      ATTN_INT("batch", "b", 1L << 20, "sequences per launch"),                                               \
      ATTN_INT("seqlen_q", "sq", 1L << 24, "queries per sequence"),                                           \
      ATTN_INT("seqlen_k", "sk", 1L << 24, "keys per sequence"),                                              \
      ATTN_INT("heads_q", "hq", 1024, "query heads"),                                                         \
      ATTN_INT("heads_k", "hk", 1024, "key/value heads (heads_q must be a multiple)")

const op_param attn_params[ATTN_NPARAMS] = {ATTN_SHARED_PARAMS};
/* attn_fwd: the shared schema, then its features (attn_fwd_features). */
#define ATTN_WIN(n, tag, d) {n, OP_INT, NULL, -1, 1L << 24, "-1", 1, tag, d}
static const op_param attn_fwd_params[] = {
    ATTN_SHARED_PARAMS,
    ATTN_WIN("window_left", "wl", "sliding window: keys before the query's (bottom-right aligned) position it sees; -1: all"),
    ATTN_WIN("window_right", "wr", "sliding window: keys after the query's position it sees; -1: all (causal: none)"),
    {"sinks", OP_BOOL, NULL, 0, 0, "false", 0, "snk",
     "a learned logit per query head (float sinks[heads_q]) joins each row's softmax denominator"},
    {"softcap", OP_FLOAT, NULL, 0, 0, "0", 0, "sc", "logit soft cap: cap * tanh(scale q.k / cap) (left out: none)"},
    {"varlen", OP_BOOL, NULL, 0, 0, "false", 0, "vl",
     "packed sequences [total_tokens][heads][head_dim] by cu_seqlens_q/_k; seqlen_q/_k are the maximum lengths"},
};
static const char *const attn_fwd_features[] = {"window_left", "window_right", "sinks", "softcap", "varlen", NULL};

const char *const attn_dim_names[ATTN_NDIMS] = {"batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"};

/* Hopper's path: wgmma fed by bulk tensor copies (attn_fwd.sm90.hip.m4). */
static int attn_is_wgmma(const op_inst *k) { return tgt_name_has(k->target, TGT_WGMMA | TGT_TMA); }

int attn_check(const op_inst *k, char *msg, size_t n) {
  if (!op_is_any(k, "heads_q") && !op_is_any(k, "heads_k") &&
      op_int(k, "heads_q") % op_int(k, "heads_k")) {
    snprintf(msg, n, "heads_q (%ld) must be a multiple of heads_k (%ld)", op_int(k, "heads_q"),
             op_int(k, "heads_k"));
    return -1;
  }
  long d = op_int(k, "head_dim");
  if (attn_is_wgmma(k) && d != 64 && d != 128) {
    /* the wgmma tiles are 64-column slabs of Q, K and V */
    snprintf(msg, n, "head_dim %ld is not available for %s; allowed there: 64, 128", d, k->target);
    return -1;
  }
  return 0;
}

/* Whether k uses feature param of attn_fwd (0 for an op without it). */
static int attn_uses(const op_inst *k, const char *param) {
  int i = op_param_index(k->op, param);
  return i >= 0 && !op_feature_off(k, i);
}

/* Every feature runs on both targets (attn_fwd.hip.m4, attn_fwd.sm90.hip.m4). */
static int attn_fwd_check(const op_inst *k, char *msg, size_t n) { return attn_check(k, msg, n); }

/* The AMD kernel's register and loop plan per target, measured with each
   target's compiler (tests/build_attn.sh builds every kernel of
   tests/emu/attn.yaml for each AMD target and fails on any spill):
   - waves per SIMD the registers are planned for (HK_WAVES_PER_SIMD), per
     head_dim 64, 96, 128, 192, 256: gfx942 d64 2 (causal kernels with
     run-time lengths spilled SGPRs at 3); gfx950 d96 1 (run-time shapes
     spilled VGPRs at 2); 192/256: 2 on gfx942 (32-key blocks), 1 elsewhere
     (gfx950's 64-key blocks, gfx90a's compiler need the registers);
   - MAIN_LAST (the unmasked main loop also takes the last block when it is
     whole) up to head_dim main_last_d: gfx950 d128 GQA went from 245 to
     214 VGPRs; 192/256 spilled on gfx950; gfx90a d128 fell from 3 waves to 2.
   An AMD target without a row runs with one wave and no MAIN_LAST: right,
   if not fast. */
typedef struct {
  const char *target;
  int waves[5];
  int main_last_d;
} attn_amd_row;

static const attn_amd_row attn_amd_rows[] = {
    {"gfx90a", {3, 2, 2, 1, 1}, 0},
    {"gfx942", {2, 2, 2, 2, 2}, 128},
    {"gfx950", {3, 1, 2, 1, 1}, 128},
};

static const attn_amd_row *attn_amd_row_for(const char *target) {
  static const attn_amd_row fallback = {"", {1, 1, 1, 1, 1}, 0};
  for (size_t i = 0; i < sizeof attn_amd_rows / sizeof attn_amd_rows[0]; i++)
    if (!strcmp(attn_amd_rows[i].target, target)) return &attn_amd_rows[i];
  return &fallback;
}

/* AMD LDS of one stage of bn keys: K as [key][d] and V^T as [d][key], K rows
   padded by 16 bytes, V^T rows by 8 where the MFMA takes 4 bf16 a lane, else
   16 (attn_fwd.hip.m4 attn_lds_bytes, attn_common.m4 attn_vt_pitch). */
static long attn_amd_stage_bytes(const tgt_info *t, long d, long bn) {
  return bn * (d * 2 + 16) + d * (bn * 2 + (t->emu_kpl == 4 ? 8 : 16));
}

/* AMD: 4 waves of 32 queries each; keys per block: the most (128, 64, 32)
   whose stage leaves room for two workgroups per CU, 64 at most for
   head_dim 64 (its S tile would crowd the registers planned for three
   waves). */
static void attn_plan_amd(const op_inst *k, op_plan *p) {
  const tgt_info *t = tgt_find(k->target);
  long d = op_int(k, "head_dim"), budget = t->lds_unit / 2;
  static const int dims[] = {64, 96, 128, 192, 256};
  const attn_amd_row *row = attn_amd_row_for(k->target);
  int waves = 1;
  for (int i = 0; i < 5; i++)
    if (dims[i] == d) waves = row->waves[i];
  op_plan_tune(p, "block_n", attn_amd_stage_bytes(t, d, 128) <= budget && d > 64 ? 128
                             : attn_amd_stage_bytes(t, d, 64) <= budget           ? 64
                                                                                  : 32);
  op_plan_tune(p, "waves", waves);
  op_plan_tune(p, "main_last", d <= row->main_last_d);
  p->block = 256;
}

/* Hopper: two consumer warpgroups of 64 queries each. head_dim 128 adds a
   producer warpgroup and blocks that stay resident and walk tiles (causal:
   pairs of tiles), the producer loading a tile's Q (tmap_q) and first K/V
   blocks while the consumers finish the one before (at most device_units
   blocks); d64 keeps two blocks per multiprocessor without one. Shared
   memory: the Q tile (128 rows) and rings of K and V tiles, d64 5 stages of
   64 keys (97 KiB: two blocks per multiprocessor; 3-7% faster than 4 on the
   H200), d128 3 stages of 128 keys (225 KiB), plus bar_bytes of mbarriers
   (full and empty, of K and V, per stage) and 1024 bytes so that the
   skeleton can align the region to the 128-byte swizzle's period.  A d128
   kernel with a window takes d64's form, a block per tile of two
   warpgroups (256 threads, up to 255 registers, one block per
   multiprocessor by its shared memory): in the persistent one the
   consumers' cp.async path spilled (3-5 registers at 232).  varlen:
   vl_order 1, the persistent walk takes the sequences' units by cost
   class, the costliest first (attn_walk_vl); 0, sequence after sequence. */
static void attn_plan_wgmma(const op_inst *k, op_plan *p) {
  long d = op_int(k, "head_dim");
  int d128 = d == 128, ws = d128 && !attn_uses(k, "window_left") && !attn_uses(k, "window_right");
  op_plan_tune(p, "persistent", ws);
  op_plan_tune(p, "producer", ws);
  op_plan_tune(p, "tmap_q", ws);
  op_plan_tune(p, "block_n", d128 ? 128 : 64);
  op_plan_tune(p, "stages", d128 ? 3 : 5);
  op_plan_tune(p, "bar_bytes", 256);
  if (attn_uses(k, "varlen")) op_plan_tune(p, "vl_order", 1);
  p->block = ws ? 384 : 256;
  p->dynamic_lds = (int)(128 * d * 2 + op_tune(p, "stages") * 2 * op_tune(p, "block_n") * d * 2 +
                         op_tune(p, "bar_bytes") + 1024);
}

/* Hopper: K and V (and Q when the producer loads it) as [batch][heads]
   [seqlen][head_dim] tensors by strides, copied in boxes of 64 columns x
   block_n keys (or 128 queries) of one head: 128-byte rows, the 128-byte
   swizzle of the skeleton's slabs.  varlen: the packed tensors as 3-D
   {head_dim, total, heads}, the rows counted by the arguments total_q and
   total_k (a box that runs past a sequence's end reads the next sequence's
   rows, which the kernel masks or does not store; past the tensor's end,
   zeros). */
static void attn_tmaps(const op_inst *k, op_plan *p) {
  int vl = attn_uses(k, "varlen"), rank = vl ? 3 : 4;
  const int box[] = {64, (int)op_tune(p, "block_n"), 1, 1};
  const char *const kd[] = {"head_dim", vl ? "total_k" : "seqlen_k", "heads_k", "batch"};
  const char *const ks[] = {"k_stride_s", "k_stride_h", "k_stride_b"};
  const char *const vs[] = {"v_stride_s", "v_stride_h", "v_stride_b"};
  op_tmap tk = op_tmap_make("K", rank, kd, ks, box, 128), tv = op_tmap_make("V", rank, kd, vs, box, 128);
  if (op_tune(p, "tmap_q")) {
    const int qbox[] = {64, 128, 1, 1};
    const char *const qd[] = {"head_dim", vl ? "total_q" : "seqlen_q", "heads_q", "batch"};
    const char *const qs[] = {"q_stride_s", "q_stride_h", "q_stride_b"};
    op_tmap tq = op_tmap_make("Q", rank, qd, qs, qbox, 128);
    op_arg_tmap(p->args, &p->nargs, "tmap_q", &tq);
  }
  op_arg_tmap(p->args, &p->nargs, "tmap_k", &tk);
  op_arg_tmap(p->args, &p->nargs, "tmap_v", &tv);
}

/* Packed (varlen) tensors [total_tokens][heads][head_dim] have no batch
   stride: <tensor>_stride_s and _h only. */
static void attn_strides(const op_inst *k, op_plan *p, const char *tensor) {
  char name[32];
  if (!attn_uses(k, "varlen")) {
    op_arg_strides(p->args, &p->nargs, tensor);
    return;
  }
  snprintf(name, sizeof name, "%s_stride_s", tensor);
  op_arg_add(p->args, &p->nargs, "long", name);
  snprintf(name, sizeof name, "%s_stride_h", tensor);
  op_arg_add(p->args, &p->nargs, "long", name);
}

/* The features' arguments, after the dimensions: cumulative sequence
   lengths (varlen, int32 [batch + 1] each, on the device; sm_90a adds the
   packed tensors' rows, total_q and total_k, which its tensor maps need),
   the sinks (fp32 [heads_q]) and the window sizes left to run time. */
static void attn_feature_args(const op_inst *k, op_plan *p) {
  if (attn_uses(k, "varlen")) {
    op_arg_add(p->args, &p->nargs, "const int *", "cu_seqlens_q");
    op_arg_add(p->args, &p->nargs, "const int *", "cu_seqlens_k");
    if (attn_is_wgmma(k)) {
      op_arg_add(p->args, &p->nargs, "int", "total_q");
      op_arg_add(p->args, &p->nargs, "int", "total_k");
    }
  }
  if (attn_uses(k, "sinks")) op_arg_add(p->args, &p->nargs, "const float *", "sinks");
  if (attn_uses(k, "window_left") && op_is_any(k, "window_left")) op_arg_add(p->args, &p->nargs, "int", "window_left");
  if (attn_uses(k, "window_right") && op_is_any(k, "window_right"))
    op_arg_add(p->args, &p->nargs, "int", "window_right");
}

static void attn_args(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  op_arg_add(a, n, "const hk_bf16 *", "Q");
  op_arg_add(a, n, "const hk_bf16 *", "K");
  op_arg_add(a, n, "const hk_bf16 *", "V");
  op_arg_add(a, n, "hk_bf16 *", "O");
  op_arg_add(a, n, "float *", "LSE"); /* [batch][heads_q][seqlen_q] (varlen: [heads_q][total_q]), may be null */
  static const char *const ts[] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; i++) attn_strides(k, p, ts[i]);
  op_arg_add(a, n, "float", "scale");
  static const char *const dims[] = {"batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"};
  for (int i = 0; i < 5; i++)
    if (op_is_any(k, dims[i])) op_arg_add(a, n, "int", dims[i]);
  attn_feature_args(k, p);
  if (attn_is_wgmma(k)) attn_tmaps(k, p);
}

/* A block per tile of 128 queries of one head, or (persistent) as many
   blocks as the device holds at once (one per SM) walking the tiles. */
static void attn_grid(const op_inst *k, op_plan *p) {
  const char *sq = op_term(k, "seqlen_q"), *hq = op_term(k, "heads_q"), *b = op_term(k, "batch");
  if (op_tune(p, "persistent")) {
    if (op_int(k, "causal"))
      snprintf(p->grid[0], OP_FORMULA, "min(cdiv(cdiv(%s,128),2)*%s*%s,device_units)", sq, hq, b);
    else
      snprintf(p->grid[0], OP_FORMULA, "min(cdiv(%s,128)*%s*%s,device_units)", sq, hq, b);
    return;
  }
  snprintf(p->grid[0], OP_FORMULA, "cdiv(%s,128)", sq);
  snprintf(p->grid[1], OP_FORMULA, "%s", hq);
  snprintf(p->grid[2], OP_FORMULA, "%s", b);
}

static void attn_plan(const op_inst *k, op_plan *p) {
  if (attn_is_wgmma(k)) attn_plan_wgmma(k, p);
  else attn_plan_amd(k, p);
  attn_args(k, p);
  attn_grid(k, p);
  op_plan_check(p, "heads_q % heads_k == 0", "heads_q must be a multiple of heads_k (GQA groups)");
  if (attn_is_wgmma(k) && attn_uses(k, "varlen"))
    op_plan_check(p, "total_q >= 0 && total_k >= 0", "total_q and total_k are the packed tensors' rows");
  static const char *const ts[] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; i++) {
    char rule[OP_FORMULA];
    if (attn_uses(k, "varlen"))
      snprintf(rule, sizeof rule, "%s_stride_s >= 0 && %s_stride_h >= 0", ts[i], ts[i]);
    else
      snprintf(rule, sizeof rule, "%s_stride_b >= 0 && %s_stride_s >= 0 && %s_stride_h >= 0", ts[i], ts[i],
               ts[i]);
    op_plan_check(p, rule, "strides are element counts, not negative");
  }
}

/* Small shapes for `hkgen test`: the head counts that break other stacks
   (12, 7, 6 per rank; 40:8 = ratio 5; MQA), odd lengths, Sq != Sk, and one
   long enough (400 keys) for the pipelined main loop of 128-key blocks
   (blocks past the causal diagonal and the last, partial one run apart), and
   256 keys, whole blocks only, where the main loop takes the last block too. */
/* A case fits when heads_q is a multiple of heads_k (a baked head count may
   break that for some cases). */
int attn_case_fits(const op_inst *k, const long *s) {
  long hq = s[op_param_index(k->op, "heads_q")], hk = s[op_param_index(k->op, "heads_k")];
  return hk >= 1 && hq % hk == 0;
}

static int attn_emu_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const char *const dims[] = {"batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"};
  static const long cases[][5] = {{1, 37, 37, 12, 12}, {1, 1, 1, 1, 1},   {2, 65, 129, 6, 2},
                                  {1, 130, 97, 7, 1},  {1, 33, 70, 40, 8}, {1, 129, 129, 12, 4},
                                  {1, 130, 400, 2, 1}, {2, 100, 256, 6, 2}};
  return et_shapes_from_cases(k, dims, 5, &cases[0][0], (int)(sizeof cases / sizeof cases[0]),
                              attn_case_fits, out, max);
}

/* Whether k uses any of attn_fwd's features. */
static int attn_uses_any(const op_inst *k) {
  for (int i = 0; attn_fwd_features[i]; i++)
    if (attn_uses(k, attn_fwd_features[i])) return 1;
  return 0;
}

/* A kernel with features runs the cases above with window sizes (used where
   the window is left to run time; baked ones keep theirs), varlen taking the
   lengths as maxima (attn_varlen_lengths), plus a case with K and V strides
   past the limit of 32-bit row offsets (attn_big_layout). Windows: small
   ones, a right edge only, a left edge only, both, and left edges long
   enough for masked blocks below the unmasked main loop's (400 keys). */
static int attn_fwd_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const char *const dims[] = {"batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k", "window_left", "window_right"};
  static const long cases[][7] = {{1, 37, 37, 12, 12, 8, 0},    {1, 1, 1, 1, 1, 0, 0},
                                  {4, 65, 129, 6, 2, 40, 3},    {1, 130, 97, 7, 1, -1, 20},
                                  {5, 33, 70, 40, 8, 5, -1},    {1, 129, 129, 12, 4, 64, 64},
                                  {1, 130, 400, 2, 1, 300, 0},  {2, 100, 256, 6, 2, 200, -1},
                                  {2, 3, 2, 2, 1, -1, -1}};
  if (!attn_uses_any(k)) return attn_emu_shapes(k, out, max);
  return et_shapes_from_cases(k, dims, 7, &cases[0][0], (int)(sizeof cases / sizeof cases[0]), attn_case_fits,
                              out, max);
}

/* [b][s][h][d] (BSHD) or [b][h][s][d] (BHSD), rows padded at random. */
attn_layout attn_make_layout(et_ctx *c, long B, long S, long H, long D, int bhsd) {
  attn_layout l;
  long row = D + (long)(et_rand(c) % 2) * 8;
  if (et_dense(c)) row = D;
  if (bhsd) {
    l.ss = row;
    l.sh = S * row;
    l.sb = H * l.sh;
  } else {
    l.sh = row;
    l.ss = H * row;
    l.sb = S * l.ss;
  }
  l.elems = B * l.sb;
  return l;
}

unsigned short *attn_random(et_ctx *c, long n) {
  unsigned short *h = malloc((size_t)n * 2 + 2);
  for (long i = 0; i < n; i++) h[i] = et_to_bf16(et_uniform(c) * 2.0);
  return h;
}

/* Key j is visible to query i under mk (i' = i + Sk - Sq: bottom-right aligned). */
static int attn_ref_visible(const attn_mask *mk, long i, long j, long Sq, long Sk) {
  long ip = i + (Sk - Sq);
  return !(mk->causal && j > ip) && !(mk->left >= 0 && j < ip - mk->left) && !(mk->right >= 0 && j > ip + mk->right);
}

/* fp64 reference of one (b, h) pair: out[Sq][D], lse[Sq]. */
void attn_ref_head_mask(const unsigned short *q, const unsigned short *kk, const unsigned short *v,
                        const attn_layout *lq, const attn_layout *lk, const attn_layout *lv, long b, long h,
                        long hk, long Sq, long Sk, long D, const attn_mask *mk, double scale, double *out,
                        double *lse) {
  double *s = malloc((size_t)(Sk ? Sk : 1) * sizeof *s);
  for (long i = 0; i < Sq; i++) {
    const unsigned short *qi = q + b * lq->sb + i * lq->ss + h * lq->sh;
    double m = isnan(mk->sink) ? -INFINITY : mk->sink;
    for (long j = 0; j < Sk; j++) {
      const unsigned short *kj = kk + b * lk->sb + j * lk->ss + hk * lk->sh;
      double dot = 0;
      for (long d = 0; d < D; d++) dot += et_from_bf16(qi[d]) * et_from_bf16(kj[d]);
      dot *= scale;
      if (mk->softcap > 0) dot = mk->softcap * tanh(dot / mk->softcap);
      s[j] = attn_ref_visible(mk, i, j, Sq, Sk) ? dot : -INFINITY;
      if (s[j] > m) m = s[j];
    }
    double sum = isnan(mk->sink) ? 0 : exp(mk->sink - m); /* the sink: in the sum, no value */
    for (long j = 0; j < Sk; j++) sum += (s[j] = s[j] == -INFINITY ? 0 : exp(s[j] - m));
    for (long d = 0; d < D; d++) out[i * D + d] = 0;
    for (long j = 0; j < Sk && sum > 0; j++) {
      const unsigned short *vj = v + b * lv->sb + j * lv->ss + hk * lv->sh;
      for (long d = 0; d < D; d++) out[i * D + d] += s[j] / sum * et_from_bf16(vj[d]);
    }
    lse[i] = sum > 0 ? m + log(sum) : -INFINITY; /* a row with no visible key */
  }
  free(s);
}

void attn_ref_head(const unsigned short *q, const unsigned short *kk, const unsigned short *v,
                   const attn_layout *lq, const attn_layout *lk, const attn_layout *lv, long b, long h, long hk,
                   long Sq, long Sk, long D, int causal, double scale, double *out, double *lse) {
  const attn_mask mk = {causal, -1, -1, 0, NAN};
  attn_ref_head_mask(q, kk, v, lq, lk, lv, b, h, hk, Sq, Sk, D, &mk, scale, out, lse);
}

/* One emulated forward problem: the dimensions (Sq, Sk the maximum lengths
   when varlen), the layouts, the mask and, per feature, its data. */
typedef struct {
  long B, Sq, Sk, HQ, HK, D;
  int varlen, big, bhsd;
  attn_mask mk;
  long *cq, *ck;  /* varlen: cumulative lengths, B + 1 each */
  float *sinks;   /* [HQ], or NULL */
  attn_layout lq, lk, lv, lo;
  long nlse;      /* LSE entries: B * HQ * Sq, or HQ * total_q */
} attn_case;

/* The large-stride case (attn_fwd_shapes): batch 2, 3 queries, 2 keys. */
static int attn_is_big(const attn_case *a) { return a->B == 2 && a->Sq == 3 && a->Sk == 2; }

/* varlen: sequence 0 has the maximum lengths, 1 no queries, 2 one query, 3
   no keys, the rest random in [0, max], Sq != Sk per sequence; the
   large-stride case 3 and 2 queries over 1 key each. */
static void attn_varlen_lengths(et_ctx *c, attn_case *a) {
  a->cq = calloc((size_t)a->B + 1, sizeof *a->cq);
  a->ck = calloc((size_t)a->B + 1, sizeof *a->ck);
  for (long b = 0; b < a->B; b++) {
    long nq = b == 0 ? a->Sq : (long)(et_rand(c) % (uint64_t)(a->Sq + 1));
    long nk = b == 0 ? a->Sk : (long)(et_rand(c) % (uint64_t)(a->Sk + 1));
    nq = b == 1 ? 0 : b == 2 ? 1 : nq;
    nk = b == 3 ? 0 : nk;
    if (et_dense(c)) nq = a->Sq, nk = a->Sk; /* timed: every sequence full */
    if (a->big) nq = 3 - b, nk = 1;
    a->cq[b + 1] = a->cq[b] + nq;
    a->ck[b + 1] = a->ck[b] + nk;
  }
}

/* K or V rows a stride apart just past the kernel's limit for 32-bit row
   offsets (2^31 / (keys + block_n) elements, attn_fwd.hip.m4): its element
   loads with 64-bit offsets. Batches overlap (read-only); the gap between
   rows is never read (zero pages, left unfilled). */
static attn_layout attn_big_layout(const op_inst *k, const attn_case *a) {
  attn_layout l;
  long bn = op_tune(k->plan, "block_n"), rows = a->varlen ? a->ck[a->B] : a->Sk;
  l.ss = (0x7fffffffL / (1 + bn) + 16) / 8 * 8;
  l.sh = a->D;
  l.sb = a->varlen ? 0 : a->HK * a->D;
  l.elems = (a->B - 1) * l.sb + (rows - 1) * l.ss + a->HK * a->D;
  return l;
}

static void attn_case_layouts(et_ctx *c, const op_inst *k, attn_case *a) {
  long B = a->varlen ? 1 : a->B, Sq = a->varlen ? a->cq[a->B] : a->Sq, Sk = a->varlen ? a->ck[a->B] : a->Sk;
  a->bhsd = et_dense(c) ? 0 : (int)(et_rand(c) % 2); /* timed: BSHD throughout */
  a->lq = attn_make_layout(c, B, Sq, a->HQ, a->D, a->bhsd);
  a->lk = attn_make_layout(c, B, Sk, a->HK, a->D, a->bhsd);
  a->lv = attn_make_layout(c, B, Sk, a->HK, a->D, et_dense(c) ? 0 : !a->bhsd);
  a->lo = attn_make_layout(c, B, Sq, a->HQ, a->D, a->bhsd);
  if (a->big) a->lk = a->lv = attn_big_layout(k, a);
  a->nlse = a->HQ * (a->varlen ? a->cq[a->B] : a->B * a->Sq);
}

/* Random rows of a tensor (B x S x H rows of D) by layout l, the rest zero. */
static unsigned short *attn_random_rows(et_ctx *c, const attn_layout *l, long B, long S, long H, long D) {
  unsigned short *t = calloc((size_t)l->elems + 1, 2);
  for (long b = 0; b < B; b++)
    for (long j = 0; j < S; j++)
      for (long h = 0; h < H; h++)
        for (long d = 0; d < D; d++) t[b * l->sb + j * l->ss + h * l->sh + d] = et_to_bf16(et_uniform(c) * 2.0);
  return t;
}

static void attn_arg_strides(et_ctx *c, const attn_case *a, const char *t, const attn_layout *l) {
  char name[32];
  if (!a->varlen) {
    et_arg_strides(c, t, l->sb, l->ss, l->sh);
    return;
  }
  snprintf(name, sizeof name, "%s_stride_s", t);
  et_arg_int(c, name, l->ss);
  snprintf(name, sizeof name, "%s_stride_h", t);
  et_arg_int(c, name, l->sh);
}

/* The features' arguments (attn_feature_args' order). */
static void attn_arg_features(const op_inst *k, et_ctx *c, const attn_case *a) {
  if (a->varlen) {
    int *cq = malloc((size_t)(a->B + 1) * 4), *ck = malloc((size_t)(a->B + 1) * 4);
    for (long b = 0; b <= a->B; b++) cq[b] = (int)a->cq[b], ck[b] = (int)a->ck[b];
    void *dq = et_alloc(c, (size_t)(a->B + 1) * 4), *dk = et_alloc(c, (size_t)(a->B + 1) * 4);
    et_upload(c, dq, cq, (size_t)(a->B + 1) * 4);
    et_upload(c, dk, ck, (size_t)(a->B + 1) * 4);
    et_arg_ptr(c, "cu_seqlens_q", dq);
    et_arg_ptr(c, "cu_seqlens_k", dk);
    free(cq);
    free(ck);
  }
  if (a->sinks) {
    void *ds = et_alloc(c, (size_t)a->HQ * 4);
    et_upload(c, ds, a->sinks, (size_t)a->HQ * 4);
    et_arg_ptr(c, "sinks", ds);
  }
  if (attn_uses(k, "window_left") && op_is_any(k, "window_left")) et_arg_int(c, "window_left", a->mk.left);
  if (attn_uses(k, "window_right") && op_is_any(k, "window_right")) et_arg_int(c, "window_right", a->mk.right);
}

/* The fp64 reference and the kernel's output, gathered row by row in the
   same order; LSE rows with no visible key (-inf in both) are left out. */
static double attn_compare(const attn_case *a, const unsigned short *q, const unsigned short *kk,
                           const unsigned short *v, const unsigned short *o, const float *lse, et_ctx *c) {
  size_t n = (size_t)(a->nlse * a->D);
  double *ref = malloc(n * sizeof *ref + 8), *got = malloc(n * sizeof *got + 8);
  double *lref = malloc((size_t)a->nlse * sizeof *lref + 8), *lgot = malloc((size_t)a->nlse * sizeof *lgot + 8);
  size_t at = 0, al = 0, m = 0;
  long total_q = a->varlen ? a->cq[a->B] : 0;
  for (long b = 0; b < a->B; b++)
    for (long h = 0; h < a->HQ; h++) {
      long q0 = a->varlen ? a->cq[b] : 0, k0 = a->varlen ? a->ck[b] : 0, bb = a->varlen ? 0 : b;
      long Sq = a->varlen ? a->cq[b + 1] - q0 : a->Sq, Sk = a->varlen ? a->ck[b + 1] - k0 : a->Sk;
      attn_mask mk = a->mk;
      mk.sink = a->sinks ? a->sinks[h] : NAN;
      attn_ref_head_mask(q + q0 * a->lq.ss, kk + k0 * a->lk.ss, v + k0 * a->lv.ss, &a->lq, &a->lk, &a->lv, bb, h,
                         h / (a->HQ / a->HK), Sq, Sk, a->D, &mk, 1.0 / sqrt((double)a->D), ref + at, lref + al);
      for (long i = 0; i < Sq; i++) {
        const unsigned short *oi = o + bb * a->lo.sb + (q0 + i) * a->lo.ss + h * a->lo.sh;
        for (long d = 0; d < a->D; d++) got[at + (size_t)(i * a->D + d)] = et_from_bf16(oi[d]);
        lgot[al + (size_t)i] = a->varlen ? lse[h * total_q + q0 + i] : lse[(b * a->HQ + h) * a->Sq + i];
      }
      at += (size_t)(Sq * a->D);
      al += (size_t)Sq;
    }
  for (size_t i = 0; i < al; i++)
    if (!(isinf(lref[i]) && isinf(lgot[i]) && lref[i] < 0 && lgot[i] < 0)) {
      lref[m] = lref[i];
      lgot[m++] = lgot[i];
    }
  double eo = et_rel_l2(ref, got, at), el = et_rel_l2(lref, lgot, m);
  if (el > eo) et_note(c, "log-sum-exp error %.3e", el);
  free(ref);
  free(got);
  free(lref);
  free(lgot);
  return eo > el ? eo : el;
}

/* The problem of shape for kernel k; -1 when it cannot form one. */
static int attn_case_make(const op_inst *k, const long *shape, et_ctx *c, attn_case *a) {
#define ATTN_VAL(n) shape[op_param_index(k->op, n)]
  memset(a, 0, sizeof *a);
  a->B = ATTN_VAL("batch"), a->Sq = ATTN_VAL("seqlen_q"), a->Sk = ATTN_VAL("seqlen_k");
  a->HQ = ATTN_VAL("heads_q"), a->HK = ATTN_VAL("heads_k"), a->D = op_int(k, "head_dim");
  a->mk.causal = (int)op_int(k, "causal");
  a->mk.left = attn_uses(k, "window_left") ? ATTN_VAL("window_left") : -1;
  a->mk.right = attn_uses(k, "window_right") ? ATTN_VAL("window_right") : -1;
#undef ATTN_VAL
  a->mk.softcap = attn_uses(k, "softcap") ? strtod(op_val(k, "softcap"), NULL) : 0;
  a->varlen = attn_uses(k, "varlen");
  if (a->HK < 1 || a->HQ % a->HK) { /* possible through --shape; the spec checks baked values */
    et_note(c, "heads_q (%ld) must be a multiple of heads_k (%ld)", a->HQ, a->HK);
    return -1;
  }
  a->big = attn_is_big(a) && attn_uses_any(k);
  if (a->varlen) attn_varlen_lengths(c, a);
  if (attn_uses(k, "sinks")) {
    a->sinks = malloc((size_t)a->HQ * sizeof *a->sinks);
    for (long h = 0; h < a->HQ; h++) a->sinks[h] = (float)(et_uniform(c) * 3.0);
  }
  attn_case_layouts(c, k, a);
  return 0;
}

static int attn_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
  attn_case a;
  if (attn_case_make(k, shape, c, &a)) return -1;
  long rows_q = a.varlen ? a.cq[a.B] : a.Sq, rows_k = a.varlen ? a.ck[a.B] : a.Sk, nb = a.varlen ? 1 : a.B;
  unsigned short *hq = attn_random(c, a.lq.elems);
  unsigned short *hk = a.big ? attn_random_rows(c, &a.lk, nb, rows_k, a.HK, a.D) : attn_random(c, a.lk.elems);
  unsigned short *hv = a.big ? attn_random_rows(c, &a.lv, nb, rows_k, a.HK, a.D) : attn_random(c, a.lv.elems);
  unsigned short *ho = malloc((size_t)a.lo.elems * 2 + 2);
  float *hl = malloc((size_t)a.nlse * 4 + 4);
  void *dq = et_alloc(c, (size_t)a.lq.elems * 2), *dk = et_alloc(c, (size_t)a.lk.elems * 2);
  void *dv = et_alloc(c, (size_t)a.lv.elems * 2), *dO = et_alloc(c, (size_t)a.lo.elems * 2);
  void *dl = et_alloc(c, (size_t)a.nlse * 4);
  (void)rows_q;
  et_upload(c, dq, hq, (size_t)a.lq.elems * 2);
  et_upload(c, dk, hk, (size_t)a.lk.elems * 2);
  et_upload(c, dv, hv, (size_t)a.lv.elems * 2);
  et_arg_ptr(c, "Q", dq);
  et_arg_ptr(c, "K", dk);
  et_arg_ptr(c, "V", dv);
  et_arg_ptr(c, "O", dO);
  et_arg_ptr(c, "LSE", dl);
  attn_arg_strides(c, &a, "q", &a.lq);
  attn_arg_strides(c, &a, "k", &a.lk);
  attn_arg_strides(c, &a, "v", &a.lv);
  attn_arg_strides(c, &a, "o", &a.lo);
  et_arg_float(c, "scale", 1.0 / sqrt((double)a.D));
  static const char *const dims[] = {"batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"};
  long vals[] = {a.B, a.Sq, a.Sk, a.HQ, a.HK};
  for (int i = 0; i < 5; i++)
    if (op_is_any(k, dims[i])) et_arg_int(c, dims[i], vals[i]);
  attn_arg_features(k, c, &a);
  int rc = et_launch(c);
  if (rc == 0) {
    et_download(c, ho, dO, (size_t)a.lo.elems * 2);
    et_download(c, hl, dl, (size_t)a.nlse * 4);
    *err = attn_compare(&a, hq, hk, hv, ho, hl, c);
  }
  free(hq);
  free(hk);
  free(hv);
  free(ho);
  free(hl);
  free(a.cq);
  free(a.ck);
  free(a.sinks);
  return rc;
}

double attn_keys_seen(long r, long sq, long sk) {
  long v = r + 1 + sk - sq;
  return v < 0 ? 0 : v > sk ? (double)sk : (double)v;
}

/* The keys row r sees, [*lo, *hi] (empty: *hi < *lo), under the causal
   mask and the window edges wl, wr (-1: open), bottom-right aligned as the
   templates' attn_lo and attn_hi. */
static void attn_row_keys(long r, long sq, long sk, int causal, long wl, long wr, long *lo, long *hi) {
  long pos = r + sk - sq;
  *hi = causal && pos < sk - 1 ? pos : sk - 1;
  if (wr >= 0 && pos + wr < *hi) *hi = pos + wr;
  *lo = wl >= 0 && pos - wl > 0 ? pos - wl : 0;
}

/* The estimate's work: 4 d FLOPs per (query, key) pair left by the mask
   and window; the matrix cores compute whole key blocks of block_n for each
   128-query block, from the block holding its first visible key to the one
   holding its last (AMD plan); Q, K, V read, O and the log-sum-exp written
   once. */
static int attn_work(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n) {
#define ATTN_VAL(name) shape[op_param_index(k->op, name)]
  long b = ATTN_VAL("batch"), sq = ATTN_VAL("seqlen_q"), sk = ATTN_VAL("seqlen_k"), hq = ATTN_VAL("heads_q"),
       hk = ATTN_VAL("heads_k"), bn = op_tune(k->plan, "block_n");
  long wl = attn_uses(k, "window_left") ? ATTN_VAL("window_left") : -1,
       wr = attn_uses(k, "window_right") ? ATTN_VAL("window_right") : -1;
#undef ATTN_VAL
  double d = (double)op_int(k, "head_dim"), pairs = 0, computed = 0;
  if (bn <= 0) {
    snprintf(msg, n, "kernel %s has no key-block size in its plan (not an AMD attention kernel)", k->name);
    return -1;
  }
  int causal = (int)op_int(k, "causal");
  for (long q0 = 0; q0 < sq; q0 += 128) {
    long last = q0 + 128 < sq ? q0 + 127 : sq - 1, lo, hi, l0, h0;
    attn_row_keys(q0, sq, sk, causal, wl, wr, &lo, &h0);
    attn_row_keys(last, sq, sk, causal, wl, wr, &l0, &hi);
    if (hi >= lo) computed += 128.0 * (double)(hi / bn + 1 - lo / bn) * (double)bn; /* all 128 rows */
    for (long r = q0; r <= last; r++) {
      attn_row_keys(r, sq, sk, causal, wl, wr, &lo, &hi);
      pairs += hi >= lo ? (double)(hi - lo + 1) : 0;
    }
  }
  double bh = (double)b * (double)hq;
  w->flops = 4 * d * pairs * bh;
  w->mma_flops = 4 * d * computed * bh;
  w->bytes = (double)b * (2 * 2 * d * ((double)hq * (double)sq + (double)hk * (double)sk) + 4.0 * (double)hq * (double)sq);
  w->trips = 0;
  return 0;
}

/* attn_work as formulas: the 128-query blocks' key blocks, ctiles of the
   bottom-right causal mask (causal) or all of them; none with a window or
   packed sequences (their counts have no closed form here). */
static void attn_work_formula(const op_inst *k, char *mma_flops, char *bytes) {
  const char *b = op_term(k, "batch"), *sq = op_term(k, "seqlen_q"), *sk = op_term(k, "seqlen_k"),
             *hq = op_term(k, "heads_q"), *hk = op_term(k, "heads_k");
  long bn = op_tune(k->plan, "block_n"), d = op_int(k, "head_dim");
  if (bn <= 0 || attn_uses(k, "window_left") || attn_uses(k, "window_right") || attn_uses(k, "varlen")) return;
  if (op_int(k, "causal"))
    op_formula(mma_flops, "%ld*%s*%s*ctiles(%s,%s,128,%ld)", 4 * d * 128 * bn, b, hq, sq, sk, bn);
  else
    op_formula(mma_flops, "%ld*%s*%s*cdiv(%s,128)*cdiv(%s,%ld)", 4 * d * 128 * bn, b, hq, sq, sk, bn);
  op_formula(bytes, "%s*(%ld*(%s*%s+%s*%s)+4*%s*%s)", b, 4 * d, hq, sq, hk, sk, hq, sq);
}

const op_desc op_attn_fwd = {
    .name = "attn_fwd",
    .doc = "attention forward: O = softmax(scale Q K^T + mask) V and the row log-sum-exp; causal, windows, sinks, soft-cap, varlen",
    .skeleton = "attn_fwd.hip.m4",
    .params = attn_fwd_params,
    .nparams = (int)(sizeof attn_fwd_params / sizeof attn_fwd_params[0]),
    .features = attn_fwd_features,
    .check = attn_fwd_check,
    .plan = attn_plan,
    .emu_shapes = attn_fwd_shapes,
    .work = attn_work,
    .work_formula = attn_work_formula,
    .emu_run = attn_emu_run,
    .bench_shape = "batch=4,seqlen_q=2048,seqlen_k=2048,heads_q=32,heads_k=8,window_left=-1,window_right=-1",
};
