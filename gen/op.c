/* op.c: registry lookup and the schema helpers every op shares. */
#include "op.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const op_desc op_gemm;
extern const op_desc op_rope;
extern const op_desc op_attn_fwd;

static const op_desc *const op_table[] = {&op_attn_fwd, &op_gemm, &op_rope};

const op_desc *const *op_all(size_t *n) {
  *n = sizeof op_table / sizeof op_table[0];
  return op_table;
}

const op_desc *op_find(const char *name) {
  size_t n;
  const op_desc *const *all = op_all(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(all[i]->name, name) == 0) return all[i];
  return NULL;
}

int op_param_index(const op_desc *op, const char *name) {
  for (int i = 0; i < op->nparams; i++)
    if (strcmp(op->params[i].name, name) == 0) return i;
  return -1;
}

const op_param *op_param_find(const op_desc *op, const char *name) {
  int i = op_param_index(op, name);
  return i < 0 ? NULL : &op->params[i];
}

const char *op_val(const op_inst *k, const char *name) {
  int i = op_param_index(k->op, name);
  return i < 0 ? NULL : k->vals[i];
}

int op_is_any(const op_inst *k, const char *name) {
  const char *v = op_val(k, name);
  return !v || strcmp(v, OP_ANY) == 0;
}

long op_int(const op_inst *k, const char *name) {
  const char *v = op_val(k, name);
  if (!v || strcmp(v, OP_ANY) == 0) return 0;
  if (strcmp(v, "true") == 0) return 1;
  if (strcmp(v, "false") == 0) return 0;
  return strtol(v, NULL, 10);
}

const char *op_term(const op_inst *k, const char *name) {
  return op_is_any(k, name) ? name : op_val(k, name);
}

static int op_parse_long(const char *v, long *out) {
  if (!*v) return -1;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end) return -1;
  *out = x;
  return 0;
}

void op_describe_allowed(const op_param *p, char *out, size_t n) {
  size_t used = 0;
  out[0] = 0;
  switch (p->type) {
  case OP_INT:
    snprintf(out, n, "an integer in [%ld, %ld]", p->min, p->max);
    break;
  case OP_BOOL:
    snprintf(out, n, "true or false");
    break;
  case OP_FLOAT:
    snprintf(out, n, "a positive number");
    break;
  case OP_ENUM:
    for (int i = 0; p->choices[i]; i++) {
      int w = snprintf(out + used, n - used, "%s%s", i ? ", " : "", p->choices[i]);
      if (w < 0 || (size_t)w >= n - used) break;
      used += (size_t)w;
    }
    break;
  }
  if (p->runtime_ok) {
    size_t l = strlen(out);
    snprintf(out + l, n - l, ", or %s (run-time argument)", OP_ANY);
  }
}

int op_value_ok(const op_param *p, const char *v, char *msg, size_t n) {
  char allowed[256];
  op_describe_allowed(p, allowed, sizeof allowed);
  if (strcmp(v, OP_ANY) == 0) {
    if (p->runtime_ok) return 0;
    snprintf(msg, n, "'%s' must be fixed at generation time; allowed: %s", p->name, allowed);
    return -1;
  }
  switch (p->type) {
  case OP_INT: {
    long x;
    if (op_parse_long(v, &x) == 0 && x >= p->min && x <= p->max) return 0;
    break;
  }
  case OP_BOOL:
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) return 0;
    break;
  case OP_FLOAT: {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!errno && !*end && *v && isfinite(d) && d > 0) return 0;
    break;
  }
  case OP_ENUM:
    for (int i = 0; p->choices[i]; i++)
      if (strcmp(p->choices[i], v) == 0) return 0;
    break;
  }
  snprintf(msg, n, "bad value '%.64s' for '%s'; allowed: %s", v, p->name, allowed);
  return -1;
}

static void op_ctype_size(const char *ctype, int *size, int *align) {
  if (strchr(ctype, '*') || strcmp(ctype, "long") == 0) {
    *size = *align = 8;
  } else if (strcmp(ctype, "hk_tmap") == 0) {
    *size = 128; /* the driver's opaque tensor map, 64-byte aligned */
    *align = 64;
  } else {
    *size = *align = 4; /* int, float */
  }
}

void op_arg_add(op_arg *args, int *n, const char *ctype, const char *name) {
  op_arg *a = &args[*n];
  memset(a, 0, sizeof *a);
  snprintf(a->ctype, sizeof a->ctype, "%s", ctype);
  snprintf(a->name, sizeof a->name, "%s", name);
  op_ctype_size(ctype, &a->size, &a->align);
  int off = 0;
  if (*n > 0) off = args[*n - 1].offset + args[*n - 1].size;
  a->offset = (off + a->align - 1) / a->align * a->align;
  (*n)++;
}

void op_arg_tmap(op_arg *args, int *n, const char *name, const op_tmap *t) {
  op_arg_add(args, n, "hk_tmap", name);
  args[*n - 1].tmap = *t;
}

op_tmap op_tmap_make(const char *tensor, int rank, const char *const *dims, const char *const *strides,
                     const int *box, int swizzle) {
  op_tmap t;
  memset(&t, 0, sizeof t);
  snprintf(t.tensor, sizeof t.tensor, "%s", tensor);
  t.rank = rank;
  t.swizzle = swizzle;
  for (int i = 0; i < rank && i < OP_TMAP_MAX_RANK; i++) {
    snprintf(t.dims[i], sizeof t.dims[i], "%s", dims[i]);
    t.box[i] = box[i];
    if (i > 0) snprintf(t.strides[i - 1], sizeof t.strides[i - 1], "%s", strides[i - 1]);
  }
  return t;
}

void op_arg_strides(op_arg *args, int *n, const char *tensor) {
  static const char *const axes[] = {"b", "s", "h"};
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s_stride_%s", tensor, axes[i]);
    op_arg_add(args, n, "long", name);
  }
}

int op_args_size(const op_arg *args, int n) {
  if (n == 0) return 0;
  int end = args[n - 1].offset + args[n - 1].size, al = 1;
  for (int i = 0; i < n; i++)
    if (args[i].align > al) al = args[i].align;
  return (end + al - 1) / al * al;
}

void op_inst_free(op_inst *k) {
  for (int i = 0; i < OP_MAX_PARAMS; i++) free(k->vals[i]);
}

/* A tiny recursive-descent evaluator: expr := term ('*' term)*;
   term := number | name | cdiv '(' expr ',' expr ')'. */
typedef struct {
  const op_inst *k;
  const long *shape;
  const char *p;
  int bad;
} op_ev;

static long op_ev_expr(op_ev *e);

static void op_ev_space(op_ev *e) {
  while (*e->p == ' ') e->p++;
}

static long op_ev_term(op_ev *e) {
  op_ev_space(e);
  const char *s = e->p;
  if (*s >= '0' && *s <= '9') return strtol(s, (char **)&e->p, 10);
  size_t n = 0;
  while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || s[n] == '_' ||
         (n && s[n] >= '0' && s[n] <= '9'))
    n++;
  if (!n) {
    e->bad = 1;
    return 0;
  }
  e->p = s + n;
  if ((n == 4 && !strncmp(s, "cdiv", 4)) || (n == 3 && !strncmp(s, "min", 3))) {
    op_ev_space(e);
    if (*e->p++ != '(') e->bad = 1;
    long a = op_ev_expr(e);
    op_ev_space(e);
    if (*e->p++ != ',') e->bad = 1;
    long b = op_ev_expr(e);
    op_ev_space(e);
    if (*e->p++ != ')') e->bad = 1;
    if (n == 3) return a < b ? a : b;
    if (b <= 0) e->bad = 1;
    return e->bad ? 0 : (a + b - 1) / b;
  }
  for (int i = 0; i < e->k->op->nparams; i++)
    if (strlen(e->k->op->params[i].name) == n && !strncmp(e->k->op->params[i].name, s, n))
      return e->shape[i];
  e->bad = 1;
  return 0;
}

static long op_ev_expr(op_ev *e) {
  long v = op_ev_term(e);
  for (;;) {
    op_ev_space(e);
    if (*e->p != '*') return v;
    e->p++;
    v *= op_ev_term(e);
  }
}

int op_eval(const op_inst *k, const long *shape, const char *expr, long *out) {
  op_ev e = {k, shape, expr, 0};
  long v = op_ev_expr(&e);
  op_ev_space(&e);
  if (e.bad || *e.p) return -1;
  *out = v;
  return 0;
}

void op_shape_baked(const op_inst *k, long *shape) {
  memset(shape, 0, OP_MAX_PARAMS * sizeof *shape); /* shapes are compared whole */
  for (int i = 0; i < k->op->nparams; i++) {
    const op_param *p = &k->op->params[i];
    int numeric = p->type == OP_INT || p->type == OP_BOOL ||
                  (p->type == OP_ENUM && k->vals[i][0] >= '0' && k->vals[i][0] <= '9');
    shape[i] = numeric ? op_int(k, p->name) : 0;
  }
}
