/* op_attn_decode.c: attention decode over a paged KV cache (vLLM's layout),
   for serving: a few query tokens per sequence (1 to 16: decode, speculative
   decoding, chunked prefill) against the sequence's cached keys.

     KV  [2][num_blocks][block_size][heads_k][head_dim]  bf16, K at 0, V at 1
     block_tables [batch][max_blocks] int32: page of the sequence's keys
         block_size*i .. block_size*(i+1)-1
     seq_lens [batch] int32: keys of sequence b (its q tokens included)
     Q, O [batch][q_tokens][heads_q][head_dim] bf16 (contiguous)
     LSE [batch][heads_q][q_tokens] fp32, natural log

   Token t of sequence b sits at position seq_lens[b] - q_tokens + t and sees
   keys 0 .. that position (causal among the q tokens); a token that sees no
   key gives O = 0 and LSE = -inf. attn_fwd's masks and logit transforms,
   each baked in or out: a sliding window (window_left keys before the
   position; -1: none), attention sinks (a logit per query head in every
   row's denominator, no value) and soft-capping (cap * tanh(s / cap) of
   the scaled logit s). bf16 in and out, fp32 softmax and
   accumulation, scale an argument. kv_dtype fp8_e4m3: the cache holds e4m3
   codes (the target's encoding, dec_fp8_fnuz) times per-tensor k_scale and
   v_scale, widened to bf16 in software as the pages are staged.

   GQA packing: a workgroup takes all q_tokens x (heads_q / heads_k) query
   rows of one KV head, up to 128 (4 waves of 32 MFMA rows; more rows use
   more workgroups), so each K/V page is read once per group.

   Split-KV: grid x splits each sequence's keys in ranges of whole tiles
   (64 keys, 32 on gfx942 at head_dim 128) when batch x heads_k cannot fill
   the device (the split formula below reads device_units). Splits merge in
   the same launch: each split writes its rows' unnormalised O, running max
   and sum to the caller's workspace, fences (device scope), and adds 1 to
   the group's counter; the workgroup that brings the counter to the split
   count merges the partials in split order (so the result does not depend
   on which split finishes last: the same bits run to run), writes O and
   LSE, and sets the counter back to 0. Why not a second merge kernel: the
   catalogue holds one kernel per problem and libhkrt launches one, a
   second launch costs as much as a small decode step itself (decode is
   launch-bound at small batch), and O would make a round trip through
   fp32 scratch either way; here the price is one atomic per workgroup and
   the last split's read of the partials (splits x rows x (head_dim + 2)
   floats, small next to the pages), plus a workspace and a counter array
   that the caller zeroes once (every launch leaves it zero; launches that
   share them must not overlap). With one split (grid x = 1) neither is
   touched. sm_90a merges more than DEC_SM90_GROUP splits in two levels
   (a counter per group of them too: the counters rule is sm_90a's own). No workgroup waits for another, so no schedule can deadlock.

   The contract on device data (not checked by libhkrt: it never reads
   device memory): 0 <= seq_lens[b] <= max_blocks * block_size (the kernel
   clamps it into that range) and every table entry a sequence uses in
   0 .. num_blocks - 1. check_tables: true adds the check to the kernel: a
   sequence that breaks it reads no key, its outputs are undefined, and the
   lowest such sequence is written to table_error (atomic minimum; the
   caller fills it with 0xff bytes first, and 0xffffffff after the launch
   means no fault); the emulator stops there naming the sequence, entry and
   value. Skeletons: templates/attn_decode.hip.m4 (AMD),
   templates/attn_decode.sm90.hip.m4 (sm_90a: blocks of 8 warps over up to
   32 query rows, each warp its own 16-key tiles through a cp.async ring,
   mma.sync; dec_plan_sm90; head_dim 64 and 128). On sm_90a the e4m3 encoding is OCP's, and an
   fp8 cache's Q . K and P V products run in fp16 (the codes widen to fp16
   exactly; Q rounds to fp16: magnitudes past 65504 overflow, below 2^-14
   lose bits) with k_scale and v_scale applied in fp32. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emutest.h"
#include "op.h"
#include "target.h"

static const char *const dec_dtypes[] = {"bf16", NULL};
static const char *const dec_kv_dtypes[] = {"bf16", "fp8_e4m3", NULL};
static const char *const dec_dims[] = {"64", "128", "256", NULL};
static const char *const dec_block_sizes[] = {"16", "32", "64", NULL};

#define DEC_INT(n, tag, lo, hi, d) {n, OP_INT, NULL, lo, hi, OP_ANY, 1, tag, d}

static const op_param dec_params[] = {
    {"dtype", OP_ENUM, dec_dtypes, 0, 0, "bf16", 0, "", "element type of Q and O"},
    {"kv_dtype", OP_ENUM, dec_kv_dtypes, 0, 0, "bf16", 0, "kv",
     "element type of the KV cache: bf16, or fp8 e4m3 in the target's encoding (FNUZ on gfx942, OCP on "
     "gfx950) with per-tensor scales k_scale, v_scale"},
    {"head_dim", OP_ENUM, dec_dims, 0, 0, "128", 0, "d", "elements per head"},
    {"block_size", OP_ENUM, dec_block_sizes, 0, 0, "16", 0, "bs", "keys per page of the KV cache"},
    {"check_tables", OP_BOOL, NULL, 0, 0, "false", 0, "chk",
     "check seq_lens and block_tables on the device, recording a bad sequence in table_error"},
    DEC_INT("batch", "b", 1, 1L << 20, "sequences per launch"),
    DEC_INT("q_tokens", "qt", 1, 16, "query tokens per sequence (its last positions)"),
    DEC_INT("heads_q", "hq", 1, 1024, "query heads"),
    DEC_INT("heads_k", "hk", 1, 1024, "key/value heads (heads_q must be a multiple)"),
    DEC_INT("max_blocks", "mb", 1, 1L << 24, "entries per block-table row"),
    DEC_INT("num_blocks", "nb", 1, 1L << 30, "pages in the KV cache"),
    {"window_left", OP_INT, NULL, -1, 1L << 30, "-1", 1, "wl",
     "sliding window: keys before the token's position it sees; -1: all"},
    {"sinks", OP_BOOL, NULL, 0, 0, "false", 0, "snk",
     "a learned logit per query head (float sinks[heads_q]) joins each row's softmax denominator"},
    {"softcap", OP_FLOAT, NULL, 0, 0, "0", 0, "sc", "logit soft cap: cap * tanh(scale q.k / cap) (left out: none)"},
};
#define DEC_NPARAMS (int)(sizeof dec_params / sizeof dec_params[0])

/* Query rows per workgroup on AMD (4 waves of 32): the skeleton's plan
   (attn_decode.hip.m4 static_asserts it); sm_90a's is the plan's "rows". */
#define DEC_ROWS 128
/* Keys a split takes at least: fewer would make the merge cost more than it
   saves. */
#define DEC_MIN_SPLIT 256

static const char *const dec_targets = "gfx942, gfx950, sm_90a";

/* Hopper's path: mma.sync fed by cp.async (attn_decode.sm90.hip.m4). */
static int dec_is_sm90(const op_inst *k) { return tgt_name_has(k->target, TGT_WGMMA | TGT_TMA); }

static int dec_check(const op_inst *k, char *msg, size_t n) {
  if (strcmp(k->target, "gfx942") && strcmp(k->target, "gfx950") && !dec_is_sm90(k)) {
    snprintf(msg, n, "attn_decode is not yet available for %s; allowed targets: %s", k->target, dec_targets);
    return -1;
  }
  if (dec_is_sm90(k) && op_int(k, "head_dim") > 128) {
    /* a warp holds O for all its rows: 128 registers at d256, which spill */
    snprintf(msg, n, "head_dim %ld is not yet available for %s; allowed there: 64, 128", op_int(k, "head_dim"),
             k->target);
    return -1;
  }
  if (!op_is_any(k, "heads_q") && !op_is_any(k, "heads_k") && op_int(k, "heads_q") % op_int(k, "heads_k")) {
    snprintf(msg, n, "heads_q (%ld) must be a multiple of heads_k (%ld)", op_int(k, "heads_q"),
             op_int(k, "heads_k"));
    return -1;
  }
  return 0;
}

/* Keys per tile: 64, or 32 where a 64-key stage (K as [key][d], V^T as
   [d][key], rows padded by 16 bytes) leaves no room for two workgroups per
   compute unit (gfx942 at head_dim 128: 35 KiB of its 64). */
static long dec_tile_keys(const op_inst *k) {
  long d = op_int(k, "head_dim");
  long stage = 64 * (d * 2 + 16) + d * (64 * 2 + 16) + 16;
  return stage <= (long)tgt_find(k->target)->lds_unit / 2 ? 64 : 32;
}

/* The split count: up to the plan's "per_unit" workgroups per compute unit
   over batch x heads_k (AMD 2, rounded up; sm_90a 1 block of 8 warps per
   multiprocessor, rounded down, so that the splits fit in one wave: the
   one block that merges a group reads every split's partial, so fewer,
   larger splits), at most one split per DEC_MIN_SPLIT keys of the table. */
static void dec_splits(const op_inst *k, const op_plan *p, char *out) {
  if (dec_is_sm90(k)) /* rounded down: 136 blocks on 132 multiprocessors took a second wave (8B, batch 1) */
    op_formula(out, "min(cdiv(%s*%ld,%d),max(1,device_units/(%s*%s)))", op_term(k, "max_blocks"),
               op_int(k, "block_size"), DEC_MIN_SPLIT, op_term(k, "batch"), op_term(k, "heads_k"));
  else
    op_formula(out, "min(cdiv(%s*%ld,%d),cdiv(device_units*%ld,%s*%s))", op_term(k, "max_blocks"),
               op_int(k, "block_size"), DEC_MIN_SPLIT, op_tune(p, "per_unit"), op_term(k, "batch"),
               op_term(k, "heads_k"));
}

/* Row groups of `rows' query rows per KV head. */
static void dec_row_groups(const op_inst *k, long rows, char *out) {
  op_formula(out, "cdiv(%s*(%s/%s),%ld)", op_term(k, "q_tokens"), op_term(k, "heads_q"), op_term(k, "heads_k"),
             rows);
}

static int dec_fp8(const op_inst *k) { return !strcmp(op_val(k, "kv_dtype"), "fp8_e4m3"); }

/* The e4m3 encoding of the target's own fp8 instructions, which serving
   stacks store their caches in: FNUZ (bias 8, no infinities, 0x80 the only
   NaN) on gfx942, OCP (bias 7, 0x7f and 0xff NaN) on gfx950. */
static int dec_fp8_fnuz(const char *target) { return !strcmp(target, "gfx942"); }

static void dec_args(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int *n = &p->nargs;
  op_arg_add(a, n, "const hk_bf16 *", "Q");
  /* fp8: codes read 4 to a 32-bit word (the cache's rows are head_dim
     bytes, a multiple of 4) */
  op_arg_add(a, n, dec_fp8(k) ? "const unsigned *" : "const hk_bf16 *", "KV");
  op_arg_add(a, n, "const int *", "block_tables");
  op_arg_add(a, n, "const int *", "seq_lens");
  op_arg_add(a, n, "hk_bf16 *", "O");
  op_arg_add(a, n, "float *", "LSE");
  op_arg_add(a, n, "float *", "workspace");
  op_arg_add(a, n, "long", "workspace_bytes");
  op_arg_add(a, n, "int *", "counters");
  op_arg_add(a, n, "long", "counters_len");
  op_arg_add(a, n, "float", "scale");
  if (dec_fp8(k)) {
    op_arg_add(a, n, "float", "k_scale");
    op_arg_add(a, n, "float", "v_scale");
  }
  static const char *const dims[] = {"batch", "q_tokens", "heads_q", "heads_k", "max_blocks", "num_blocks"};
  for (int i = 0; i < 6; i++)
    if (op_is_any(k, dims[i])) op_arg_add(a, n, "int", dims[i]);
  if (op_is_any(k, "window_left")) op_arg_add(a, n, "int", "window_left");
  if (op_int(k, "sinks")) op_arg_add(a, n, "const float *", "sinks");
  if (op_int(k, "check_tables")) op_arg_add(a, n, "unsigned *", "table_error");
}

/* The AMD plan: 4 waves of 32 MFMA rows, tiles of block_n keys through LDS. */
static void dec_plan_amd(const op_inst *k, op_plan *p) {
  op_plan_tune(p, "block_n", dec_tile_keys(k));
  op_plan_tune(p, "fp8_fnuz", dec_fp8_fnuz(k->target));
  op_plan_tune(p, "rows", DEC_ROWS);
  /* registers for 2 waves per SIMD up to head_dim 128 (at most 196 VGPRs on
     gfx942, 246 on gfx950: tests/pipeline/build_attn_decode.sh); 256 holds
     its O tile and Q operands at 1 (290-354 VGPRs with AGPRs) */
  op_plan_tune(p, "waves", op_int(k, "head_dim") > 128 ? 1 : 2);
  op_plan_tune(p, "per_unit", 2);
  p->block = 256;
}

/* sm_90a: 8 warps, each with every query row of the block (16 per m-tile)
   and its own 16-key tiles, one block per multiprocessor. Two m-tiles (32 rows) only where the baked
   q_tokens x GQA ratio needs them; otherwise one, more rows taking more
   row groups.
   A ring of about 24 KiB per warp (bf16; fp8: 16 KiB of codes plus the
   widened tile pair): 2 tiles in flight per warp, 128 KiB per
   multiprocessor at head_dim 128. Shared memory as the skeleton lays it out: Q, then the
   larger of the rings and the warps' fp32 partials, 16 bytes of flags,
   and the dynamic region's alignment slack. */
#ifndef DEC_SM90_WARPS
#define DEC_SM90_WARPS 8 /* warps per block (4: two blocks per multiprocessor) */
#endif
/* More splits than this merge in two levels: groups of this many splits
   (their last block merges them into one partial), then the groups (one
   block reading 132 partials of 8 rows took ~8 us of 70B TP 8's 33 at
   batch 1, 128K keys: H200, 2026-12-02, docs/PERF.md). */
#define DEC_SM90_GROUP 16
static void dec_plan_sm90(const op_inst *k, op_plan *p) {
  long d = op_int(k, "head_dim"), rows = 0;
  if (!op_is_any(k, "q_tokens") && !op_is_any(k, "heads_q") && !op_is_any(k, "heads_k"))
    rows = op_int(k, "q_tokens") * (op_int(k, "heads_q") / op_int(k, "heads_k"));
  long mt = rows > 16 ? 2 : 1;
  long stage = 2 * 16 * d * (dec_fp8(k) ? 1 : 2), wide = dec_fp8(k) ? 2 * 16 * d * 2 : 0;
  long stages = (dec_fp8(k) ? 16384 : 24576) / stage;
  stages = stages < 2 ? 2 : stages > 8 ? 8 : stages;
  long warp = stages * stage + wide, part = 16 * mt * (d + 6) * 4;
  op_plan_tune(p, "m_tiles", mt);
  op_plan_tune(p, "stages", stages);
  op_plan_tune(p, "rows", 16 * mt);
  op_plan_tune(p, "per_unit", 8 / DEC_SM90_WARPS);
  op_plan_tune(p, "merge_group", DEC_SM90_GROUP);
  p->block = 32 * DEC_SM90_WARPS;
  p->dynamic_lds = (int)(16 * mt * d * 2 + DEC_SM90_WARPS * (warp > part ? warp : part) + 16 + 1024);
}

static void dec_plan(const op_inst *k, op_plan *p) {
  char ns[OP_FORMULA], rg[OP_FORMULA], rule[OP_FORMULA], msg_rows[OP_FORMULA];
  if (dec_is_sm90(k)) dec_plan_sm90(k, p);
  else dec_plan_amd(k, p);
  dec_args(k, p);
  dec_splits(k, p, ns);
  dec_row_groups(k, op_tune(p, "rows"), rg);
  op_formula(p->grid[0], "%s", ns);
  op_formula(p->grid[1], "%s*%s", op_term(k, "heads_k"), rg);
  op_formula(p->grid[2], "%s", op_term(k, "batch"));
  op_plan_check(p, "heads_q % heads_k == 0", "heads_q must be a multiple of heads_k (GQA groups)");
  /* partial O (head_dim floats) and the running max and sum of every query
     row of every split */
  op_formula(rule, "workspace_bytes >= %s*%s*%s*%ld*%s", op_term(k, "batch"), op_term(k, "heads_q"),
             op_term(k, "q_tokens"), op_int(k, "head_dim") * 4 + 8, ns);
  op_plan_check(p, rule, "the split partials: batch*heads_q*q_tokens*(head_dim*4+8) bytes per split");
  if (dec_is_sm90(k)) {
    /* and a counter per group of DEC_SM90_GROUP splits: batch*heads_k*rg*cdiv(splits,
       DEC_SM90_GROUP) of them, at most rg*(batch*heads_k + device_units/DEC_SM90_GROUP) as splits
       <= device_units/(batch*heads_k) where there are more than 1 */
    op_formula(rule, "counters_len >= %s*(2*%s*%s+cdiv(device_units,%d))", rg, op_term(k, "batch"),
               op_term(k, "heads_k"), DEC_SM90_GROUP);
    op_formula(msg_rows, "counters for rg*(2*batch*heads_k + cdiv(device_units,%d)), rg groups of %ld query rows",
               DEC_SM90_GROUP, op_tune(p, "rows"));
  } else {
    op_formula(rule, "counters_len >= %s*%s*%s", op_term(k, "batch"), op_term(k, "heads_k"), rg);
    op_formula(msg_rows, "one split counter per sequence, KV head and group of %ld query rows", op_tune(p, "rows"));
  }
  op_plan_check(p, rule, msg_rows);
}

/* ---- `hkgen test` ------------------------------------------------------------ */

static const char *const dec_dim_names[] = {"batch",      "q_tokens",   "heads_q",    "heads_k",
                                            "max_blocks", "num_blocks", "window_left"};
#define DEC_NDIMS 7

static int dec_case_fits(const op_inst *k, const long *s) {
  long hq = s[op_param_index(k->op, "heads_q")], hk = s[op_param_index(k->op, "heads_k")];
  long b = s[op_param_index(k->op, "batch")], mb = s[op_param_index(k->op, "max_blocks")];
  long nb = s[op_param_index(k->op, "num_blocks")];
  return hk >= 1 && hq % hk == 0 && nb >= b * mb; /* every sequence its own pages */
}

/* GQA ratios 8, 3, 5, 1, 24 (three row groups, split too); q_tokens 1, 3,
   4, 16; tables of 2 to 24 pages (one split up to 256 keys, up to 6 at
   16-key pages, 24 at 64-key ones); batch 1 to 4 (different lengths in emu_run);
   where the window is left to run time, windows of 0, 5, 100 and 300 keys
   or none. */
static int dec_emu_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const long cases[][DEC_NDIMS] = {
      {1, 1, 8, 1, 2, 5, -1},   {3, 1, 12, 4, 24, 90, 300}, {2, 4, 10, 2, 20, 47, -1},
      {2, 3, 4, 4, 9, 25, 5},   {1, 16, 16, 2, 6, 9, 0},    {1, 16, 24, 1, 20, 21, -1},
      {4, 1, 1, 1, 12, 60, 100},
  };
  return et_shapes_from_cases(k, dec_dim_names, DEC_NDIMS, &cases[0][0], (int)(sizeof cases / sizeof cases[0]),
                              dec_case_fits, out, max);
}

typedef struct {
  long B, QT, HQ, HK, MB, NB, BS, D, WL;
  double softcap; /* 0: none */
  int *tables, *lens;
  unsigned short *q, *kv; /* kv: bf16, or (fp8) NULL and kv8 */
  unsigned char *kv8;     /* fp8 e4m3 codes (FNUZ when fnuz) */
  int fnuz;
  double ks, vs;          /* fp8: the scales of K and V */
  float *sinks;   /* [HQ], or NULL */
} dec_prob;

static long dec_rand(et_ctx *c, long n) { return (long)(et_rand(c) % (unsigned long long)n); }

/* Lengths: the first sequence fills its table, the second is shorter than
   a page (so that its first q tokens may see no key), the others end at
   random (mid-page mostly), at least q_tokens long when the table allows. Pages: a random permutation of the cache,
   unused entries 0x7fffffff (a read of one would fault). */
static void dec_make_tables(et_ctx *c, dec_prob *p) {
  long cap = p->MB * p->BS;
  long *perm = malloc((size_t)p->NB * sizeof *perm);
  for (long i = 0; i < p->NB; i++) perm[i] = i;
  for (long i = p->NB - 1; i > 0; i--) {
    long j = dec_rand(c, i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  p->tables = malloc((size_t)(p->B * p->MB) * sizeof *p->tables);
  p->lens = malloc((size_t)p->B * sizeof *p->lens);
  long next = 0;
  for (long b = 0; b < p->B; b++) {
    long len = b == 0 ? cap : b == 1 ? 1 + dec_rand(c, p->BS - 1 < cap ? p->BS - 1 : cap) : 1 + dec_rand(c, cap);
    if (len < p->QT && p->QT <= cap && b != 1) len = p->QT; /* b = 1: early tokens may see no key */
    p->lens[b] = (int)len;
    for (long i = 0; i < p->MB; i++)
      p->tables[b * p->MB + i] = i * p->BS < len ? (int)perm[next++] : 0x7fffffff;
  }
  free(perm);
}

/* An fp8 e4m3 code's value (FNUZ: bias 8, 0x80 NaN; OCP: bias 7, 0x7f/0xff NaN). */
static double dec_fp8_value(unsigned c, int fnuz) {
  int bias = fnuz ? 8 : 7, e = (int)(c >> 3) & 15, m = (int)c & 7;
  if (fnuz ? c == 0x80 : (c & 0x7f) == 0x7f) return NAN;
  double v = e ? ldexp(1.0 + m / 8.0, e - bias) : ldexp(m / 8.0, 1 - bias);
  return c & 0x80 ? -v : v;
}

/* Element i of the cache (K at 0 .. half - 1, V after). */
static double dec_kv_at(const dec_prob *p, long i) {
  if (!p->kv8) return et_from_bf16(p->kv[i]);
  long half = p->NB * p->BS * p->HK * p->D;
  return dec_fp8_value(p->kv8[i], p->fnuz) * (i < half ? p->ks : p->vs);
}

/* Random finite fp8 codes of magnitude 2^-3 .. 2^2 (before the scale), one
   in 16 a subnormal (exponent field 0); all subnormal when asked. */
static unsigned char dec_fp8_random(et_ctx *c, int fnuz, int subnormal) {
  unsigned bias = fnuz ? 8 : 7, r = (unsigned)et_rand(c);
  unsigned e = subnormal || (r >> 20) % 16 == 0 ? 0 : bias - 3 + (r >> 8) % 6;
  unsigned code = (r & 0x80) | ((e & 15) << 3) | ((r >> 16) & 7);
  return (unsigned char)(fnuz && code == 0x80 ? 0 : code); /* FNUZ's 0x80 is its NaN, not -0 */
}

/* fp64 reference of query row (b, t, h): gathers the pages. */
static void dec_ref_row(const dec_prob *p, long b, long t, long h, double scale, double *out, double *lse) {
  long len = p->lens[b], pos = len - p->QT + t, hk = h / (p->HQ / p->HK);
  const unsigned short *qr = p->q + ((b * p->QT + t) * p->HQ + h) * p->D;
  double *s = malloc((size_t)(len > 0 ? len : 1) * sizeof *s), m = -INFINITY, sum = 0;
  long half = p->NB * p->BS * p->HK * p->D;
  for (long j = 0; j < len; j++) {
    long page = p->tables[b * p->MB + j / p->BS];
    long kr = ((page * p->BS + j % p->BS) * p->HK + hk) * p->D;
    double dot = 0;
    for (long d = 0; d < p->D; d++) dot += et_from_bf16(qr[d]) * dec_kv_at(p, kr + d);
    dot *= scale;
    if (p->softcap > 0) dot = p->softcap * tanh(dot / p->softcap);
    s[j] = j <= pos && (p->WL < 0 || j >= pos - p->WL) ? dot : -INFINITY;
    if (s[j] > m) m = s[j];
  }
  if (p->sinks && p->sinks[h] > m) m = p->sinks[h];
  for (long d = 0; d < p->D; d++) out[d] = 0;
  if (p->sinks) sum = exp(p->sinks[h] - m); /* the sink: in the sum, no value */
  for (long j = 0; j < len; j++) sum += (s[j] = s[j] == -INFINITY ? 0 : exp(s[j] - m));
  for (long j = 0; j < len && sum > 0; j++) {
    long page = p->tables[b * p->MB + j / p->BS];
    long vr = half + ((page * p->BS + j % p->BS) * p->HK + hk) * p->D;
    for (long d = 0; d < p->D; d++) out[d] += s[j] / sum * dec_kv_at(p, vr + d);
  }
  *lse = sum > 0 ? m + log(sum) : -INFINITY;
  free(s);
}

/* The device buffers of one launch. */
typedef struct {
  void *q, *kv, *tables, *lens, *o, *lse, *ws, *cnt, *err, *sinks;
  long ws_bytes, cnt_len;
} dec_dev;

/* Workspace for the most splits the formula can give (one per
   DEC_MIN_SPLIT keys of the table); counters zeroed, as the contract asks. */
static void dec_upload(et_ctx *c, const op_inst *k, const dec_prob *p, dec_dev *d) {
  long rows = p->B * p->HQ * p->QT, kv = 2 * p->NB * p->BS * p->HK * p->D, esize = p->kv8 ? 1 : 2;
  long splits = (p->MB * p->BS + DEC_MIN_SPLIT - 1) / DEC_MIN_SPLIT;
  d->ws_bytes = rows * (p->D * 4 + 8) * splits;
  d->cnt_len = p->B * p->HK * ((p->QT * (p->HQ / p->HK) + DEC_ROWS - 1) / DEC_ROWS);
  d->q = et_alloc(c, (size_t)(rows * p->D) * 2);
  d->kv = et_alloc(c, (size_t)(kv * esize));
  d->tables = et_alloc(c, (size_t)(p->B * p->MB) * 4);
  d->lens = et_alloc(c, (size_t)p->B * 4);
  d->o = et_alloc(c, (size_t)(rows * p->D) * 2);
  d->lse = et_alloc(c, (size_t)rows * 4);
  d->ws = et_alloc(c, (size_t)d->ws_bytes);
  d->cnt = et_alloc(c, (size_t)d->cnt_len * 4);
  d->err = op_int(k, "check_tables") ? et_alloc(c, 4) : NULL; /* poisoned: 0xffffffff, no fault */
  d->sinks = p->sinks ? et_alloc(c, (size_t)p->HQ * 4) : NULL;
  if (p->sinks) et_upload(c, d->sinks, p->sinks, (size_t)p->HQ * 4);
  int *zero = calloc((size_t)d->cnt_len, 4);
  et_upload(c, d->cnt, zero, (size_t)d->cnt_len * 4);
  free(zero);
  et_upload(c, d->q, p->q, (size_t)(rows * p->D) * 2);
  if (p->kv8) et_upload(c, d->kv, p->kv8, (size_t)kv);
  else et_upload(c, d->kv, p->kv, (size_t)kv * 2);
  et_upload(c, d->tables, p->tables, (size_t)(p->B * p->MB) * 4);
  et_upload(c, d->lens, p->lens, (size_t)p->B * 4);
}

/* ws_bytes / cnt_len: the sizes given for the workspace and the counters. */
static int dec_launch_sized(et_ctx *c, const op_inst *k, const dec_prob *p, const dec_dev *d, double scale,
                            long ws_bytes, long cnt_len) {
  et_args_clear(c);
  et_arg_ptr(c, "Q", d->q);
  et_arg_ptr(c, "KV", d->kv);
  et_arg_ptr(c, "block_tables", d->tables);
  et_arg_ptr(c, "seq_lens", d->lens);
  et_arg_ptr(c, "O", d->o);
  et_arg_ptr(c, "LSE", d->lse);
  et_arg_ptr(c, "workspace", d->ws);
  et_arg_int(c, "workspace_bytes", ws_bytes);
  et_arg_ptr(c, "counters", d->cnt);
  et_arg_int(c, "counters_len", cnt_len);
  et_arg_float(c, "scale", scale);
  if (p->kv8) {
    et_arg_float(c, "k_scale", p->ks);
    et_arg_float(c, "v_scale", p->vs);
  }
  long vals[] = {p->B, p->QT, p->HQ, p->HK, p->MB, p->NB, p->WL};
  for (int i = 0; i < DEC_NDIMS; i++)
    if (op_is_any(k, dec_dim_names[i])) et_arg_int(c, dec_dim_names[i], vals[i]);
  if (d->sinks) et_arg_ptr(c, "sinks", d->sinks);
  if (d->err) et_arg_ptr(c, "table_error", d->err);
  return et_launch(c);
}

static int dec_launch(et_ctx *c, const op_inst *k, const dec_prob *p, const dec_dev *d, double scale) {
  return dec_launch_sized(c, k, p, d, scale, d->ws_bytes, d->cnt_len);
}

/* A workspace or counter array given as too small (0) is refused at launch,
   the message naming the argument. Returns 0, or -1 with a note. */
static int dec_refused(et_ctx *c, const op_inst *k, const dec_prob *p, const dec_dev *d, double scale) {
  static const char *const names[] = {"workspace_bytes", "counters_len"};
  for (int i = 0; i < 2; i++) {
    char note[1024];
    int rc = dec_launch_sized(c, k, p, d, scale, i == 0 ? 0 : d->ws_bytes, i == 1 ? 0 : d->cnt_len);
    et_note_get(c, note, sizeof note);
    if (rc == 0 || !strstr(note, names[i])) {
      et_note(c, "%s = 0 was not refused by name: %s", names[i], rc == 0 ? "it launched" : note);
      return -1;
    }
  }
  et_note(c, "%s", "");
  return 0;
}

/* Compares the downloaded O and LSE with the reference; *err is the larger
   relative L2 error (rows without a visible key: LSE -inf in both). */
static void dec_compare(et_ctx *c, const dec_prob *p, const dec_dev *d, double scale, double *err) {
  long rows = p->B * p->HQ * p->QT;
  size_t n = (size_t)(rows * p->D);
  unsigned short *ho = malloc(n * 2);
  float *hl = malloc((size_t)rows * 4);
  et_download(c, ho, d->o, n * 2);
  et_download(c, hl, d->lse, (size_t)rows * 4);
  double *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
  double *lref = malloc((size_t)rows * sizeof *lref), *lgot = malloc((size_t)rows * sizeof *lgot);
  size_t m = 0;
  for (long b = 0; b < p->B; b++)
    for (long t = 0; t < p->QT; t++)
      for (long h = 0; h < p->HQ; h++) {
        long row = (b * p->QT + t) * p->HQ + h;
        double lse;
        dec_ref_row(p, b, t, h, scale, ref + row * p->D, &lse);
        for (long e = 0; e < p->D; e++) got[row * p->D + e] = et_from_bf16(ho[row * p->D + e]);
        double lg = hl[(b * p->HQ + h) * p->QT + t];
        if (!(isinf(lse) && isinf(lg) && lse < 0 && lg < 0)) {
          lref[m] = lse;
          lgot[m++] = lg;
        }
      }
  double eo = et_rel_l2(ref, got, n), el = et_rel_l2(lref, lgot, m);
  *err = eo > el ? eo : el;
  if (el > eo) et_note(c, "log-sum-exp error %.3e", el);
  free(ho);
  free(hl);
  free(ref);
  free(got);
  free(lref);
  free(lgot);
}

/* After a launch: every split counter is back to 0 and (check_tables) no
   fault was recorded. Returns 0, or -1 with a note. */
static int dec_after(et_ctx *c, const dec_dev *d) {
  int *cnt = malloc((size_t)d->cnt_len * 4), bad = 0;
  et_download(c, cnt, d->cnt, (size_t)d->cnt_len * 4);
  for (long i = 0; i < d->cnt_len && !bad; i++)
    if (cnt[i]) {
      et_note(c, "split counter %ld is %d after the launch, not 0", i, cnt[i]);
      bad = 1;
    }
  free(cnt);
  unsigned e = 0xffffffffu;
  if (!bad && d->err) et_download(c, &e, d->err, 4);
  if (!bad && e != 0xffffffffu) {
    et_note(c, "table_error is %u on valid tables", e);
    bad = 1;
  }
  return bad ? -1 : 0;
}

/* check_tables: sequence B-1 gets a block id past the cache or a length
   past its table; the emulator must stop the launch naming it. */
static int dec_corrupt(et_ctx *c, const op_inst *k, dec_prob *p, dec_dev *d, double scale) {
  long b = p->B - 1, cap = p->MB * p->BS;
  int len = p->lens[b], bad_len = (int)(et_rand(c) % 2);
  char want[128];
  if (bad_len) {
    p->lens[b] = (int)(cap + 1 + dec_rand(c, p->BS));
    et_upload(c, d->lens, p->lens, (size_t)p->B * 4);
    snprintf(want, sizeof want, "sequence %ld: seq_len %d", b, p->lens[b]);
  } else {
    long i = dec_rand(c, (len + p->BS - 1) / p->BS);
    p->tables[b * p->MB + i] = (int)(p->NB + dec_rand(c, 1000));
    et_upload(c, d->tables, p->tables, (size_t)(p->B * p->MB) * 4);
    snprintf(want, sizeof want, "sequence %ld: block_tables[%ld][%ld] = %d", b, b, i, p->tables[b * p->MB + i]);
  }
  char note[1024];
  if (dec_launch(c, k, p, d, scale) == 0) {
    et_note(c, "a corrupt table (%s) was not reported", want);
    return -1;
  }
  et_note_get(c, note, sizeof note);
  if (!strstr(note, want)) {
    et_note(c, "the corrupt table's report does not name '%s': %s", want, note);
    return -1;
  }
  et_note(c, "corrupt table reported: %s", want);
  return 0;
}

/* O and LSE as they are on the device (malloc'd bytes; *n their count). */
static unsigned char *dec_bits(et_ctx *c, const dec_prob *p, const dec_dev *d, size_t *n) {
  size_t no = (size_t)(p->B * p->HQ * p->QT * p->D) * 2, nl = (size_t)(p->B * p->HQ * p->QT) * 4;
  unsigned char *b = malloc(no + nl);
  et_download(c, b, d->o, no);
  et_download(c, b + no, d->lse, nl);
  *n = no + nl;
  return b;
}

/* Determinism: O and LSE poisoned again and the launch repeated (the
   emulator draws another workgroup order) must give the same bits. */
static int dec_same_bits(et_ctx *c, const op_inst *k, const dec_prob *p, const dec_dev *d, double scale) {
  size_t n, m;
  unsigned char *first = dec_bits(c, p, d, &n), *poison = malloc(n);
  memset(poison, 0xff, n);
  size_t no = (size_t)(p->B * p->HQ * p->QT * p->D) * 2;
  et_upload(c, d->o, poison, no);
  et_upload(c, d->lse, poison + no, n - no);
  int rc = dec_launch(c, k, p, d, scale), same = 0;
  if (rc == 0) {
    unsigned char *again = dec_bits(c, p, d, &m);
    same = m == n && !memcmp(first, again, n);
    free(again);
  }
  if (rc == 0 && !same) et_note(c, "%s", "a second launch in another workgroup order gave other bits");
  free(first);
  free(poison);
  return rc == 0 && same ? 0 : -1;
}

static int dec_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
#define DEC_VAL(n) shape[op_param_index(k->op, n)]
  dec_prob p = {.B = DEC_VAL("batch"), .QT = DEC_VAL("q_tokens"), .HQ = DEC_VAL("heads_q"),
                .HK = DEC_VAL("heads_k"), .MB = DEC_VAL("max_blocks"), .NB = DEC_VAL("num_blocks"),
                .BS = op_int(k, "block_size"), .D = op_int(k, "head_dim"), .WL = DEC_VAL("window_left"),
                .softcap = strtod(op_val(k, "softcap"), NULL)};
#undef DEC_VAL
  if (!dec_case_fits(k, shape)) { /* possible through --shape */
    et_note(c, "needs heads_q a multiple of heads_k and num_blocks >= batch * max_blocks");
    return -1;
  }
  double scale = (et_rand(c) % 4 ? 1.0 : -1.0) / sqrt((double)p.D);
  dec_make_tables(c, &p);
  if (op_int(k, "sinks")) { /* logits of the order of the scores' */
    p.sinks = malloc((size_t)p.HQ * sizeof *p.sinks);
    for (long h = 0; h < p.HQ; h++) p.sinks[h] = (float)(et_uniform(c) * 3.0);
  }
  p.q = (unsigned short *)malloc((size_t)(p.B * p.QT * p.HQ * p.D) * 2);
  for (long i = 0; i < p.B * p.QT * p.HQ * p.D; i++) p.q[i] = et_to_bf16(et_uniform(c) * 2.0);
  long nkv = 2 * p.NB * p.BS * p.HK * p.D;
  if (!strcmp(op_val(k, "kv_dtype"), "fp8_e4m3")) {
    /* scales that keep K and V within about [-2, 2]; tables of 2 and 9
       pages (two of the default shapes) hold subnormal codes only, scaled
       up to the same range, so that their decoding counts */
    int sub = p.MB == 2 || p.MB == 9;
    p.fnuz = (int)op_tune(k->plan, "fp8_fnuz");
    p.ks = (0.25 + 0.25 * (et_uniform(c) + 1)) * (sub ? 128 : 1);
    p.vs = (0.25 + 0.25 * (et_uniform(c) + 1)) * (sub ? 128 : 1);
    p.kv8 = malloc((size_t)nkv);
    for (long i = 0; i < nkv; i++) p.kv8[i] = dec_fp8_random(c, p.fnuz, sub);
  } else {
    p.kv = (unsigned short *)malloc((size_t)nkv * 2);
    for (long i = 0; i < nkv; i++) p.kv[i] = et_to_bf16(et_uniform(c) * 2.0);
  }
  dec_dev d;
  dec_upload(c, k, &p, &d);
  int rc = dec_refused(c, k, &p, &d, scale) < 0 ? -1 : dec_launch(c, k, &p, &d, scale);
  if (rc == 0) {
    dec_compare(c, &p, &d, scale, err);
    if (dec_after(c, &d) < 0) *err = INFINITY;
    else if (p.MB == 24 && dec_same_bits(c, k, &p, &d, scale) < 0) *err = INFINITY; /* the most splits */
    else if (op_int(k, "check_tables") && dec_corrupt(c, k, &p, &d, scale) < 0) *err = INFINITY;
  }
  free(p.tables);
  free(p.lens);
  free(p.sinks);
  free(p.q);
  free(p.kv);
  free(p.kv8);
  return rc;
}

/* The estimate's work, every sequence taken as long as its table row
   (max_blocks x block_size keys, the largest problem the kernel plans
   for): 4 d FLOPs per (query row, key) pair; the matrix cores run the
   active waves of each row group (waves without rows skip the MFMAs; on
   sm_90a every warp all of the group's rows) over whole tiles of block_n
   keys (sm_90a: 16); bytes: the K and V pages read once per KV
   head, Q and O once, the log-sum-exp written. */
static int dec_work(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n) {
#define DEC_VAL(name) (double)shape[op_param_index(k->op, name)]
  double b = DEC_VAL("batch"), qt = DEC_VAL("q_tokens"), hq = DEC_VAL("heads_q"), hk = DEC_VAL("heads_k"),
         keys = DEC_VAL("max_blocks") * (double)op_int(k, "block_size");
#undef DEC_VAL
  double d = (double)op_int(k, "head_dim"), bn = (double)op_tune(k->plan, "block_n");
  double prow = (double)op_tune(k->plan, "rows");
  if (dec_is_sm90(k)) bn = 16; /* every warp's tiles: 16 keys x all the block's rows */
  if (bn <= 0 || prow <= 0 || hk < 1 || fmod(hq, hk) != 0) {
    snprintf(msg, n, "kernel %s: no attn_decode plan for this problem", k->name);
    return -1;
  }
  /* MFMA rows: whole waves of 32 on AMD (waves without rows skip), whole row groups on sm_90a */
  double rows = qt * (hq / hk), mrows = 0;
  for (double r = rows; r > 0; r -= prow) mrows += dec_is_sm90(k) ? prow : 32 * ceil((r < prow ? r : prow) / 32);
  double kv_elem = dec_fp8(k) ? 1 : 2;
  w->flops = 4 * d * b * hq * qt * keys;
  w->mma_flops = 4 * d * b * hk * mrows * ceil(keys / bn) * bn;
  w->bytes = b * (2 * hk * keys * d * kv_elem + 2 * 2 * qt * hq * d + 4 * qt * hq);
  w->trips = 0;
  return 0;
}

/* dec_work's matrix FLOPs and bytes as formulas, for the AMD cost: with the
   plan's DEC_ROWS rows a multiple of 32, the MFMA rows are 32 cdiv(rows, 32). */
_Static_assert(DEC_ROWS % 32 == 0, "dec_work_formula's MFMA rows");
static void dec_work_formula(const op_inst *k, char *mma_flops, char *bytes) {
  const char *B = op_term(k, "batch"), *QT = op_term(k, "q_tokens"), *HQ = op_term(k, "heads_q"),
             *HK = op_term(k, "heads_k"), *MB = op_term(k, "max_blocks");
  long d = op_int(k, "head_dim"), bs = op_int(k, "block_size"), bn = op_tune(k->plan, "block_n");
  op_formula(mma_flops, "%ld*%s*%s*cdiv(%s*(%s/%s),32)*32*cdiv(%s*%ld,%ld)*%ld", 4 * d, B, HK, QT, HQ, HK, MB, bs,
             bn, bn);
  op_formula(bytes, "%s*(%ld*%s*%s+%ld*%s*%s)", B, 2 * d * (dec_fp8(k) ? 1 : 2) * bs, HK, MB, 4 * d + 4, QT, HQ);
}

const op_desc op_attn_decode = {
    .name = "attn_decode",
    .doc = "attention decode over a paged KV cache: a few query tokens per sequence, GQA-packed, split-KV "
           "merged in one launch",
    .skeleton = "attn_decode.hip.m4",
    .params = dec_params,
    .nparams = DEC_NPARAMS,
    .check = dec_check,
    .plan = dec_plan,
    .emu_shapes = dec_emu_shapes,
    .emu_run = dec_emu_run,
    .work = dec_work,
    .work_formula = dec_work_formula,
    .bench_shape = "batch=32,q_tokens=1,heads_q=32,heads_k=8,max_blocks=256,num_blocks=8192,window_left=-1",
};
