/* op_rope.c: rotary position embedding on bf16 Q and K (different head counts
   in one launch), fp32 math. Skeleton: templates/rope.hip.m4. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emutest.h"
#include "op.h"
#include "target.h"

static const char *const rope_dtypes[] = {"bf16", NULL};
static const char *const rope_styles[] = {"rotate_half", "interleaved", NULL};

#define ROPE_DIM(n, tag, lo, hi, d) \
  {n, OP_INT, NULL, lo, hi, OP_ANY, 1, tag, d}

static const op_param rope_params[] = {
    {"dtype", OP_ENUM, rope_dtypes, 0, 0, "bf16", 0, "", "element type of Q and K"},
    {"style", OP_ENUM, rope_styles, 0, 0, "rotate_half", 0, "",
     "rotate_half: pairs (i, i + d/2) as in Llama; interleaved: pairs (2i, 2i + 1) as in GPT-J"},
    {"inplace", OP_BOOL, NULL, 0, 0, "false", 0, "ip", "rotate Q and K in place"},
    {"table", OP_BOOL, NULL, 0, 0, "true", 0, "tab",
     "read cos/sin from fp32 tables [position][head_dim/2]; false computes them from theta"},
    {"theta", OP_FLOAT, NULL, 0, 0, "10000", 0, "th", "frequency base when table is false"},
    ROPE_DIM("batch", "b", 1, 1L << 20, "sequences per launch"),
    ROPE_DIM("seq_len", "s", 1, 1L << 24, "tokens per sequence"),
    ROPE_DIM("heads_q", "hq", 1, 1024, "query heads"),
    ROPE_DIM("heads_k", "hk", 1, 1024, "key heads"),
    ROPE_DIM("head_dim", "d", 2, 512, "elements per head (even)"),
};

static int rope_check(const op_inst *k, char *msg, size_t n) {
  if (!op_is_any(k, "head_dim") && op_int(k, "head_dim") % 2) {
    snprintf(msg, n, "head_dim must be even (got %ld)", op_int(k, "head_dim"));
    return -1;
  }
  return 0;
}

static void rope_args(const op_inst *k, op_plan *p) {
  op_arg *a = p->args;
  int n = 0;
  static const char *const inplace_t[] = {"q", "k"};
  static const char *const outplace_t[] = {"q_in", "k_in", "q_out", "k_out"};
  int inplace = (int)op_int(k, "inplace");
  const char *const *ts = inplace ? inplace_t : outplace_t;
  int nt = inplace ? 2 : 4;
  for (int i = 0; i < nt; i++)
    op_arg_add(a, &n, (inplace || i >= 2) ? "hk_bf16 *" : "const hk_bf16 *", ts[i]);
  if (op_int(k, "table")) {
    op_arg_add(a, &n, "const float *", "cos_table");
    op_arg_add(a, &n, "const float *", "sin_table");
  }
  for (int i = 0; i < nt; i++) op_arg_strides(a, &n, ts[i]);
  op_arg_add(a, &n, "int", "pos_offset");
  static const char *const dims[] = {"batch", "seq_len", "heads_q", "heads_k", "head_dim"};
  for (int i = 0; i < 5; i++)
    if (op_is_any(k, dims[i])) op_arg_add(a, &n, "int", dims[i]);
  p->nargs = n;
}

/* A block of 256 threads per token; units of work each thread loads
   before the barrier: 2 on AMD, 1 on NVIDIA (2 made nvcc spill). */
static void rope_plan(const op_inst *k, op_plan *p) {
  op_plan_tune(p, "batch_units", tgt_name_has(k->target, TGT_AMD) ? 2 : 1);
  p->block = 256;
  rope_args(k, p);
  snprintf(p->grid[0], OP_FORMULA, "%s*%s", op_term(k, "batch"), op_term(k, "seq_len"));
  op_plan_check(p, "head_dim % 2 == 0", "head_dim must be even (rotation pairs)");
  op_plan_check(p, "pos_offset >= 0", "positions start at pos_offset, an index into the tables");
  static const char *const inplace_t[] = {"q", "k"}, *const outplace_t[] = {"q_in", "k_in", "q_out", "k_out"};
  int inplace = (int)op_int(k, "inplace");
  for (int i = 0; i < (inplace ? 2 : 4); i++) {
    const char *t = inplace ? inplace_t[i] : outplace_t[i];
    char rule[OP_FORMULA];
    snprintf(rule, sizeof rule, "%s_stride_b >= 0 && %s_stride_s >= 0 && %s_stride_h >= 0", t, t, t);
    op_plan_check(p, rule, "strides are element counts, not negative");
  }
}

/* Problem sizes for `hkgen test`: odd head counts, Q and K head counts that
   differ, one token, head_dim not a multiple of 64. */
static int rope_emu_shapes(const op_inst *k, long out[][OP_MAX_PARAMS], int max) {
  static const char *const dims[] = {"batch", "seq_len", "heads_q", "heads_k", "head_dim"};
  static const long cases[][5] = {{2, 5, 3, 1, 64}, {1, 1, 1, 1, 2},   {1, 7, 12, 4, 128},
                                  {3, 3, 5, 5, 96}, {1, 9, 7, 2, 130}};
  return et_shapes_from_cases(k, dims, 5, &cases[0][0], (int)(sizeof cases / sizeof cases[0]), NULL,
                              out, max);
}

typedef struct {
  long sb, ss, sh, elems; /* strides and size in elements */
} rope_layout;

/* Inputs: [b][s][h][d] with random padding; outputs: [b][h][s][d]. With
   aligned, every stride is a multiple of 8 elements (the kernels' 16-byte
   path, when head_dim allows it), else the paddings are odd (the element path). */
static rope_layout rope_bshd(et_ctx *c, long B, long S, long H, long D, int aligned) {
  rope_layout l;
  long unit = aligned ? 8 : 1;
  l.sh = D + (long)(et_rand(c) % 2) * (aligned ? 8 : 2) + (aligned || D % 2 ? 0 : 1);
  l.ss = H * l.sh + (long)(et_rand(c) % 3) * unit;
  l.sb = S * l.ss + (long)(et_rand(c) % 5) * unit;
  if (et_dense(c)) l.sh = D, l.ss = H * D, l.sb = S * l.ss; /* timed: packed */
  l.elems = B * l.sb;
  return l;
}

static rope_layout rope_bhsd(long B, long S, long H, long D) {
  rope_layout l = {H * S * D, D, S * D, B * H * S * D};
  return l;
}

/* The fp64 rotation of one head vector x (bf16) into y. */
static void rope_ref_head(const unsigned short *x, long D, int interleaved, const double *cs,
                          const double *sn, double *y) {
  for (long i = 0; i < D / 2; i++) {
    long a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + D / 2;
    double xa = et_from_bf16(x[a]), xb = et_from_bf16(x[b]);
    y[a] = xa * cs[i] - xb * sn[i];
    y[b] = xb * cs[i] + xa * sn[i];
  }
}

static int rope_emu_run(const op_inst *k, const long *shape, et_ctx *c, double *err) {
#define ROPE_VAL(n) shape[op_param_index(k->op, n)]
  long B = ROPE_VAL("batch"), S = ROPE_VAL("seq_len"), HQ = ROPE_VAL("heads_q"),
       HK = ROPE_VAL("heads_k"), D = ROPE_VAL("head_dim");
  int inplace = (int)op_int(k, "inplace"), table = (int)op_int(k, "table");
  int inter = !strcmp(op_val(k, "style"), "interleaved");
  double theta = strtod(op_val(k, "theta"), NULL);
  long pos0 = (long)(et_rand(c) % 50), npos = pos0 + S, half = D / 2;
  /* cos/sin in fp64; the table holds them as fp32, which the reference then uses too */
  double *cs = malloc((size_t)(npos * half) * sizeof *cs), *sn = malloc((size_t)(npos * half) * sizeof *sn);
  float *tc = malloc((size_t)(npos * half) * 4), *ts = malloc((size_t)(npos * half) * 4);
  for (long p = 0; p < npos; p++)
    for (long i = 0; i < half; i++) {
      double ang = (double)p * pow(theta, -2.0 * (double)i / (double)D);
      tc[p * half + i] = (float)cos(ang);
      ts[p * half + i] = (float)sin(ang);
      cs[p * half + i] = table ? tc[p * half + i] : cos(ang);
      sn[p * half + i] = table ? ts[p * half + i] : sin(ang);
    }
  long heads[2] = {HQ, HK};
  rope_layout lin[2], lout[2];
  unsigned short *hin[2], *hout[2];
  void *din[2], *dout[2];
  for (int t = 0; t < 2; t++) {
    /* which path a shape takes is fixed by the shape: the default shapes
       cover both (gen/op_rope.c rope_emu_shapes) */
    lin[t] = rope_bshd(c, B, S, heads[t], D, (B + S) % 2 == 0);
    lout[t] = inplace ? lin[t] : rope_bhsd(B, S, heads[t], D);
    hin[t] = malloc((size_t)lin[t].elems * 2);
    for (long i = 0; i < lin[t].elems; i++) hin[t][i] = et_to_bf16(et_uniform(c));
    din[t] = et_alloc(c, (size_t)lin[t].elems * 2);
    et_upload(c, din[t], hin[t], (size_t)lin[t].elems * 2);
    dout[t] = inplace ? din[t] : et_alloc(c, (size_t)lout[t].elems * 2);
    hout[t] = malloc((size_t)lout[t].elems * 2);
  }
  static const char *const in_names[] = {"q", "k"}, *const src_names[] = {"q_in", "k_in"},
                           *const dst_names[] = {"q_out", "k_out"};
  for (int t = 0; t < 2; t++) {
    if (inplace) {
      et_arg_ptr(c, in_names[t], din[t]);
      et_arg_strides(c, in_names[t], lin[t].sb, lin[t].ss, lin[t].sh);
    } else {
      et_arg_ptr(c, src_names[t], din[t]);
      et_arg_ptr(c, dst_names[t], dout[t]);
      et_arg_strides(c, src_names[t], lin[t].sb, lin[t].ss, lin[t].sh);
      et_arg_strides(c, dst_names[t], lout[t].sb, lout[t].ss, lout[t].sh);
    }
  }
  if (table) {
    void *dc = et_alloc(c, (size_t)(npos * half) * 4), *dsn = et_alloc(c, (size_t)(npos * half) * 4);
    et_upload(c, dc, tc, (size_t)(npos * half) * 4);
    et_upload(c, dsn, ts, (size_t)(npos * half) * 4);
    et_arg_ptr(c, "cos_table", dc);
    et_arg_ptr(c, "sin_table", dsn);
  }
  et_arg_int(c, "pos_offset", pos0);
  static const char *const dims[] = {"batch", "seq_len", "heads_q", "heads_k", "head_dim"};
  long vals[] = {B, S, HQ, HK, D};
  for (int i = 0; i < 5; i++)
    if (op_is_any(k, dims[i])) et_arg_int(c, dims[i], vals[i]);
  int rc = et_launch(c);
  if (rc == 0) {
    size_t total = (size_t)(B * S * (HQ + HK) * D), n = 0;
    double *ref = malloc(total * sizeof *ref), *got = malloc(total * sizeof *got);
    for (int t = 0; t < 2; t++) {
      et_download(c, hout[t], dout[t], (size_t)lout[t].elems * 2);
      for (long b = 0; b < B; b++)
        for (long s = 0; s < S; s++)
          for (long h = 0; h < heads[t]; h++) {
            const unsigned short *x = hin[t] + b * lin[t].sb + s * lin[t].ss + h * lin[t].sh;
            const unsigned short *y = hout[t] + b * lout[t].sb + s * lout[t].ss + h * lout[t].sh;
            rope_ref_head(x, D, inter, cs + (pos0 + s) * half, sn + (pos0 + s) * half, ref + n);
            for (long i = 0; i < D; i++) got[n + (size_t)i] = et_from_bf16(y[i]);
            n += (size_t)D;
          }
    }
    *err = et_rel_l2(ref, got, n);
    free(ref);
    free(got);
  }
  for (int t = 0; t < 2; t++) {
    free(hin[t]);
    free(hout[t]);
  }
  free(cs);
  free(sn);
  free(tc);
  free(ts);
  return rc;
#undef ROPE_VAL
}

/* The estimate's work, in bytes: Q and K read and written once, and the
   fp32 cos/sin tables read when the kernel takes them; 3 FLOPs per element. */
static int rope_work(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n) {
  (void)msg;
  (void)n;
  double b = (double)shape[op_param_index(k->op, "batch")], s = (double)shape[op_param_index(k->op, "seq_len")],
         h = (double)(shape[op_param_index(k->op, "heads_q")] + shape[op_param_index(k->op, "heads_k")]),
         d = (double)shape[op_param_index(k->op, "head_dim")];
  memset(w, 0, sizeof *w);
  w->bytes = 2 * 2 * b * s * h * d + (op_int(k, "table") ? 2 * 4 * s * d / 2 : 0);
  w->flops = 3 * b * s * h * d;
  return 0;
}

/* rope_work's bytes as a formula (no matrix work), for the AMD cost. */
static void rope_work_formula(const op_inst *k, char *mma_flops, char *bytes) {
  const char *B = op_term(k, "batch"), *S = op_term(k, "seq_len"), *HQ = op_term(k, "heads_q"),
             *HK = op_term(k, "heads_k"), *D = op_term(k, "head_dim");
  snprintf(mma_flops, OP_FORMULA, "0");
  if (op_int(k, "table")) op_formula(bytes, "4*%s*%s*(%s+%s)*%s+4*%s*%s", B, S, HQ, HK, D, S, D);
  else op_formula(bytes, "4*%s*%s*(%s+%s)*%s", B, S, HQ, HK, D);
}

const op_desc op_rope = {
    .name = "rope",
    .doc = "rotary position embedding of Q[b][s][heads_q][d] and K[b][s][heads_k][d]",
    .skeleton = "rope.hip.m4",
    .params = rope_params,
    .nparams = (int)(sizeof rope_params / sizeof rope_params[0]),
    .check = rope_check,
    .plan = rope_plan,
    .emu_shapes = rope_emu_shapes,
    .emu_run = rope_emu_run,
    .work = rope_work,
    .work_formula = rope_work_formula,
    .bench_shape = "batch=4,seq_len=4096,heads_q=32,heads_k=8,head_dim=128",
};
