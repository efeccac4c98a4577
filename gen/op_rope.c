/* op_rope.c: rotary position embedding on bf16 Q and K (different head counts
   in one launch), fp32 math. Skeleton: templates/rope.hip.m4. */
#include <stdio.h>

#include "op.h"

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

static void rope_strides(op_arg *a, int *n, const char *t) {
  static const char *const axes[] = {"b", "s", "h"};
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s_stride_%s", t, axes[i]);
    op_arg_add(a, n, "long", name);
  }
}

static int rope_args(const op_inst *k, op_arg *a) {
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
  for (int i = 0; i < nt; i++) rope_strides(a, &n, ts[i]);
  op_arg_add(a, &n, "int", "pos_offset");
  static const char *const dims[] = {"batch", "seq_len", "heads_q", "heads_k", "head_dim"};
  for (int i = 0; i < 5; i++)
    if (op_is_any(k, dims[i])) op_arg_add(a, &n, "int", dims[i]);
  return n;
}

static int rope_block(const op_inst *k) {
  (void)k;
  return 256;
}

static void rope_grid(const op_inst *k, char out[3][96]) {
  snprintf(out[0], 96, "%s*%s", op_term(k, "batch"), op_term(k, "seq_len"));
  snprintf(out[1], 96, "1");
  snprintf(out[2], 96, "1");
}

const op_desc op_rope = {
    .name = "rope",
    .doc = "rotary position embedding of Q[b][s][heads_q][d] and K[b][s][heads_k][d]",
    .skeleton = "rope.hip.m4",
    .params = rope_params,
    .nparams = (int)(sizeof rope_params / sizeof rope_params[0]),
    .check = rope_check,
    .args = rope_args,
    .block = rope_block,
    .grid = rope_grid,
};
