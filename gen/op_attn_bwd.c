/* op_attn_bwd.c: attention backward. From Q, K, V, O, dO and attn_fwd's LSE
   it computes dQ, dK and dV (bf16 in and out, fp32 accumulation):
     P_ij = exp(scale q_i.k_j - LSE_i)    (0 where key j is masked)
     D_i  = rowsum(dO_i * O_i)
     dS_ij = P_ij (dO_i.v_j - D_i)
     dV_j = sum_i P_ij dO_i,  dK_j = scale sum_i dS_ij q_i,  dQ_i = scale sum_j dS_ij k_j
   with dK and dV summed over the query heads of each KV head (GQA, MQA).
   The parameters and their cross-check are attn_fwd's (gen/attn.h), so a
   problem either op serves the other serves too.

   Deterministic with no scratch and one launch: the 1-D grid holds two kinds
   of workgroup. KV workgroups (first: they run longest) own KV_BLOCK keys of
   one KV head and walk every query head of its group and every query step
   that sees those keys, keeping dK and dV in registers; each step recomputes
   P, dP and D. Q workgroups own Q_BLOCK queries of one query head, compute
   D once and walk the visible key steps, keeping dQ in registers. The price:
   S = Q K^T and dP = dO V^T are computed twice (by both kinds), 7 GEMM-like
   products per tile pair instead of FlashAttention-2's 5; what it buys: no
   float atomics (run to run the same bits), no fp32 dQ buffer, no second
   kernel for D and nothing for the caller to size. Skeleton:
   templates/attn_bwd.hip.m4.

   sm_90a (templates/attn_bwd.sm90.hip.m4) takes FlashAttention-3's 5
   products instead: only KV blocks, each summing its dQ share into an fp32
   workspace in key-block order (a counter per 64 queries says whose turn it
   is; the last writes bf16), so it stays deterministic at the price of a
   caller-sized workspace and counter array (attn_bwd_scratch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "emutest.h"
#include "op.h"
#include "target.h"

/* Register plan per AMD target: waves per SIMD the registers are planned for,
   per head_dim 64, 96, 128, 192, 256, 0 where that head_dim is not offered.
   tests/pipeline/build_attn_bwd.sh builds every kernel of
   tests/emu/attn_bwd.yaml for gfx942 and gfx950 and fails on any spill.
   Measured (clang-22; gfx90a with comgr), with the KV loop's next step
   loaded into registers under the current one's MFMAs: d64 fits two waves
   (222-252 registers), and d96 on gfx950 (256); gfx942 d96 spills at two
   (one: 270), d128 (312-394) and d192 (417-488) take one. 64-row steps
   (q64), gfx950 d64 and d128 only, at the same waves: one barrier set and D
   sum per 64 queries (before the prefetch, the d128 KV loop took 1014
   instructions per 64 queries against 557 per 32, the Q loop 567 per 64
   keys against 355 per 32); d96 would drop to one wave, d192 run out of
   registers; on gfx942 their LDS halves d64's occupancy (one workgroup per
   CU) and d96 spills SGPRs. d256 spills about 150-200 VGPRs on gfx950
   (dK^T, dV^T, K^T and V^T alone hold 384 of 512) and its KV-step LDS (76
   KB) exceeds the 64 KB of gfx90a and gfx942: not offered. A target without
   a row has no attn_bwd.
   batch (2026-12-02): reading each product's LDS operands together before
   its MFMAs spills gfx942 d64 (4 VGPRs) and d192 (203), gfx950 d64 (70),
   d96 and d192 (212); there they are read where each MFMA takes them. tr:
   gfx950 reads the transposed operands with hk_lds_load_tr_b64 (double-
   buffered steps, one barrier each) except at d64, where that loop spills
   63-67 SGPRs at two waves (causal). */
typedef struct {
  const char *target;
  int waves[5];
  int q64[5];   /* per head_dim: steps of 64 queries and of 64 keys (where the LDS allows) */
  int batch[5]; /* per head_dim: a product's LDS operands read together (attn_bwd.hip.m4 BATCH) */
  int tr[5];    /* per head_dim: transposing reads and double-buffered steps (LDS_TR), on a TGT_LDS_TR target */
} attn_bwd_row;

static const attn_bwd_row attn_bwd_rows[] = {
    {"gfx90a", {1, 1, 1, 1, 0}, {0, 0, 0, 0, 0}, {1, 1, 1, 0, 0}, {0, 0, 0, 0, 0}}, /* not in CI: built and emulated by hand */
    {"gfx942", {2, 1, 1, 1, 0}, {0, 0, 0, 0, 0}, {0, 1, 1, 0, 0}, {0, 0, 0, 0, 0}},
    {"gfx950", {2, 2, 1, 1, 0}, {1, 0, 1, 0, 0}, {0, 0, 1, 0, 0}, {0, 1, 1, 1, 0}},
};
#define ATTN_BWD_NROWS (sizeof attn_bwd_rows / sizeof attn_bwd_rows[0])

static const int attn_bwd_dims[] = {64, 96, 128, 192, 256};

static const attn_bwd_row *attn_bwd_row_for(const char *target) {
  for (size_t i = 0; i < ATTN_BWD_NROWS; i++)
    if (!strcmp(attn_bwd_rows[i].target, target)) return &attn_bwd_rows[i];
  return NULL;
}

/* The index of head_dim d in the rows (-1: none). */
static int attn_bwd_dim_index(long d) {
  for (int i = 0; i < 5; i++)
    if (attn_bwd_dims[i] == d) return i;
  return -1;
}

/* Waves per SIMD for head_dim d on the row's target; 0: not offered. */
static int attn_bwd_waves(const attn_bwd_row *row, long d) {
  int i = attn_bwd_dim_index(d);
  return i < 0 ? 0 : row->waves[i];
}

static void attn_bwd_list(char *out, size_t n, const attn_bwd_row *row) {
  size_t at = 0;
  out[0] = 0;
  for (size_t i = 0; i < (row ? 5 : ATTN_BWD_NROWS); i++) {
    if (row && !row->waves[i]) continue;
    char item[32];
    if (row) snprintf(item, sizeof item, "%d", attn_bwd_dims[i]);
    else snprintf(item, sizeof item, "%s", attn_bwd_rows[i].target);
    at += (size_t)snprintf(out + at, at < n ? n - at : 0, "%s%s", at ? ", " : "", item);
  }
}

/* Hopper's path: wgmma fed by bulk tensor copies (attn_bwd.sm90.hip.m4). */
static int attn_bwd_is_wgmma(const op_inst *k) { return tgt_name_has(k->target, TGT_WGMMA | TGT_TMA); }

static int attn_bwd_check(const op_inst *k, char *msg, size_t n) {
  const attn_bwd_row *row = attn_bwd_row_for(k->target);
  char allowed[128];
  if (attn_bwd_is_wgmma(k)) { /* the wgmma tiles: head_dim 64 or 128 */
    long d = op_int(k, "head_dim");
    if (d != 64 && d != 128) {
      snprintf(msg, n, "head_dim %ld is not available for attn_bwd on %s; allowed there: 64, 128", d, k->target);
      return -1;
    }
    return attn_check(k, msg, n);
  }
  if (!row) {
    attn_bwd_list(allowed, sizeof allowed, NULL);
    snprintf(msg, n, "attn_bwd is not yet available for %s; allowed targets: %s", k->target, allowed);
    return -1;
  }
  if (attn_check(k, msg, n)) return -1;
  long d = op_int(k, "head_dim");
  if (!attn_bwd_waves(row, d)) {
    attn_bwd_list(allowed, sizeof allowed, row);
    snprintf(msg, n, "head_dim %ld is not available for attn_bwd on %s; allowed there: %s", d, k->target,
             allowed);
    return -1;
  }
  return 0;
}

/* LDS of a KV workgroup's steps of `rows` queries (attn_bwd.hip.m4 KV_BYTES),
   rows padded by 16 bytes (d128's with transposing reads by 64, swizzled). With transposing reads (tr): two buffers of Q and
   dO row-major, LSE and 256 / (2 rows) partial sums of D per row; else one
   of Q and dO row-major and transposed, LSE and D per row, and partial sums
   of D per row and 8 columns. */
static long attn_bwd_kv_lds(long d, long rows, int tr) {
  if (tr) return 2 * (2 * rows * (2 * d + (d == 128 ? 64 : 16)) + 4 * rows + 4 * 256 / 2);
  return 2 * rows * (2 * d + 16) + 2 * d * (2 * rows + 16) + 8 * rows + rows * (d / 8) * 4;
}

/* 4 waves. KV workgroups: 32 keys per wave (KV_BLOCK 128), queries in steps
   of 64 (one barrier set and D sum per 64 queries, two S tiles per wave)
   where the row says so and the step's LDS fits the target's, else 32 (Q,
   dO, Q^T and dO^T of a step in LDS). Q workgroups: 32 queries per wave
   (Q_BLOCK 128), keys in steps of 64 or 32 alike (K, V and K^T in LDS; the
   KV step's LDS is the larger). */
static void attn_bwd_plan_amd(const op_inst *k, op_plan *p) {
  long d = op_int(k, "head_dim");
  const attn_bwd_row *row = attn_bwd_row_for(k->target);
  op_plan_tune(p, "waves", attn_bwd_waves(row, d));
  op_plan_tune(p, "kv_block", 128);
  const tgt_info *t = tgt_find(k->target);
  int di = attn_bwd_dim_index(d); /* >= 0: attn_bwd_check passed */
  int tr = tgt_has(t, TGT_LDS_TR) && di >= 0 && row->tr[di];
  int q64 = di >= 0 && row->q64[di] && attn_bwd_kv_lds(d, 64, tr) <= (long)t->lds_unit;
  op_plan_tune(p, "lds_tr", tr);
  op_plan_tune(p, "batch", di >= 0 && row->batch[di]);
  op_plan_tune(p, "q_step", q64 ? 64 : 32);
  op_plan_tune(p, "q_block", 128);
  op_plan_tune(p, "k_step", q64 ? 64 : 32);
  p->block = 256;
}

static const char *const attn_bwd_tensors[] = {"q", "k", "v", "o", "do"};

/* Q, K, V, O, dO, LSE in; dQ (Q's strides), dK (K's), dV (V's) out. */
static void attn_bwd_args(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  static const char *const in[] = {"Q", "K", "V", "O", "dO"};
  for (int i = 0; i < 5; i++) op_arg_add(a, n, "const hk_bf16 *", in[i]);
  op_arg_add(a, n, "const float *", "LSE"); /* [batch][heads_q][seqlen_q], attn_fwd's */
  op_arg_add(a, n, "hk_bf16 *", "dQ");
  op_arg_add(a, n, "hk_bf16 *", "dK");
  op_arg_add(a, n, "hk_bf16 *", "dV");
  for (int i = 0; i < 5; i++) op_arg_strides(a, n, attn_bwd_tensors[i]);
  op_arg_add(a, n, "float", "scale");
  for (int i = 0; i < ATTN_NDIMS; i++)
    if (op_is_any(k, attn_dim_names[i])) op_arg_add(a, n, "int", attn_dim_names[i]);
}

/* One axis: the KV workgroups, then the Q workgroups. */
static void attn_bwd_grid(const op_inst *k, op_plan *p) {
  const char *sq = op_term(k, "seqlen_q"), *sk = op_term(k, "seqlen_k"), *hq = op_term(k, "heads_q"),
             *hk = op_term(k, "heads_k"), *b = op_term(k, "batch");
  snprintf(p->grid[0], OP_FORMULA, "cdiv(%s,%ld)*%s*%s+cdiv(%s,%ld)*%s*%s", sk, op_tune(p, "kv_block"), hk, b,
           sq, op_tune(p, "q_block"), hq, b);
  snprintf(p->grid[1], OP_FORMULA, "1");
  snprintf(p->grid[2], OP_FORMULA, "1");
}

/* Hopper: a block per 128 keys of one KV head (kv_block), two consumer
   warpgroups of 64 keys and a producer warpgroup (384 threads), steps of 64
   queries (q_step) through a ring of `stages' Q, dO (and unless o_slot, O)
   tiles. d_shared (d128): key block 0 of each KV head publishes D =
   rowsum(dO * O) per 64 queries and the other key blocks load no O (H200:
   causal d128 +10-34%, non-causal +5%; d64 -13%, its steps are shorter
   than the fetch). d_pre: D blocks ahead of the key blocks sum D for every
   64 queries and publish it, so no key block loads O or waits on key block
   0's pace; 1 (d64): always, and the ring holds no O; 2 (d128): where the
   grid formula's rule says, measured on the H200 2026-12-02 (GQA 12:4 /
   32:8 8K causal 1.26x / 1.05x, HipKittens' 64:8 B16 1K / 4K non-causal
   1.25x / 1.18x; MHA and 64:8 causal at 128 KV heads x batch no faster,
   64:8 16K non-causal 0.95x). q_major: a block's steps by query block, the
   group's heads in turn at each (bwd_step_at). Shared memory: K and V (2 x 128 x d), the ring (stages x 2 or 3
   x 64 x d), O's own slot (o_slot: 64 x d), dS^T (128 x 64, ds_bufs: two by
   step parity, or one behind a second consumer barrier), the row terms (2
   x 64 floats per stage), dq_bufs dQ buffers (a step's two 64 x 64 fp32
   shares, 32 KiB each, by step parity; a writer frees one once its bulk
   reduce has read it), bar_bytes of mbarriers and 1024 bytes for the
   skeleton's alignment. d128: two stages, O's slot and one dS^T tile make
   room for two dQ buffers (226 KiB); d64: three stages without O (179 KiB); one
   block per multiprocessor either way (the registers). k_step and q_block
   are the estimate's names for the same sizes. */
/* d64 only (the registers): dq_bufs dQ buffers, kv_regs (each consumer warp
   holds its keys of K and V as wgmma A fragments), pipe (the next step's S^T
   and dP^T issued behind the step's dQ product). H200, 2026-12-04, 8K causal
   32:32 B2: 288 TFLOP/s before, 300 with setmaxnreg honoured (HK_BLOCKS_PER_SM),
   307 kv_regs, 300 pipe, 325 both; a third dQ buffer on top: 321. */
#ifndef ATTN_BWD_D64_DQ_BUFS
#define ATTN_BWD_D64_DQ_BUFS 2
#endif
#ifndef ATTN_BWD_D64_KV_REGS
#define ATTN_BWD_D64_KV_REGS 1
#endif
#ifndef ATTN_BWD_D64_PIPE
#define ATTN_BWD_D64_PIPE 1
#endif
/* registers a consumer thread gets from setmaxnreg (the producer warpgroup
   keeps what the block's 384 x 168 leaves) */
#ifndef ATTN_BWD_CONS_REGS
#define ATTN_BWD_CONS_REGS 224
#endif
static void attn_bwd_plan_wgmma(const op_inst *k, op_plan *p) {
  long d = op_int(k, "head_dim");
  op_plan_tune(p, "kv_block", 128);
  op_plan_tune(p, "q_step", 64);
  op_plan_tune(p, "k_step", 128);
  op_plan_tune(p, "q_block", 64);
  op_plan_tune(p, "stages", d == 64 ? 3 : 2);
  op_plan_tune(p, "bar_bytes", 256);
  op_plan_tune(p, "dq_bufs", d == 64 ? ATTN_BWD_D64_DQ_BUFS : 2);
  op_plan_tune(p, "kv_regs", d == 64 && ATTN_BWD_D64_KV_REGS);
  op_plan_tune(p, "pipe", d == 64 && ATTN_BWD_D64_PIPE);
  op_plan_tune(p, "cons_regs", ATTN_BWD_CONS_REGS);
  long pre = d == 64 ? 1 : 2;
  op_plan_tune(p, "d_pre", pre);
  op_plan_tune(p, "d_tiles", 48); /* query tiles per D block: 4 a warp */
  op_plan_tune(p, "q_major", 1);
  op_plan_tune(p, "o_slot", d == 128);
  op_plan_tune(p, "ds_bufs", d == 128 ? 1 : 2);
  op_plan_tune(p, "d_shared", d == 128); /* d64 8K causal: 257 TFLOP/s with it, 297 without */
  p->block = 384;
  long o_slot = op_tune(p, "o_slot"), st_tiles = pre == 1 || o_slot ? 2 : 3;
  p->dynamic_lds = (int)(2 * 128 * d * 2 + op_tune(p, "stages") * st_tiles * 64 * d * 2 + o_slot * 64 * d * 2 +
                         op_tune(p, "ds_bufs") * 128 * 64 * 2 + op_tune(p, "stages") * 2 * 64 * 4 +
                         op_tune(p, "dq_bufs") * 2 * 64 * 64 * 4 + op_tune(p, "bar_bytes") + 1024);
}

/* Whether the Hopper kernel's workspace holds D per 64 queries and a flag per
   tile after the dQ sums (key block 0 or the D blocks publish it). */
static int attn_bwd_reads_d(const op_plan *p) { return op_tune(p, "d_shared") || op_tune(p, "d_pre"); }

/* The dQ scratch of the Hopper kernel (attn_bwd.sm90.hip.m4): per 64-query
   step two 64 x 64 fp32 halves (d128: of the columns; d64: of the keys'
   partial sums), 32 KiB whatever the head_dim (d_shared, d_pre: and the
   step's 64 D values, 33024 bytes), and a counter per step (and a flag),
   zeroed once by the caller (every launch leaves them zero); the arguments,
   their launch rules, then the tensor maps: Q, dO and O in boxes of 64
   columns x 64 queries, K and V of 64 columns x 128 keys, one head each, the
   128-byte swizzle. */
static void attn_bwd_scratch(const op_inst *k, op_plan *p) {
  char rule[OP_FORMULA];
  const char *b = op_term(k, "batch"), *hq = op_term(k, "heads_q"), *sq = op_term(k, "seqlen_q");
  op_arg_add(p->args, &p->nargs, "float *", "workspace");
  op_arg_add(p->args, &p->nargs, "long", "workspace_bytes");
  op_arg_add(p->args, &p->nargs, "int *", "counters");
  op_arg_add(p->args, &p->nargs, "long", "counters_len");
  int shared = attn_bwd_reads_d(p); /* D for 64 queries after each tile, a flag per tile */
  snprintf(rule, sizeof rule, "workspace_bytes >= %s*%s*cdiv(%s,64)*%d", b, hq, sq, shared ? 33024 : 32768);
  op_plan_check(p, rule, shared ? "dQ's fp32 sums and D: batch*heads_q*cdiv(seqlen_q,64)*33024 bytes"
                                : "dQ's fp32 sums: batch*heads_q*cdiv(seqlen_q,64)*32768 bytes");
  snprintf(rule, sizeof rule, "counters_len >= %s%s*%s*cdiv(%s,64)", shared ? "2*" : "", b, hq, sq);
  op_plan_check(p, rule, shared ? "two counters per batch, query head and 64 queries"
                                : "one counter per batch, query head and 64 queries");
  static const char *const qd[] = {"head_dim", "seqlen_q", "heads_q", "batch"};
  static const char *const kd[] = {"head_dim", "seqlen_k", "heads_k", "batch"};
  static const int qbox[] = {64, 64, 1, 1}, kbox[] = {64, 128, 1, 1};
  static const char *const names[] = {"tmap_q", "tmap_k", "tmap_v", "tmap_o", "tmap_do"};
  static const char *const tensors[] = {"Q", "K", "V", "O", "dO"};
  for (int i = 0; i < 5; i++) {
    char ss[3][24];
    const char *st[3] = {ss[0], ss[1], ss[2]};
    snprintf(ss[0], sizeof ss[0], "%s_stride_s", attn_bwd_tensors[i]);
    snprintf(ss[1], sizeof ss[1], "%s_stride_h", attn_bwd_tensors[i]);
    snprintf(ss[2], sizeof ss[2], "%s_stride_b", attn_bwd_tensors[i]);
    int kv = i == 1 || i == 2;
    op_tmap t = op_tmap_make(tensors[i], 4, kv ? kd : qd, st, kv ? kbox : qbox, 128);
    op_arg_tmap(p->args, &p->nargs, names[i], &t);
  }
}

/* Hopper: a block per key block and KV head (at least one per KV head, so
   that a launch without keys still zeroes dQ). */
static void attn_bwd_grid_wgmma(const op_inst *k, op_plan *p) {
  const char *b = op_term(k, "batch"), *hq = op_term(k, "heads_q"), *hk = op_term(k, "heads_k");
  const char *sk = op_term(k, "seqlen_k");
  char keys[OP_FORMULA], when[OP_FORMULA] = "";
  op_formula(keys, "max(cdiv(%s,128),1)*%s*%s", sk, hk, b);
  if (op_tune(p, "d_pre") == 2) { /* GQA: causal where at most 64 KV heads x batch share the grid, else up to 8K keys */
    if (op_int(k, "causal"))
      op_formula(when, "(%s>%s&&%s*%s<=64)*", hq, hk, b, hk);
    else
      op_formula(when, "(%s>%s&&%s<=8192)*", hq, hk, sk);
  }
  if (op_tune(p, "d_pre")) /* the D blocks first, d_tiles query tiles each */
    op_formula(p->grid[0], "%scdiv(%s*%s*cdiv(%s,64),%ld)+%s", when, b, hq, op_term(k, "seqlen_q"),
               op_tune(p, "d_tiles"), keys);
  else
    op_formula(p->grid[0], "%s", keys);
  snprintf(p->grid[1], OP_FORMULA, "1");
  snprintf(p->grid[2], OP_FORMULA, "1");
}

static void attn_bwd_plan(const op_inst *k, op_plan *p) {
  int wg = attn_bwd_is_wgmma(k);
  if (wg) attn_bwd_plan_wgmma(k, p);
  else attn_bwd_plan_amd(k, p);
  attn_bwd_args(k, p);
  if (wg) {
    attn_bwd_scratch(k, p);
    attn_bwd_grid_wgmma(k, p);
  } else {
    attn_bwd_grid(k, p);
  }
  op_plan_check(p, "heads_q % heads_k == 0", "heads_q must be a multiple of heads_k (GQA groups)");
  for (int i = 0; i < 5; i++) {
    char rule[OP_FORMULA];
    const char *t = attn_bwd_tensors[i];
    snprintf(rule, sizeof rule, "%s_stride_b >= 0 && %s_stride_s >= 0 && %s_stride_h >= 0", t, t, t);
    op_plan_check(p, rule, "strides are element counts, not negative");
  }
  for (int i = 0; wg && i < 5; i++) {
    char rule[OP_FORMULA], why[96];
    const char *t = attn_bwd_tensors[i];
    snprintf(rule, sizeof rule, "%s_stride_b%%8==0 && %s_stride_s%%8==0 && %s_stride_h%%8==0", t, t, t);
    snprintf(why, sizeof why, "%s strides must be multiples of 8 elements on %s (bulk tensor copies)", t, k->target);
    op_plan_check(p, rule, why);
    snprintf(rule, sizeof rule, "%s_stride_b > 0 && %s_stride_s > 0 && %s_stride_h > 0", t, t, t);
    snprintf(why, sizeof why, "%s strides must be positive on %s (bulk tensor copies)", t, k->target);
    op_plan_check(p, rule, why);
  }
}

/* The cliff head counts (12:12, 12:4, 40:8, 7:1 MQA, 6:2), one query and one
   key, odd lengths, seqlen_q > seqlen_k (causal rows with no key) and <,
   batch 2, and lengths over several 128-row blocks with a partial last one. */
static int attn_bwd_emu_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const long cases[][5] = {{1, 37, 37, 12, 12}, {1, 1, 1, 1, 1},   {2, 65, 129, 6, 2},
                                  {1, 130, 97, 7, 1},  {1, 33, 70, 40, 8}, {1, 129, 129, 12, 4},
                                  {1, 300, 270, 2, 1}};
  return et_shapes_from_cases(k, attn_dim_names, ATTN_NDIMS, &cases[0][0], (int)(sizeof cases / sizeof cases[0]),
                              attn_case_fits, out, max);
}

typedef struct {
  long B, Sq, Sk, HQ, HK, D;
  int causal;
  int aligned; /* sm_90a (bulk tensor copies): no odd strides */
  double scale;
  attn_layout lq, lk, lv, lo, ldo;
  unsigned short *q, *k, *v, *o, *dout; /* host copies; o is the bf16 forward */
  double *lse;                         /* fp64, [b][h][i] */
} attn_bwd_prob;

/* Tensor t of layout l (S rows, H heads) as doubles in [b][h][s][d] order. */
static double *attn_bwd_dense(const unsigned short *t, const attn_layout *l, long B, long S, long H, long D) {
  double *g = malloc((size_t)(B * H * S * D) * sizeof *g + 8);
  for (long b = 0, at = 0; b < B; b++)
    for (long h = 0; h < H; h++)
      for (long s = 0; s < S; s++)
        for (long d = 0; d < D; d++) g[at++] = et_from_bf16(t[b * l->sb + s * l->ss + h * l->sh + d]);
  return g;
}

static double attn_bwd_dot(const double *x, const double *y, long n) {
  double s = 0;
  for (long i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}

/* fp64 gradients of one (b, h) pair (h reads KV head h / (HQ / HK)) from the
   dense q, k, v, o, dout, added into dq[Sq][D] and into dk, dv [Sk][D] of the
   pair's KV head. D_i comes from the bf16 O the kernel sees. */
static void attn_bwd_ref_head(const attn_bwd_prob *p, const double *const *t, long b, long h, double *dq,
                              double *dk, double *dv) {
  long Sq = p->Sq, Sk = p->Sk, D = p->D, hk = h / (p->HQ / p->HK);
  const double *q = t[0] + (b * p->HQ + h) * Sq * D, *o = t[3] + (b * p->HQ + h) * Sq * D;
  const double *dout = t[4] + (b * p->HQ + h) * Sq * D;
  const double *k = t[1] + (b * p->HK + hk) * Sk * D, *v = t[2] + (b * p->HK + hk) * Sk * D;
  const double *lse = p->lse + (b * p->HQ + h) * Sq;
  for (long i = 0; i < Sq; i++) {
    if (isinf(lse[i])) continue; /* no visible key: no gradient */
    const double *qi = q + i * D, *gi = dout + i * D;
    double di = attn_bwd_dot(gi, o + i * D, D);
    for (long j = 0; j < Sk; j++) {
      if (p->causal && j > i + (Sk - Sq)) continue;
      double pij = exp(attn_bwd_dot(qi, k + j * D, D) * p->scale - lse[i]);
      double ds = p->scale * pij * (attn_bwd_dot(gi, v + j * D, D) - di);
      for (long d = 0; d < D; d++) {
        dv[j * D + d] += pij * gi[d];
        dk[j * D + d] += ds * qi[d];
        dq[i * D + d] += ds * k[j * D + d];
      }
    }
  }
}

/* Rows of D + 1 elements (an odd stride: the kernel's element loads instead
   of its 16-byte ones), BHSD or BSHD. */
static attn_layout attn_bwd_odd_rows(long B, long S, long H, long D, int bhsd) {
  attn_layout l;
  long row = D + 1;
  l.ss = bhsd ? row : H * row;
  l.sh = bhsd ? S * row : row;
  l.sb = bhsd ? H * l.sh : S * l.ss;
  l.elems = B * l.sb;
  return l;
}

/* Inputs: Q, K, V, dO random; O (bf16) and LSE (fp32 to the kernel) from the
   fp64 forward, so that they are consistent with Q, K and V. One run in
   three gives V and dO odd strides (not on sm_90a, whose copies need
   multiples of 8). */
static void attn_bwd_inputs(et_ctx *c, attn_bwd_prob *p) {
  int bhsd = (int)(et_rand(c) % 2), odd = et_rand(c) % 3 == 0 && !p->aligned;
  if (et_dense(c)) bhsd = odd = 0; /* timed: BSHD, no odd strides (V and dO still take the other layout) */
  p->lq = attn_make_layout(c, p->B, p->Sq, p->HQ, p->D, bhsd);
  p->lk = attn_make_layout(c, p->B, p->Sk, p->HK, p->D, bhsd);
  p->lv = odd ? attn_bwd_odd_rows(p->B, p->Sk, p->HK, p->D, !bhsd) : attn_make_layout(c, p->B, p->Sk, p->HK, p->D, !bhsd);
  p->lo = attn_make_layout(c, p->B, p->Sq, p->HQ, p->D, bhsd);
  p->ldo = odd ? attn_bwd_odd_rows(p->B, p->Sq, p->HQ, p->D, !bhsd) : attn_make_layout(c, p->B, p->Sq, p->HQ, p->D, !bhsd);
  p->q = attn_random(c, p->lq.elems);
  p->k = attn_random(c, p->lk.elems);
  p->v = attn_random(c, p->lv.elems);
  p->dout = attn_random(c, p->ldo.elems);
  p->o = calloc((size_t)p->lo.elems + 1, 2);
  p->lse = malloc((size_t)(p->B * p->HQ * p->Sq) * sizeof *p->lse);
  double *out = malloc((size_t)(p->Sq * p->D) * sizeof *out);
  for (long b = 0; b < p->B; b++)
    for (long h = 0; h < p->HQ; h++) {
      attn_ref_head(p->q, p->k, p->v, &p->lq, &p->lk, &p->lv, b, h, h / (p->HQ / p->HK), p->Sq, p->Sk, p->D,
                    p->causal, p->scale, out, p->lse + (b * p->HQ + h) * p->Sq);
      for (long i = 0; i < p->Sq; i++)
        for (long d = 0; d < p->D; d++)
          p->o[b * p->lo.sb + i * p->lo.ss + h * p->lo.sh + d] = et_to_bf16(out[i * p->D + d]);
    }
  free(out);
}

static void attn_bwd_free(attn_bwd_prob *p) {
  free(p->q);
  free(p->k);
  free(p->v);
  free(p->o);
  free(p->dout);
  free(p->lse);
}

static void *attn_bwd_put(et_ctx *c, const char *name, const void *host, size_t bytes) {
  void *d = et_alloc(c, bytes);
  if (host) et_upload(c, d, host, bytes);
  et_arg_ptr(c, name, d);
  return d;
}

/* The kernel's gradient of tensor layout l (S rows, H heads) gathered into
   [b][h][s][d] order. */
/* The kernel's gradient of tensor layout l (S rows, H heads) in [b][h][s][d] order. */
static double *attn_bwd_gather(et_ctx *c, const void *dev, const attn_layout *l, long B, long S, long H,
                               long D) {
  unsigned short *h = malloc((size_t)l->elems * 2 + 2);
  et_download(c, h, dev, (size_t)l->elems * 2);
  double *g = attn_bwd_dense(h, l, B, S, H, D);
  free(h);
  return g;
}

/* The worst relative L2 error of dQ, dK, dV (noted when not dQ's), and +inf
   when a query row with no visible key has a dQ other than exactly zero. */
static double attn_bwd_compare(et_ctx *c, const attn_bwd_prob *p, void *ddq, void *ddk, void *ddv) {
  long B = p->B, Sq = p->Sq, Sk = p->Sk, HQ = p->HQ, HK = p->HK, D = p->D;
  size_t nq = (size_t)(B * HQ * Sq * D), nk = (size_t)(B * HK * Sk * D);
  double *rq = calloc(nq + 1, sizeof *rq), *rk = calloc(nk + 1, sizeof *rk), *rv = calloc(nk + 1, sizeof *rv);
  double *t[5] = {attn_bwd_dense(p->q, &p->lq, B, Sq, HQ, D), attn_bwd_dense(p->k, &p->lk, B, Sk, HK, D),
                  attn_bwd_dense(p->v, &p->lv, B, Sk, HK, D), attn_bwd_dense(p->o, &p->lo, B, Sq, HQ, D),
                  attn_bwd_dense(p->dout, &p->ldo, B, Sq, HQ, D)};
  for (long b = 0; b < B; b++)
    for (long h = 0; h < HQ; h++) {
      long kv = (b * HK + h / (HQ / HK)) * Sk * D;
      attn_bwd_ref_head(p, (const double *const *)t, b, h, rq + (b * HQ + h) * Sq * D, rk + kv, rv + kv);
    }
  for (int i = 0; i < 5; i++) free(t[i]);
  double *gq = attn_bwd_gather(c, ddq, &p->lq, B, Sq, HQ, D), *gk = attn_bwd_gather(c, ddk, &p->lk, B, Sk, HK, D);
  double *gv = attn_bwd_gather(c, ddv, &p->lv, B, Sk, HK, D);
  double e[3] = {et_rel_l2(rq, gq, nq), et_rel_l2(rk, gk, nk), et_rel_l2(rv, gv, nk)};
  static const char *const names[] = {"dQ", "dK", "dV"};
  int worst = e[1] > e[0] ? 1 : 0;
  worst = e[2] > e[worst] ? 2 : worst;
  double err = e[worst];
  long empty = 0, bad = 0;
  for (long r = 0; r < B * HQ * Sq; r++) {
    if (!isinf(p->lse[r])) continue;
    empty++;
    for (long d = 0; d < D; d++)
      if (gq[r * D + d] != 0.0) bad++;
  }
  if (bad) {
    et_note(c, "%ld dQ elements of %ld rows with no visible key are not zero", bad, empty);
    err = INFINITY;
  } else if (worst) {
    et_note(c, "%s error %.3e (dQ %.3e)%s", names[worst], err, e[0], empty ? "; keyless rows' dQ zero" : "");
  } else if (empty) {
    et_note(c, "%ld rows with no visible key: dQ zero", empty);
  }
  free(rq);
  free(rk);
  free(rv);
  free(gq);
  free(gk);
  free(gv);
  return err;
}

/* Determinism: the gradients of a second launch, on outputs poisoned again,
   are bit for bit the first's (the emulator runs waves in a seeded random
   order between barriers). 0 when they are, -1 (noted) when not or when the
   launch fails. */
static int attn_bwd_again(et_ctx *c, void *const *dev, const size_t *bytes) {
  unsigned char *first[3] = {0}, *again = NULL;
  int rc = 0;
  for (int i = 0; i < 3; i++) {
    first[i] = malloc(bytes[i] + 1);
    et_download(c, first[i], dev[i], bytes[i]);
    memset(first[i] + bytes[i], 0, 1);
    unsigned char *poison = malloc(bytes[i] + 1);
    memset(poison, 0xff, bytes[i] + 1);
    et_upload(c, dev[i], poison, bytes[i]);
    free(poison);
  }
  if (et_launch(c)) rc = -1;
  for (int i = 0; i < 3 && rc == 0; i++) {
    again = malloc(bytes[i] + 1);
    et_download(c, again, dev[i], bytes[i]);
    if (memcmp(first[i], again, bytes[i])) {
      et_note(c, "%s differs between two launches", i == 0 ? "dQ" : i == 1 ? "dK" : "dV");
      rc = -1;
    }
    free(again);
  }
  for (int i = 0; i < 3; i++) free(first[i]);
  return rc;
}

/* Whether k's plan has argument `name' (sm_90a: the dQ scratch). */
static int attn_bwd_has_arg(const op_inst *k, const char *name) {
  for (int i = 0; k->plan && i < k->plan->nargs; i++)
    if (!strcmp(k->plan->args[i].name, name)) return 1;
  return 0;
}

/* The sm_90a kernel's dQ scratch (`hkgen test --device`): the workspace
   and the counters of the launch rules, zeroed (the counters must be). */
static void attn_bwd_scratch_args(et_ctx *c, const op_inst *k, const attn_bwd_prob *p) {
  size_t steps = (size_t)(p->B * p->HQ * ((p->Sq + 63) / 64));
  size_t shared = (size_t)attn_bwd_reads_d(k->plan);
  size_t wsb = steps * (shared ? 33024 : 32768), cnb = steps * 4 * (shared ? 2 : 1);
  void *zero = calloc(wsb > cnb ? wsb : cnb, 1);
  void *ws = et_alloc(c, wsb), *cnt = et_alloc(c, cnb);
  et_upload(c, ws, zero, wsb);
  et_upload(c, cnt, zero, cnb);
  free(zero);
  et_arg_ptr(c, "workspace", ws);
  et_arg_int(c, "workspace_bytes", (long)wsb);
  et_arg_ptr(c, "counters", cnt);
  et_arg_int(c, "counters_len", (long)(cnb / 4));
}

static int attn_bwd_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
  attn_bwd_prob p = {0};
#define ATTN_VAL(n) shape[op_param_index(k->op, n)]
  p.B = ATTN_VAL("batch"), p.Sq = ATTN_VAL("seqlen_q"), p.Sk = ATTN_VAL("seqlen_k");
  p.HQ = ATTN_VAL("heads_q"), p.HK = ATTN_VAL("heads_k");
#undef ATTN_VAL
  p.D = op_int(k, "head_dim");
  if (p.HK < 1 || p.HQ % p.HK) { /* possible through --shape; the spec checks baked values */
    et_note(c, "heads_q (%ld) must be a multiple of heads_k (%ld)", p.HQ, p.HK);
    return -1;
  }
  p.causal = (int)op_int(k, "causal");
  p.scale = 1.0 / sqrt((double)p.D);
  p.aligned = attn_bwd_has_arg(k, "workspace");
  attn_bwd_inputs(c, &p);
  long nl = p.B * p.HQ * p.Sq;
  float *lse32 = malloc((size_t)nl * 4 + 4);
  for (long i = 0; i < nl; i++) lse32[i] = (float)p.lse[i];
  attn_bwd_put(c, "Q", p.q, (size_t)p.lq.elems * 2);
  attn_bwd_put(c, "K", p.k, (size_t)p.lk.elems * 2);
  attn_bwd_put(c, "V", p.v, (size_t)p.lv.elems * 2);
  attn_bwd_put(c, "O", p.o, (size_t)p.lo.elems * 2);
  attn_bwd_put(c, "dO", p.dout, (size_t)p.ldo.elems * 2);
  attn_bwd_put(c, "LSE", lse32, (size_t)nl * 4);
  void *ddq = attn_bwd_put(c, "dQ", NULL, (size_t)p.lq.elems * 2); /* poisoned by et_alloc */
  void *ddk = attn_bwd_put(c, "dK", NULL, (size_t)p.lk.elems * 2);
  void *ddv = attn_bwd_put(c, "dV", NULL, (size_t)p.lv.elems * 2);
  const attn_layout *ls[] = {&p.lq, &p.lk, &p.lv, &p.lo, &p.ldo};
  for (int i = 0; i < 5; i++) et_arg_strides(c, attn_bwd_tensors[i], ls[i]->sb, ls[i]->ss, ls[i]->sh);
  et_arg_float(c, "scale", p.scale);
  long vals[ATTN_NDIMS] = {p.B, p.Sq, p.Sk, p.HQ, p.HK};
  for (int i = 0; i < ATTN_NDIMS; i++)
    if (op_is_any(k, attn_dim_names[i])) et_arg_int(c, attn_dim_names[i], vals[i]);
  if (attn_bwd_has_arg(k, "workspace")) attn_bwd_scratch_args(c, k, &p);
  int rc = et_launch(c);
  if (rc == 0) *err = attn_bwd_compare(c, &p, ddq, ddk, ddv);
  /* the grouped cases with few rows launch twice: same bits or fail */
  void *const dev[3] = {ddq, ddk, ddv};
  const size_t bytes[3] = {(size_t)p.lq.elems * 2, (size_t)p.lk.elems * 2, (size_t)p.lv.elems * 2};
  if (rc == 0 && p.HQ >= 12 && p.Sq * p.Sk <= 5000 && attn_bwd_again(c, dev, bytes)) *err = INFINITY;
  free(lse32);
  attn_bwd_free(&p);
  return rc;
}

/* The estimate's work: 2.5 times the forward's FLOPs (4 d per visible
   (query, key) pair; the convention of the published backward figures).
   Matrix FLOPs issued: KV workgroups 4 products of 2 q_step x 128 x d per
   step from the first query step that sees their keys, over the group's
   query heads; Q workgroups 3 products of 2 x 128 x k_step x d per key
   step up to the block's last visible key. Bytes: Q, K, V, O, dO and LSE
   read, dQ, dK, dV written, once. */
static int attn_bwd_work(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n) {
#define ATTN_VAL(name) shape[op_param_index(k->op, name)]
  long b = ATTN_VAL("batch"), sq = ATTN_VAL("seqlen_q"), sk = ATTN_VAL("seqlen_k"), hq = ATTN_VAL("heads_q"),
       hk = ATTN_VAL("heads_k");
#undef ATTN_VAL
  long qs = op_tune(k->plan, "q_step"), ks = op_tune(k->plan, "k_step"), kvb = op_tune(k->plan, "kv_block");
  if (qs <= 0 || ks <= 0 || kvb <= 0 || hk < 1 || hq % hk) {
    snprintf(msg, n, "kernel %s: no attn_bwd plan for this problem", k->name);
    return -1;
  }
  int causal = (int)op_int(k, "causal");
  double d = (double)op_int(k, "head_dim"), pairs = 0, kv = 0, qw = 0;
  for (long r = 0; r < sq; r++) pairs += causal ? attn_keys_seen(r, sq, sk) : (double)sk;
  for (long k0 = 0; k0 < sk; k0 += kvb) {
    long first = causal ? k0 - (sk - sq) : 0;
    first = first > 0 ? first : 0;
    if (first < sq) kv += (double)((sq + qs - 1) / qs - first / qs); /* steps of one query head */
  }
  for (long q0 = 0; q0 < sq; q0 += 128) {
    long last = q0 + 127 < sq ? q0 + 127 : sq - 1;
    qw += ceil((causal ? attn_keys_seen(last, sq, sk) : (double)sk) / (double)ks);
  }
  double bh = (double)b * (double)hq;
  w->flops = 2.5 * 4 * d * pairs * bh;
  w->mma_flops = bh * (kv * 4 * 2 * (double)qs * (double)kvb * d + qw * 3 * 2 * 128 * (double)ks * d);
  w->bytes = (double)b * (2 * d * (4 * (double)hq * (double)sq + 4 * (double)hk * (double)sk) + 4.0 * (double)hq * (double)sq);
  w->trips = 0;
  return 0;
}

/* attn_bwd_work as formulas: the KV workgroups' (query step, key block)
   tiles and the Q workgroups' (128 queries, key step) tiles, ctiles of the
   bottom-right causal mask or all of them. */
static void attn_bwd_work_formula(const op_inst *k, char *mma_flops, char *bytes) {
  const char *b = op_term(k, "batch"), *sq = op_term(k, "seqlen_q"), *sk = op_term(k, "seqlen_k"),
             *hq = op_term(k, "heads_q"), *hk = op_term(k, "heads_k");
  long qs = op_tune(k->plan, "q_step"), ks = op_tune(k->plan, "k_step"), kvb = op_tune(k->plan, "kv_block");
  long d = op_int(k, "head_dim");
  if (qs <= 0 || ks <= 0 || kvb <= 0) return;
  char kv[OP_FORMULA], qw[OP_FORMULA];
  if (op_int(k, "causal")) {
    op_formula(kv, "ctiles(%s,%s,%ld,%ld)", sq, sk, qs, kvb);
    op_formula(qw, "ctiles(%s,%s,128,%ld)", sq, sk, ks);
  } else {
    op_formula(kv, "cdiv(%s,%ld)*cdiv(%s,%ld)", sq, qs, sk, kvb);
    op_formula(qw, "cdiv(%s,128)*cdiv(%s,%ld)", sq, sk, ks);
  }
  op_formula(mma_flops, "%s*%s*(%s*%ld+%s*%ld)", b, hq, kv, 8 * qs * kvb * d, qw, 6 * 128 * ks * d);
  op_formula(bytes, "%s*(%ld*(%s*%s+%s*%s)+4*%s*%s)", b, 8 * d, hq, sq, hk, sk, hq, sq);
}

const op_desc op_attn_bwd = {
    .name = "attn_bwd",
    .doc = "attention backward: dQ, dK, dV from Q, K, V, O, dO and attn_fwd's LSE (deterministic; sm_90a: dQ scratch)",
    .skeleton = "attn_bwd.hip.m4",
    .params = attn_params,
    .nparams = ATTN_NPARAMS,
    .check = attn_bwd_check,
    .plan = attn_bwd_plan,
    .emu_shapes = attn_bwd_emu_shapes,
    .emu_run = attn_bwd_emu_run,
    .work = attn_bwd_work,
    .work_formula = attn_bwd_work_formula,
    .bench_shape = "batch=4,seqlen_q=2048,seqlen_k=2048,heads_q=32,heads_k=8",
};
