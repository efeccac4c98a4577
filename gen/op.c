/* op.c: registry lookup and the schema helpers every op shares. */
#include "op.h"

#include <limits.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "util.h"

typedef struct {
  const op_inst *k;
  const long *shape;
  long units; /* device_units; 0: unknown (the runtime's) */
} op_ev_ctx;

extern const op_desc op_gemm;
extern const op_desc op_rope;
extern const op_desc op_attn_fwd;
extern const op_desc op_attn_bwd;
extern const op_desc op_attn_decode;
extern const op_desc op_norm;

static const op_desc *const op_table[] = {&op_attn_fwd, &op_attn_bwd, &op_attn_decode, &op_gemm, &op_norm, &op_rope};

const op_desc *const *op_all(size_t *n) {
  *n = sizeof op_table / sizeof op_table[0];
  return op_table;
}

const op_desc *op_find(const char *name) {
  size_t n;
  const op_desc *const *all = op_all(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(all[i]->name, name) == 0) {
      if (all[i]->nparams > OP_MAX_PARAMS) { /* a descriptor bug, never a user's */
        fprintf(stderr, "hkgen: internal error: op %s has %d parameters, more than %d\n", name, all[i]->nparams,
                OP_MAX_PARAMS);
        abort();
      }
      return all[i];
    }
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
  if (*n >= OP_MAX_ARGS) { /* a descriptor bug, never a user's */
    fprintf(stderr, "hkgen: internal error: more than %d kernel arguments (%s)\n", OP_MAX_ARGS, name);
    abort();
  }
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
  free(k->plan);
  k->plan = NULL;
  free(k->choice);
  k->choice = NULL;
}

/* ---- the resolved plan ------------------------------------------------------------- */

void op_plan_tune(op_plan *p, const char *name, long v) {
  if (p->ntun == OP_MAX_TUNABLES) return; /* op_plan_resolve reports it */
  op_tunable *t = &p->tun[p->ntun++];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->value = v;
}

long op_tune(const op_plan *p, const char *name) {
  for (int i = 0; i < p->ntun; i++)
    if (!strcmp(p->tun[i].name, name)) return p->tun[i].value;
  return 0;
}

void op_plan_check(op_plan *p, const char *rule, const char *why) {
  if (p->nchecks == OP_MAX_CHECKS) {
    p->nchecks++; /* op_plan_resolve reports it */
    return;
  }
  op_check *c = &p->checks[p->nchecks++];
  snprintf(c->rule, sizeof c->rule, "%s", rule);
  snprintf(c->why, sizeof c->why, "%s", why);
}

void op_formula(char *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(out, OP_FORMULA, fmt, ap);
  va_end(ap);
  if (w < 0 || w >= OP_FORMULA) snprintf(out, OP_FORMULA, "formula_too_long");
}

int op_is_tuning(const op_desc *op, const char *name) {
  for (int i = 0; op->tuning && op->tuning[i]; i++)
    if (!strcmp(op->tuning[i], name)) return 1;
  return 0;
}

int op_is_omissible(const op_desc *op, const char *name) {
  for (int i = 0; op->omissible && op->omissible[i]; i++)
    if (!strcmp(op->omissible[i], name)) return 1;
  return 0;
}

int op_is_feature(const op_desc *op, const char *name) {
  for (int i = 0; op->features && op->features[i]; i++)
    if (!strcmp(op->features[i], name)) return 1;
  return 0;
}

int op_feature_off(const op_inst *k, int i) {
  const op_param *p = &k->op->params[i];
  return op_is_feature(k->op, p->name) && !strcmp(k->vals[i], p->def);
}

/* The schema's range of each run-time integer parameter, as launch rules
   (a baked one was checked against it when the spec was read). */
static void op_plan_ranges(const op_inst *k, op_plan *p) {
  for (int i = 0; i < k->op->nparams; i++) {
    const op_param *q = &k->op->params[i];
    if (q->type != OP_INT || strcmp(k->vals[i], OP_ANY)) continue;
    char rule[OP_FORMULA], why[96];
    if (q->max < 2147483647L)
      snprintf(rule, sizeof rule, "%s >= %ld && %s <= %ld", q->name, q->min, q->name, q->max);
    else
      snprintf(rule, sizeof rule, "%s >= %ld", q->name, q->min);
    snprintf(why, sizeof why, "%s must be from %ld to %ld", q->name, q->min, q->max);
    op_plan_check(p, rule, why);
  }
}

int op_plan_resolve(op_inst *k, char *msg, size_t n) {
  if (k->plan) return 0;
  op_plan *p = xcalloc(1, sizeof *p);
  for (int i = 0; i < 3; i++) snprintf(p->grid[i], sizeof p->grid[i], "1");
  op_plan_ranges(k, p); /* first: a count out of range fails before the rules that divide by it */
  k->op->plan(k, p);
  p->args_size = op_args_size(p->args, p->nargs);
  const char *bad = p->ntun >= OP_MAX_TUNABLES ? "tunables"
                    : p->nchecks > OP_MAX_CHECKS ? "launch rules" : NULL;
  if (bad) {
    snprintf(msg, n, "kernel %s: more %s than the plan holds (an op descriptor bug)", k->name, bad);
    free(p);
    return -1;
  }
  k->plan = p;
  return 0;
}

/* A name of a formula: a parameter's value in shape. */
static int op_eval_lookup(const void *ctx, const char *name, size_t len, long long *v, char *note,
                          size_t notelen) {
  const op_ev_ctx *c = ctx;
  (void)note;
  (void)notelen;
  for (int i = 0; i < c->k->op->nparams; i++)
    if (strlen(c->k->op->params[i].name) == len && !strncmp(c->k->op->params[i].name, name, len)) {
      *v = c->shape[i];
      return 0;
    }
  if (c->units > 0 && len == strlen("device_units") && !strncmp(name, "device_units", len)) {
    *v = c->units;
    return 0;
  }
  return -1;
}

int op_eval(const op_inst *k, const long *shape, const char *expr, long *out) {
  return op_eval_units(k, shape, 0, expr, out);
}

int op_eval_units(const op_inst *k, const long *shape, long units, const char *expr, long *out) {
  op_ev_ctx c = {k, shape, units};
  long long v;
  char err[160];
  if (ex_eval(expr, op_eval_lookup, &c, &v, err, sizeof err) < 0 || v < LONG_MIN || v > LONG_MAX) return -1;
  *out = (long)v;
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
