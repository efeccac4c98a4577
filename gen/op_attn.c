/* op_attn.c: attention forward, O = softmax(scale * Q K^T + mask) V, with the
   log-sum-exp of each row as a second output for the backward pass.
   bf16 Q, K, V, O; fp32 softmax and accumulation; MHA, GQA and MQA (heads_q a
   multiple of heads_k); causal masks aligned bottom-right when seqlen_q !=
   seqlen_k, as FlashAttention does. Layouts by strides. Skeleton:
   templates/attn_fwd.hip.m4. */
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

const op_param attn_params[ATTN_NPARAMS] = {
    {"dtype", OP_ENUM, attn_dtypes, 0, 0, "bf16", 0, "", "element type of Q, K, V and O"},
    {"head_dim", OP_ENUM, attn_dims, 0, 0, "128", 0, "d", "elements per head"},
    {"causal", OP_BOOL, NULL, 0, 0, "false", 0, "c", "mask keys after the query (bottom-right aligned)"},
    ATTN_INT("batch", "b", 1L << 20, "sequences per launch"),
    ATTN_INT("seqlen_q", "sq", 1L << 24, "queries per sequence"),
    ATTN_INT("seqlen_k", "sk", 1L << 24, "keys per sequence"),
    ATTN_INT("heads_q", "hq", 1024, "query heads"),
    ATTN_INT("heads_k", "hk", 1024, "key/value heads (heads_q must be a multiple)"),
};
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

/* AMD LDS of one stage of bn keys: K as [key][d] and V^T as [d][key], rows
   padded by 16 bytes (attn_fwd.hip.m4 attn_lds_bytes). */
static long attn_amd_stage_bytes(long d, long bn) { return bn * (d * 2 + 16) + d * (bn * 2 + 16); }

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
  op_plan_tune(p, "block_n", attn_amd_stage_bytes(d, 128) <= budget && d > 64 ? 128
                             : attn_amd_stage_bytes(d, 64) <= budget        ? 64
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
   skeleton can align the region to the 128-byte swizzle's period. */
static void attn_plan_wgmma(const op_inst *k, op_plan *p) {
  long d = op_int(k, "head_dim");
  int d128 = d == 128;
  op_plan_tune(p, "persistent", d128);
  op_plan_tune(p, "producer", d128);
  op_plan_tune(p, "tmap_q", d128);
  op_plan_tune(p, "block_n", d128 ? 128 : 64);
  op_plan_tune(p, "stages", d128 ? 3 : 5);
  op_plan_tune(p, "bar_bytes", 256);
  p->block = d128 ? 384 : 256;
  p->dynamic_lds = (int)(128 * d * 2 + op_tune(p, "stages") * 2 * op_tune(p, "block_n") * d * 2 +
                         op_tune(p, "bar_bytes") + 1024);
}

/* Hopper: K and V (and Q when the producer loads it) as [batch][heads]
   [seqlen][head_dim] tensors by strides, copied in boxes of 64 columns x
   block_n keys (or 128 queries) of one head: 128-byte rows, the 128-byte
   swizzle of the skeleton's slabs. */
static void attn_tmaps(op_plan *p) {
  const int box[] = {64, (int)op_tune(p, "block_n"), 1, 1};
  const char *const kd[] = {"head_dim", "seqlen_k", "heads_k", "batch"};
  const char *const ks[] = {"k_stride_s", "k_stride_h", "k_stride_b"};
  const char *const vs[] = {"v_stride_s", "v_stride_h", "v_stride_b"};
  op_tmap tk = op_tmap_make("K", 4, kd, ks, box, 128), tv = op_tmap_make("V", 4, kd, vs, box, 128);
  if (op_tune(p, "tmap_q")) {
    const int qbox[] = {64, 128, 1, 1};
    const char *const qd[] = {"head_dim", "seqlen_q", "heads_q", "batch"};
    const char *const qs[] = {"q_stride_s", "q_stride_h", "q_stride_b"};
    op_tmap tq = op_tmap_make("Q", 4, qd, qs, qbox, 128);
    op_arg_tmap(p->args, &p->nargs, "tmap_q", &tq);
  }
  op_arg_tmap(p->args, &p->nargs, "tmap_k", &tk);
  op_arg_tmap(p->args, &p->nargs, "tmap_v", &tv);
}

static void attn_args(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  op_arg_add(a, n, "const hk_bf16 *", "Q");
  op_arg_add(a, n, "const hk_bf16 *", "K");
  op_arg_add(a, n, "const hk_bf16 *", "V");
  op_arg_add(a, n, "hk_bf16 *", "O");
  op_arg_add(a, n, "float *", "LSE"); /* [batch][heads_q][seqlen_q], may be null */
  static const char *const ts[] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; i++) op_arg_strides(a, n, ts[i]);
  op_arg_add(a, n, "float", "scale");
  static const char *const dims[] = {"batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"};
  for (int i = 0; i < 5; i++)
    if (op_is_any(k, dims[i])) op_arg_add(a, n, "int", dims[i]);
  if (attn_is_wgmma(k)) attn_tmaps(p);
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
  static const char *const ts[] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; i++) {
    char rule[OP_FORMULA];
    snprintf(rule, sizeof rule, "%s_stride_b >= 0 && %s_stride_s >= 0 && %s_stride_h >= 0", ts[i], ts[i], ts[i]);
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

/* [b][s][h][d] (BSHD) or [b][h][s][d] (BHSD), rows padded at random. */
attn_layout attn_make_layout(et_ctx *c, long B, long S, long H, long D, int bhsd) {
  attn_layout l;
  long row = D + (long)(et_rand(c) % 2) * 8;
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

/* fp64 reference of one (b, h) pair: out[Sq][D], lse[Sq]. */
void attn_ref_head(const unsigned short *q, const unsigned short *kk, const unsigned short *v,
                          const attn_layout *lq, const attn_layout *lk, const attn_layout *lv, long b,
                          long h, long hk, long Sq, long Sk, long D, int causal, double scale,
                          double *out, double *lse) {
  double *s = malloc((size_t)Sk * sizeof *s);
  for (long i = 0; i < Sq; i++) {
    const unsigned short *qi = q + b * lq->sb + i * lq->ss + h * lq->sh;
    double m = -INFINITY;
    for (long j = 0; j < Sk; j++) {
      const unsigned short *kj = kk + b * lk->sb + j * lk->ss + hk * lk->sh;
      double dot = 0;
      for (long d = 0; d < D; d++) dot += et_from_bf16(qi[d]) * et_from_bf16(kj[d]);
      s[j] = (causal && j > i + (Sk - Sq)) ? -INFINITY : dot * scale;
      if (s[j] > m) m = s[j];
    }
    double sum = 0;
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

static int attn_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
#define ATTN_VAL(n) shape[op_param_index(k->op, n)]
  long B = ATTN_VAL("batch"), Sq = ATTN_VAL("seqlen_q"), Sk = ATTN_VAL("seqlen_k"),
       HQ = ATTN_VAL("heads_q"), HK = ATTN_VAL("heads_k"), D = op_int(k, "head_dim");
#undef ATTN_VAL
  if (HK < 1 || HQ % HK) { /* possible through --shape; the spec checks baked values */
    et_note(c, "heads_q (%ld) must be a multiple of heads_k (%ld)", HQ, HK);
    return -1;
  }
  int causal = (int)op_int(k, "causal"), bhsd = (int)(et_rand(c) % 2);
  double scale = 1.0 / sqrt((double)D);
  attn_layout lq = attn_make_layout(c, B, Sq, HQ, D, bhsd), lk = attn_make_layout(c, B, Sk, HK, D, bhsd);
  attn_layout lv = attn_make_layout(c, B, Sk, HK, D, !bhsd), lo = attn_make_layout(c, B, Sq, HQ, D, bhsd);
  unsigned short *hq = attn_random(c, lq.elems), *hk = attn_random(c, lk.elems), *hv = attn_random(c, lv.elems);
  unsigned short *ho = malloc((size_t)lo.elems * 2);
  float *hl = malloc((size_t)(B * HQ * Sq) * 4);
  void *dq = et_alloc(c, (size_t)lq.elems * 2), *dk = et_alloc(c, (size_t)lk.elems * 2);
  void *dv = et_alloc(c, (size_t)lv.elems * 2), *dO = et_alloc(c, (size_t)lo.elems * 2);
  void *dl = et_alloc(c, (size_t)(B * HQ * Sq) * 4);
  et_upload(c, dq, hq, (size_t)lq.elems * 2);
  et_upload(c, dk, hk, (size_t)lk.elems * 2);
  et_upload(c, dv, hv, (size_t)lv.elems * 2);
  et_arg_ptr(c, "Q", dq);
  et_arg_ptr(c, "K", dk);
  et_arg_ptr(c, "V", dv);
  et_arg_ptr(c, "O", dO);
  et_arg_ptr(c, "LSE", dl);
  et_arg_strides(c, "q", lq.sb, lq.ss, lq.sh);
  et_arg_strides(c, "k", lk.sb, lk.ss, lk.sh);
  et_arg_strides(c, "v", lv.sb, lv.ss, lv.sh);
  et_arg_strides(c, "o", lo.sb, lo.ss, lo.sh);
  et_arg_float(c, "scale", scale);
  static const char *const dims[] = {"batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"};
  long vals[] = {B, Sq, Sk, HQ, HK};
  for (int i = 0; i < 5; i++)
    if (op_is_any(k, dims[i])) et_arg_int(c, dims[i], vals[i]);
  int rc = et_launch(c);
  if (rc == 0) {
    et_download(c, ho, dO, (size_t)lo.elems * 2);
    et_download(c, hl, dl, (size_t)(B * HQ * Sq) * 4);
    size_t n = (size_t)(B * HQ * Sq * D), nl = (size_t)(B * HQ * Sq);
    double *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    double *lref = malloc(nl * sizeof *lref), *lgot = malloc(nl * sizeof *lgot);
    size_t at = 0, al = 0;
    for (long b = 0; b < B; b++)
      for (long h = 0; h < HQ; h++) {
        attn_ref_head(hq, hk, hv, &lq, &lk, &lv, b, h, h / (HQ / HK), Sq, Sk, D, causal, scale,
                      ref + at, lref + al);
        for (long i = 0; i < Sq; i++) {
          for (long d = 0; d < D; d++)
            got[at + (size_t)(i * D + d)] = et_from_bf16(ho[b * lo.sb + i * lo.ss + h * lo.sh + d]);
          lgot[al + (size_t)i] = hl[(b * HQ + h) * Sq + i];
        }
        at += (size_t)(Sq * D);
        al += (size_t)Sq;
      }
    /* rows with no visible key have lse -inf in both; compare the rest */
    size_t m = 0;
    for (size_t i = 0; i < nl; i++)
      if (!(isinf(lref[i]) && isinf(lgot[i]) && lref[i] < 0 && lgot[i] < 0)) {
        lref[m] = lref[i];
        lgot[m++] = lgot[i];
      }
    double eo = et_rel_l2(ref, got, n), el = et_rel_l2(lref, lgot, m);
    *err = eo > el ? eo : el;
    if (el > eo) et_note(c, "log-sum-exp error %.3e", el);
    free(ref);
    free(got);
    free(lref);
    free(lgot);
  }
  free(hq);
  free(hk);
  free(hv);
  free(ho);
  free(hl);
  return rc;
}

double attn_keys_seen(long r, long sq, long sk) {
  long v = r + 1 + sk - sq;
  return v < 0 ? 0 : v > sk ? (double)sk : (double)v;
}

/* The estimate's work: 4 d FLOPs per (query, key) pair left by the mask;
   the matrix cores compute whole key blocks of block_n for each 128-query
   block (AMD plan); Q, K, V read, O and the log-sum-exp written once. */
static int attn_work(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n) {
  long b = shape[op_param_index(k->op, "batch")], sq = shape[op_param_index(k->op, "seqlen_q")],
       sk = shape[op_param_index(k->op, "seqlen_k")], hq = shape[op_param_index(k->op, "heads_q")],
       hk = shape[op_param_index(k->op, "heads_k")], bn = op_tune(k->plan, "block_n");
  double d = (double)op_int(k, "head_dim"), pairs = 0, computed = 0;
  if (bn <= 0) {
    snprintf(msg, n, "kernel %s has no key-block size in its plan (not an AMD attention kernel)", k->name);
    return -1;
  }
  int causal = (int)op_int(k, "causal");
  for (long q0 = 0; q0 < sq; q0 += 128) {
    long last = q0 + 128 < sq ? q0 + 127 : sq - 1;
    double keys = causal ? attn_keys_seen(last, sq, sk) : (double)sk;
    computed += 128 * ceil(keys / (double)bn) * (double)bn; /* a block computes all 128 rows */
    for (long r = q0; r <= last; r++) pairs += causal ? attn_keys_seen(r, sq, sk) : (double)sk;
  }
  double bh = (double)b * (double)hq;
  w->flops = 4 * d * pairs * bh;
  w->mma_flops = 4 * d * computed * bh;
  w->bytes = (double)b * (2 * 2 * d * ((double)hq * (double)sq + (double)hk * (double)sk) + 4.0 * (double)hq * (double)sq);
  w->trips = 0;
  return 0;
}

const op_desc op_attn_fwd = {
    .name = "attn_fwd",
    .doc = "attention forward: O = softmax(scale Q K^T + causal mask) V, and the row log-sum-exp",
    .skeleton = "attn_fwd.hip.m4",
    .params = attn_params,
    .nparams = ATTN_NPARAMS,
    .check = attn_check,
    .plan = attn_plan,
    .emu_shapes = attn_emu_shapes,
    .work = attn_work,
    .emu_run = attn_emu_run,
};
