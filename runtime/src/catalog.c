/* catalog.c: hkgen catalogues. Reads and validates DIR/manifest.json (every
   error names the file, the kernel and the key), and chooses the kernel for a
   problem (hkrt_select). Argument packing and launches are in kernarg.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "hkrt_cat.h"
#include "target.h"

/* A kernel for target kt serves target (NULL: any AMD target). */
static int hkrt_target_fits(const char *kt, const char *target) {
  return target ? !strcmp(kt, target) : tgt_is_amd(tgt_find(kt));
}

/* ---- small lookups -------------------------------------------------------------- */

const hkrt_kv *hkrt_kernel_baked(const hkrt_kernel *k, const char *name) {
  for (size_t i = 0; i < k->nparams; i++)
    if (!strcmp(k->params[i].name, name)) return &k->params[i];
  return NULL;
}

int hkrt_kernel_is_runtime(const hkrt_kernel *k, const char *name) {
  for (size_t i = 0; i < k->nrt; i++)
    if (!strcmp(k->rt[i], name)) return 1;
  return 0;
}

const hkrt_karg *hkrt_kernel_karg(const hkrt_kernel *k, const char *name) {
  for (size_t i = 0; i < k->nargs; i++)
    if (!strcmp(k->args[i].name, name)) return &k->args[i];
  return NULL;
}

int hkrt_parse_ll(const char *s, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno == ERANGE || *s == ' ' || *s == '+') return -1;
  *out = v;
  return 0;
}

/* ---- manifest validation ----------------------------------------------------------- */

typedef struct {
  hkrt_catalog *cat;
  const hkrt_json *obj; /* the kernel's object */
  size_t index;
  const char *name;     /* NULL until known */
} hkrt_mctx;

static hkrt_status hkrt_mfail(const hkrt_mctx *m, const hkrt_json *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static hkrt_status hkrt_mfail(const hkrt_mctx *m, const hkrt_json *at, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (m->name)
    return hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: kernel %zu (%s): %s", m->cat->path, at->line, at->col,
                     m->index, m->name, what);
  return hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: kernel %zu: %s", m->cat->path, at->line, at->col,
                   m->index, what);
}

/* The member KEY of the kernel's object (or of obj), of the type wanted. */
static const hkrt_json *hkrt_mget(const hkrt_mctx *m, const hkrt_json *obj, const char *key,
                                  hkrt_json_type type, hkrt_status *st) {
  const hkrt_json *v = hkrt_json_get(obj, key);
  if (!v) *st = hkrt_mfail(m, obj, "missing key \"%s\"", key);
  else if (v->type != type)
    *st = hkrt_mfail(m, v, "\"%s\" must be %s, not %s", key, hkrt_json_type_name(type),
                     hkrt_json_type_name(v->type));
  return *st == HKRT_OK ? v : NULL;
}

static const char *hkrt_mstr(const hkrt_mctx *m, const hkrt_json *obj, const char *key,
                             hkrt_status *st) {
  const hkrt_json *v = hkrt_mget(m, obj, key, HKRT_JSON_STRING, st);
  if (v && !v->str[0]) *st = hkrt_mfail(m, v, "\"%s\" is empty", key);
  return *st == HKRT_OK ? v->str : NULL;
}

static int hkrt_mint(const hkrt_mctx *m, const hkrt_json *obj, const char *key, long long lo,
                     long long hi, long long *out, hkrt_status *st) {
  const hkrt_json *v = hkrt_mget(m, obj, key, HKRT_JSON_NUMBER, st);
  if (v && (!v->is_int || v->num < lo || v->num > hi))
    *st = hkrt_mfail(m, v, "\"%s\" must be an integer from %lld to %lld, not %s", key, lo, hi, v->str);
  if (*st == HKRT_OK) *out = v->num;
  return *st == HKRT_OK ? 0 : -1;
}

static hkrt_status hkrt_read_params(const hkrt_mctx *m, hkrt_kernel *k) {
  hkrt_status st = HKRT_OK;
  const hkrt_json *p = hkrt_mget(m, m->obj, "params", HKRT_JSON_OBJECT, &st);
  if (!p) return st;
  k->params = calloc(p->count ? p->count : 1, sizeof *k->params);
  if (!k->params) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (const hkrt_json *v = p->child; v; v = v->next) {
    if (v->type != HKRT_JSON_STRING)
      return hkrt_mfail(m, v, "params: \"%s\" must be a string, not %s", v->key,
                        hkrt_json_type_name(v->type));
    k->params[k->nparams++] = (hkrt_kv){v->key, v->str};
  }
  return HKRT_OK;
}

static hkrt_status hkrt_read_runtime(const hkrt_mctx *m, hkrt_kernel *k) {
  hkrt_status st = HKRT_OK;
  const hkrt_json *a = hkrt_mget(m, m->obj, "runtime_params", HKRT_JSON_ARRAY, &st);
  if (!a) return st;
  k->rt = calloc(a->count ? a->count : 1, sizeof *k->rt);
  if (!k->rt) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (const hkrt_json *v = a->child; v; v = v->next) {
    if (v->type != HKRT_JSON_STRING || !v->str[0])
      return hkrt_mfail(m, v, "runtime_params: each element must be a parameter name");
    if (hkrt_kernel_baked(k, v->str))
      return hkrt_mfail(m, v, "runtime_params: %s is also baked in params", v->str);
    k->rt[k->nrt++] = v->str;
  }
  return HKRT_OK;
}

/* An array of names (as "tuning"); absent: none. */
static hkrt_status hkrt_read_names(const hkrt_mctx *m, const char *key, const char ***out, size_t *n) {
  const hkrt_json *a = hkrt_json_get(m->obj, key);
  if (!a) return HKRT_OK;
  if (a->type != HKRT_JSON_ARRAY) return hkrt_mfail(m, a, "\"%s\" must be an array of names", key);
  *out = calloc(a->count ? a->count : 1, sizeof **out);
  if (!*out) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (const hkrt_json *v = a->child; v; v = v->next) {
    if (v->type != HKRT_JSON_STRING || !v->str[0])
      return hkrt_mfail(m, v, "%s: each element must be a parameter name", key);
    (*out)[(*n)++] = v->str;
  }
  return HKRT_OK;
}

/* "defaults": {name: value}, strings; absent: none. */
static hkrt_status hkrt_read_defaults(const hkrt_mctx *m, hkrt_kernel *k) {
  const hkrt_json *o = hkrt_json_get(m->obj, "defaults");
  if (!o) return HKRT_OK;
  if (o->type != HKRT_JSON_OBJECT) return hkrt_mfail(m, o, "\"defaults\" must be an object");
  k->defaults = calloc(o->count ? o->count : 1, sizeof *k->defaults);
  if (!k->defaults) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (const hkrt_json *v = o->child; v; v = v->next) {
    if (v->type != HKRT_JSON_STRING)
      return hkrt_mfail(m, v, "defaults: \"%s\" must be a string, not %s", v->key, hkrt_json_type_name(v->type));
    k->defaults[k->ndefaults++] = (hkrt_kv){v->key, v->str};
  }
  return HKRT_OK;
}

/* Names a formula (grid or launch rule) may use, all taken as 1 to check
   that it parses and names only what the kernel has. */
static int hkrt_formula_name_known(const void *ctx, const char *name, size_t len, long long *v, char *note,
                                   size_t notelen) {
  const hkrt_kernel *k = ctx;
  char n[64];
  (void)note;
  (void)notelen;
  if (len >= sizeof n) return -1;
  memcpy(n, name, len);
  n[len] = 0;
  const hkrt_kv *b = hkrt_kernel_baked(k, n);
  const hkrt_karg *a = hkrt_kernel_karg(k, n);
  *v = 1;
  if (!strcmp(n, HKRT_DEVICE_UNITS)) return 0; /* known at launch */
  return (b && hkrt_parse_ll(b->value, v) == 0) || (a && a->cls == HKRT_KA_INT) ? 0 : -1;
}

static hkrt_status hkrt_formula_ok(const hkrt_mctx *m, const hkrt_json *at, const hkrt_kernel *k,
                                   const char *what, const char *f) {
  char err[160];
  long long x;
  if (ex_eval(f, hkrt_formula_name_known, k, &x, err, sizeof err) < 0)
    return hkrt_mfail(m, at, "%s \"%s\": %s", what, f, err);
  return HKRT_OK;
}

/* "checks": [{"rule": formula, "why": text}]; absent: none. Read after the
   arguments, whose names the rules use. */
static hkrt_status hkrt_read_checks(const hkrt_mctx *m, hkrt_kernel *k) {
  hkrt_status st = HKRT_OK;
  const hkrt_json *a = hkrt_json_get(m->obj, "checks");
  if (!a) return HKRT_OK;
  if (a->type != HKRT_JSON_ARRAY) return hkrt_mfail(m, a, "\"checks\" must be an array");
  k->checks = calloc(a->count ? a->count : 1, sizeof *k->checks);
  if (!k->checks) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (const hkrt_json *c = a->child; c; c = c->next) {
    if (c->type != HKRT_JSON_OBJECT) return hkrt_mfail(m, c, "checks: each must be an object");
    hkrt_rule *r = &k->checks[k->nchecks];
    if (!(r->rule = hkrt_mstr(m, c, "rule", &st)) || !(r->why = hkrt_mstr(m, c, "why", &st))) return st;
    if ((st = hkrt_formula_ok(m, c, k, "launch rule", r->rule))) return st;
    k->nchecks++;
  }
  return HKRT_OK;
}

/* "cost": optional, a formula of the problem's parameters and
   device_units (selection's tie-break: hkrt_select). */
static hkrt_status hkrt_read_cost(const hkrt_mctx *m, hkrt_kernel *k) {
  const hkrt_json *c = hkrt_json_get(m->obj, "cost");
  if (!c) return HKRT_OK;
  if (c->type != HKRT_JSON_STRING) return hkrt_mfail(m, c, "\"cost\" must be a formula (a string)");
  k->cost = c->str;
  return hkrt_formula_ok(m, c, k, "cost", c->str);
}

/* A relative path inside the catalogue: no leading '/', no ".." part. */
static int hkrt_path_inside(const char *f) {
  if (f[0] == '/') return 0;
  for (const char *s = f; *s;) {
    size_t n = strcspn(s, "/");
    if (n == 2 && s[0] == '.' && s[1] == '.') return 0;
    s += n + (s[n] == '/');
  }
  return 1;
}

/* ---- kernel argument types ---------------------------------------------------------- */

static const struct {
  const char *type;
  hkrt_ka_class cls;
  unsigned size;
  long long lo, hi;
} hkrt_scalars[] = {
    {"int", HKRT_KA_INT, 4, INT_MIN, INT_MAX},
    {"unsigned", HKRT_KA_INT, 4, 0, UINT_MAX},
    {"long", HKRT_KA_INT, 8, LLONG_MIN, LLONG_MAX},
    {"float", HKRT_KA_FLOAT, 4, 0, 0},
    {"double", HKRT_KA_FLOAT, 8, 0, 0},
};

static const struct {
  const char *type;
  unsigned align;
} hkrt_elems[] = {{"hk_bf16", 2}, {"hk_f16", 2}, {"hk_fp8", 1}, {"float", 4}, {"int", 4},
                  {"unsigned", 4}, {"long", 8},  {"double", 8}, {"void", 1}};

/* "const hk_bf16 *" -> element alignment 2; 0 when not a known pointer. */
static unsigned hkrt_pointer_align(const char *type) {
  size_t n = strlen(type);
  if (n < 3 || strcmp(type + n - 2, " *")) return 0;
  if (!strncmp(type, "const ", 6)) type += 6, n -= 6;
  for (size_t i = 0; i < sizeof hkrt_elems / sizeof hkrt_elems[0]; i++)
    if (strlen(hkrt_elems[i].type) == n - 2 && !strncmp(type, hkrt_elems[i].type, n - 2))
      return hkrt_elems[i].align;
  return 0;
}

#define HKRT_TMAP_BYTES 128

static int hkrt_type_parse(const char *type, hkrt_karg *a) {
  unsigned al = hkrt_pointer_align(type);
  if (!strcmp(type, "hk_tmap")) {
    a->cls = HKRT_KA_TMAP;
    return a->size == HKRT_TMAP_BYTES ? 0 : -1;
  }
  if (al) {
    a->cls = HKRT_KA_PTR;
    a->elem_align = al;
    return a->size == sizeof(void *) ? 0 : -1;
  }
  for (size_t i = 0; i < sizeof hkrt_scalars / sizeof hkrt_scalars[0]; i++)
    if (!strcmp(type, hkrt_scalars[i].type)) {
      a->cls = hkrt_scalars[i].cls;
      a->lo = hkrt_scalars[i].lo;
      a->hi = hkrt_scalars[i].hi;
      return a->size == hkrt_scalars[i].size ? 0 : -1;
    }
  return -2;
}

/* The "tmap" recipe of a tensor-map argument: {"tensor", "dims": [names,
   innermost first], "strides": [names of dims 1..], "box": [elements per
   dim], "swizzle"}; the names it uses are checked against the other
   arguments once all are read. */
static hkrt_status hkrt_read_tmap(const hkrt_mctx *m, const hkrt_json *o, hkrt_karg *a) {
  hkrt_status st = HKRT_OK;
  long long sw = 0;
  const hkrt_json *t = hkrt_mget(m, o, "tmap", HKRT_JSON_OBJECT, &st);
  if (!t) return st;
  hkrt_tmap_recipe *r = &a->tmap;
  r->tensor = hkrt_mstr(m, t, "tensor", &st);
  const hkrt_json *dims = st ? NULL : hkrt_mget(m, t, "dims", HKRT_JSON_ARRAY, &st);
  const hkrt_json *strides = st ? NULL : hkrt_mget(m, t, "strides", HKRT_JSON_ARRAY, &st);
  const hkrt_json *box = st ? NULL : hkrt_mget(m, t, "box", HKRT_JSON_ARRAY, &st);
  if (!st) hkrt_mint(m, t, "swizzle", 0, 128, &sw, &st);
  if (st) return st;
  if (dims->count < 2 || dims->count > HKRT_TMAP_MAX_RANK)
    return hkrt_mfail(m, dims, "argument %s: a tensor map of rank %zu (allowed: 2 to %d)", a->name, dims->count,
                      HKRT_TMAP_MAX_RANK);
  if (strides->count != dims->count - 1 || box->count != dims->count)
    return hkrt_mfail(m, t, "argument %s: %zu dims need %zu strides and %zu box sizes, not %zu and %zu", a->name,
                      dims->count, dims->count - 1, dims->count, strides->count, box->count);
  r->rank = (unsigned)dims->count;
  unsigned i = 0;
  for (const hkrt_json *d = dims->child; d; d = d->next, i++) {
    if (d->type != HKRT_JSON_STRING || !d->str[0])
      return hkrt_mfail(m, d, "argument %s: \"dims\" must hold names", a->name);
    r->dims[i] = d->str;
  }
  i = 0;
  for (const hkrt_json *d = strides->child; d; d = d->next, i++) {
    if (d->type != HKRT_JSON_STRING || !d->str[0])
      return hkrt_mfail(m, d, "argument %s: \"strides\" must hold names", a->name);
    r->strides[i] = d->str;
  }
  i = 0;
  for (const hkrt_json *d = box->child; d; d = d->next, i++) {
    if (d->type != HKRT_JSON_NUMBER || !d->is_int || d->num < 1 || d->num > 256)
      return hkrt_mfail(m, d, "argument %s: box sizes must be integers from 1 to 256, not %s", a->name,
                        d->type == HKRT_JSON_NUMBER ? d->str : hkrt_json_type_name(d->type));
    r->box[i] = (unsigned)d->num;
  }
  if (sw != 0 && sw != 32 && sw != 64 && sw != 128)
    return hkrt_mfail(m, t, "argument %s: swizzle %lld is not 0, 32, 64 or 128", a->name, sw);
  r->swizzle = (unsigned)sw;
  return HKRT_OK;
}

HKRT_LOCAL const char *hkrt_karg_align_why(const hkrt_karg *a) {
  return a->align_declared ? "the kernel's wide accesses (manifest \"align\")" : a->type;
}

/* "align": optional, a pointer's address alignment when the kernel needs more than its element's (a
   power of two up to 256, a multiple of the element's). */
static hkrt_status hkrt_read_ptr_align(const hkrt_mctx *m, const hkrt_json *o, hkrt_karg *a) {
  hkrt_status st = HKRT_OK;
  long long al = 0;
  if (a->cls != HKRT_KA_PTR) return hkrt_mfail(m, o, "argument %s (%s): \"align\" is for pointers", a->name, a->type);
  if (hkrt_mint(m, o, "align", 1, 256, &al, &st)) return st;
  if (al & (al - 1) || al % a->elem_align)
    return hkrt_mfail(m, o, "argument %s: \"align\" %lld is not a power of two that is a multiple of %u", a->name,
                      al, a->elem_align);
  a->elem_align = (unsigned)al;
  a->align_declared = 1;
  return HKRT_OK;
}

static hkrt_status hkrt_read_arg(const hkrt_mctx *m, const hkrt_json *o, hkrt_karg *a,
                                 unsigned total) {
  hkrt_status st = HKRT_OK;
  long long off = 0, size = 0;
  if (o->type != HKRT_JSON_OBJECT) return hkrt_mfail(m, o, "kernarg.args: each must be an object");
  a->name = hkrt_mstr(m, o, "name", &st);
  if (a->name) a->type = hkrt_mstr(m, o, "type", &st);
  if (a->type) hkrt_mint(m, o, "offset", 0, HKRT_MAX_KERNARG, &off, &st);
  if (st == HKRT_OK) hkrt_mint(m, o, "size", 1, HKRT_TMAP_BYTES, &size, &st);
  if (st != HKRT_OK) return st;
  a->offset = (unsigned)off;
  a->size = (unsigned)size;
  int t = hkrt_type_parse(a->type, a);
  if (t == -2) return hkrt_mfail(m, o, "argument %s: unknown type '%s'", a->name, a->type);
  if (t < 0) return hkrt_mfail(m, o, "argument %s: type '%s' with size %u", a->name, a->type, a->size);
  if (a->cls == HKRT_KA_TMAP && (st = hkrt_read_tmap(m, o, a))) return st;
  if (hkrt_json_get(o, "align") && (st = hkrt_read_ptr_align(m, o, a))) return st;
  unsigned align = a->cls == HKRT_KA_TMAP ? 64 : a->size;
  if (a->offset % align || a->offset + a->size > total)
    return hkrt_mfail(m, o, "argument %s: offset %u (size %u) is misaligned or past kernarg.size %u",
                      a->name, a->offset, a->size, total);
  return HKRT_OK;
}

static hkrt_status hkrt_args_disjoint(const hkrt_mctx *m, const hkrt_json *at, const hkrt_kernel *k) {
  for (size_t i = 0; i < k->nargs; i++)
    for (size_t j = 0; j < i; j++) {
      const hkrt_karg *a = &k->args[i], *b = &k->args[j];
      if (!strcmp(a->name, b->name)) return hkrt_mfail(m, at, "argument %s is listed twice", a->name);
      if (a->offset < b->offset + b->size && b->offset < a->offset + a->size)
        return hkrt_mfail(m, at, "arguments %s and %s overlap", b->name, a->name);
    }
  return HKRT_OK;
}

static hkrt_status hkrt_read_kernarg(const hkrt_mctx *m, hkrt_kernel *k) {
  hkrt_status st = HKRT_OK;
  long long size = 0;
  const hkrt_json *ka = hkrt_mget(m, m->obj, "kernarg", HKRT_JSON_OBJECT, &st);
  const hkrt_json *args = ka ? hkrt_mget(m, ka, "args", HKRT_JSON_ARRAY, &st) : NULL;
  if (!args || hkrt_mint(m, ka, "size", 0, HKRT_MAX_KERNARG, &size, &st) < 0) return st;
  if (args->count > HKRT_MAX_ARGS) return hkrt_mfail(m, args, "more than %d arguments", HKRT_MAX_ARGS);
  k->args_size = (unsigned)size;
  k->args = calloc(args->count ? args->count : 1, sizeof *k->args);
  if (!k->args) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (const hkrt_json *a = args->child; a; a = a->next) {
    if ((st = hkrt_read_arg(m, a, &k->args[k->nargs], k->args_size))) return st;
    k->nargs++;
  }
  if ((st = hkrt_args_disjoint(m, args, k))) return st;
  for (size_t i = 0; i < k->nargs; i++) {
    const hkrt_karg *a = &k->args[i], *p;
    if (a->cls != HKRT_KA_TMAP) continue;
    if (!(p = hkrt_kernel_karg(k, a->tmap.tensor)) || p->cls != HKRT_KA_PTR)
      return hkrt_mfail(m, ka, "tensor map %s: %s is not a pointer argument", a->name, a->tmap.tensor);
    for (unsigned j = 0; j + 1 < a->tmap.rank; j++)
      if (!(p = hkrt_kernel_karg(k, a->tmap.strides[j])) || p->cls != HKRT_KA_INT)
        return hkrt_mfail(m, ka, "tensor map %s: stride %s is not an integer argument", a->name,
                          a->tmap.strides[j]);
  }
  for (size_t i = 0; i < k->nrt; i++) {
    const hkrt_karg *a = hkrt_kernel_karg(k, k->rt[i]);
    if (!a || a->cls != HKRT_KA_INT)
      return hkrt_mfail(m, ka, "run-time parameter %s is not an integer kernel argument", k->rt[i]);
  }
  return HKRT_OK;
}

static hkrt_status hkrt_read_block(const hkrt_mctx *m, hkrt_kernel *k) {
  hkrt_status st = HKRT_OK;
  const hkrt_json *b = hkrt_mget(m, m->obj, "block", HKRT_JSON_ARRAY, &st);
  if (!b) return st;
  if (b->count != 3) return hkrt_mfail(m, b, "block must have 3 sizes, not %zu", b->count);
  unsigned long long total = 1;
  int i = 0;
  for (const hkrt_json *v = b->child; v; v = v->next, i++) {
    if (v->type != HKRT_JSON_NUMBER || !v->is_int || v->num < 1 || v->num > 1024)
      return hkrt_mfail(m, v, "block sizes must be integers from 1 to 1024");
    k->block[i] = (unsigned)v->num;
    total *= k->block[i];
  }
  if (total > 1024) return hkrt_mfail(m, b, "block of %llu threads (at most 1024)", total);
  /* optional (manifests before it have none): dynamic shared memory bytes */
  const hkrt_json *d = hkrt_json_get(m->obj, "dynamic_lds");
  k->dynamic_lds = 0;
  if (d) {
    if (d->type != HKRT_JSON_NUMBER || !d->is_int || d->num < 0 || d->num > 16 * 1024 * 1024)
      return hkrt_mfail(m, d, "dynamic_lds must be an integer from 0 to 16777216");
    k->dynamic_lds = (unsigned)d->num;
  }
  return HKRT_OK;
}

/* "grid_max": the target's launch limit per axis in blocks (absent: only
   the 2^31 - 1 every grid size obeys). */
static hkrt_status hkrt_read_grid_max(const hkrt_mctx *m, hkrt_kernel *k) {
  const hkrt_json *g = hkrt_json_get(m->obj, "grid_max");
  for (int i = 0; i < 3; i++) k->grid_max[i] = 0x7fffffffLL;
  if (!g) return HKRT_OK;
  if (g->type != HKRT_JSON_ARRAY || g->count != 3) return hkrt_mfail(m, g, "grid_max must be an array of 3 sizes");
  int i = 0;
  for (const hkrt_json *v = g->child; v; v = v->next, i++) {
    if (v->type != HKRT_JSON_NUMBER || !v->is_int || v->num < 1)
      return hkrt_mfail(m, v, "grid_max sizes must be positive integers");
    if (v->num < k->grid_max[i]) k->grid_max[i] = (long long)v->num;
  }
  return HKRT_OK;
}

static hkrt_status hkrt_read_grid(const hkrt_mctx *m, hkrt_kernel *k) {
  hkrt_status st = HKRT_OK;
  const hkrt_json *g = hkrt_mget(m, m->obj, "grid", HKRT_JSON_ARRAY, &st);
  if (!g) return st;
  if (g->count != 3) return hkrt_mfail(m, g, "grid must have 3 formulas, not %zu", g->count);
  int i = 0;
  for (const hkrt_json *v = g->child; v; v = v->next, i++) {
    char what[24];
    if (v->type != HKRT_JSON_STRING) return hkrt_mfail(m, v, "grid formulas must be strings");
    snprintf(what, sizeof what, "grid[%d]", i);
    if ((st = hkrt_formula_ok(m, v, k, what, v->str))) return st;
    k->grid[i] = v->str;
  }
  return hkrt_read_grid_max(m, k);
}

/* "sha256" of the code object: 64 lowercase hex digits. Optional here (a
   catalogue is opened to select and pack too); a kernel without one is never
   loaded. */
static hkrt_status hkrt_read_sha(const hkrt_mctx *m, hkrt_kernel *k) {
  const hkrt_json *v = hkrt_json_get(m->obj, "sha256");
  if (!v) return HKRT_OK;
  int ok = v->type == HKRT_JSON_STRING && strlen(v->str) == 64 && strspn(v->str, "0123456789abcdef") == 64;
  if (!ok) return hkrt_mfail(m, v, "\"sha256\" must be 64 lowercase hexadecimal digits");
  k->sha256 = v->str;
  return HKRT_OK;
}

static hkrt_status hkrt_read_kernel(hkrt_catalog *cat, const hkrt_json *o, size_t index,
                                    hkrt_kernel *k) {
  hkrt_mctx m = {cat, o, index, NULL};
  hkrt_status st = HKRT_OK;
  k->cat = cat;
  k->index = index;
  k->line = o->line;
  k->col = o->col;
  if (o->type != HKRT_JSON_OBJECT) return hkrt_mfail(&m, o, "must be an object");
  if (!(k->name = m.name = hkrt_mstr(&m, o, "name", &st))) return st;
  if (!(k->op = hkrt_mstr(&m, o, "op", &st))) return st;
  if (!(k->target = hkrt_mstr(&m, o, "target", &st))) return st;
  if (!(k->file = hkrt_mstr(&m, o, "file", &st))) return st;
  if (!hkrt_path_inside(k->file))
    return hkrt_mfail(&m, hkrt_json_get(o, "file"), "file \"%s\" is not a relative path inside the catalogue",
                      k->file);
  if ((st = hkrt_read_sha(&m, k)) || (st = hkrt_read_params(&m, k)) || (st = hkrt_read_runtime(&m, k)) ||
      (st = hkrt_read_kernarg(&m, k)) || (st = hkrt_read_block(&m, k)) || (st = hkrt_read_grid(&m, k)) ||
      (st = hkrt_read_names(&m, "tuning", &k->tuning, &k->ntuning)) || (st = hkrt_read_defaults(&m, k)) ||
      (st = hkrt_read_checks(&m, k)) || (st = hkrt_read_cost(&m, k)))
    return st;
  return HKRT_OK;
}

/* ---- the manifest's top level --------------------------------------------------------- */

static hkrt_status hkrt_read_header(hkrt_catalog *cat, const hkrt_json *root, int *emulated) {
  const hkrt_json *v;
  if (root->type != HKRT_JSON_OBJECT)
    return hkrt_fail(HKRT_ERR_IO, "%s: the manifest must be an object", cat->path);
  if ((v = hkrt_json_get(root, "format")) && (v->type != HKRT_JSON_NUMBER || !v->is_int || v->num != 1))
    return hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: format %s is not one this libhkrt reads (1)", cat->path,
                     v->line, v->col, v->str ? v->str : "?");
  if ((v = hkrt_json_get(root, "kind")) && (v->type != HKRT_JSON_STRING || strcmp(v->str, "catalogue")))
    return hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: kind is not \"catalogue\" (a sources.json from hkgen gen has no code objects)",
                     cat->path, v->line, v->col);
  *emulated = 0;
  if ((v = hkrt_json_get(root, "backend"))) {
    if (v->type != HKRT_JSON_STRING || (strcmp(v->str, "emulator") && strcmp(v->str, "gpu")))
      return hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: unknown backend (allowed: \"gpu\", \"emulator\")",
                       cat->path, v->line, v->col);
    *emulated = !strcmp(v->str, "emulator");
  }
  v = hkrt_json_get(root, "kernels");
  if (!v || v->type != HKRT_JSON_ARRAY)
    return hkrt_fail(HKRT_ERR_IO, "%s: missing key \"kernels\" (an array)", cat->path);
  return HKRT_OK;
}

static hkrt_status hkrt_check_backend(const hkrt_catalog *cat, int emulated) {
  int emu_dev = hkrt_device_backend(cat->dev) == HKRT_BACKEND_EMU;
  if (emulated && !emu_dev)
    return hkrt_fail(HKRT_ERR_ARG, "%s: an emulated catalogue (\"backend\": \"emulator\") needs an "
                     "HKRT_BACKEND_EMU device", cat->path);
  if (!emulated && emu_dev)
    return hkrt_fail(HKRT_ERR_ARG, "%s: holds GPU code objects; the emulator runs catalogues built "
                     "with hkgen build --emulate", cat->path);
  return HKRT_OK;
}

static int hkrt_kernel_order(const void *a, const void *b) {
  const hkrt_kernel *x = *(const hkrt_kernel *const *)a, *y = *(const hkrt_kernel *const *)b;
  int c = strcmp(x->name, y->name);
  if (!c) c = strcmp(x->target, y->target);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Two kernels with one name and target: sorted, so large catalogues stay fast. */
static hkrt_status hkrt_check_unique(const hkrt_catalog *cat) {
  const hkrt_kernel **v = malloc((cat->n ? cat->n : 1) * sizeof *v);
  if (!v) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < cat->n; i++) v[i] = &cat->kernels[i];
  qsort(v, cat->n, sizeof *v, hkrt_kernel_order);
  hkrt_status st = HKRT_OK;
  for (size_t i = 1; i < cat->n && !st; i++)
    if (!strcmp(v[i]->name, v[i - 1]->name) && !strcmp(v[i]->target, v[i - 1]->target))
      st = hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: kernel %s for %s is listed twice (first at %d:%d)",
                     cat->path, v[i]->line, v[i]->col, v[i]->name, v[i]->target, v[i - 1]->line,
                     v[i - 1]->col);
  free(v);
  return st;
}

static hkrt_status hkrt_read_kernels(hkrt_catalog *cat, const hkrt_json *list) {
  cat->kernels = calloc(list->count ? list->count : 1, sizeof *cat->kernels);
  if (!cat->kernels) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  size_t i = 0;
  for (const hkrt_json *o = list->child; o; o = o->next, i++) {
    hkrt_kernel *k = &cat->kernels[i];
    pthread_mutex_init(&k->lock, NULL);
    cat->n++; /* counted before reading: close frees what it holds */
    hkrt_status st = hkrt_read_kernel(cat, o, i, k);
    if (st != HKRT_OK) return st;
  }
  return hkrt_check_unique(cat);
}

/* ---- the "tuned" list ----------------------------------------------------------------- */

static hkrt_status hkrt_tfail(const hkrt_catalog *cat, const hkrt_json *at, size_t i, const char *what) {
  return hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: tuned entry %zu: %s", cat->path, at->line, at->col, i, what);
}

static const char *hkrt_tstr(const hkrt_json *o, const char *key) {
  const hkrt_json *v = hkrt_json_get(o, key);
  return v && v->type == HKRT_JSON_STRING && v->str[0] ? v->str : NULL;
}

static hkrt_status hkrt_read_tuned_one(hkrt_catalog *cat, const hkrt_json *o, size_t i, hkrt_tuned *t) {
  char what[300];
  const hkrt_json *pb = o->type == HKRT_JSON_OBJECT ? hkrt_json_get(o, "problem") : NULL;
  const char *kernel = o->type == HKRT_JSON_OBJECT ? hkrt_tstr(o, "kernel") : NULL;
  t->op = o->type == HKRT_JSON_OBJECT ? hkrt_tstr(o, "op") : NULL;
  t->target = o->type == HKRT_JSON_OBJECT ? hkrt_tstr(o, "target") : NULL;
  if (!t->op || !t->target || !kernel || !pb || pb->type != HKRT_JSON_OBJECT)
    return hkrt_tfail(cat, o, i, "needs \"op\", \"target\", \"kernel\" (strings) and \"problem\" (an object)");
  t->problem = calloc(pb->count ? pb->count : 1, sizeof *t->problem);
  if (!t->problem) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  for (const hkrt_json *v = pb->child; v; v = v->next) {
    if (v->type != HKRT_JSON_STRING) return hkrt_tfail(cat, v, i, "problem values must be strings");
    t->problem[t->nproblem++] = (hkrt_kv){v->key, v->str};
  }
  for (size_t j = 0; j < cat->n && !t->kernel; j++)
    if (!strcmp(cat->kernels[j].name, kernel) && !strcmp(cat->kernels[j].target, t->target) &&
        !strcmp(cat->kernels[j].op, t->op))
      t->kernel = &cat->kernels[j];
  if (!t->kernel) {
    snprintf(what, sizeof what, "no %s kernel %s for %s in the catalogue", t->op, kernel, t->target);
    return hkrt_tfail(cat, o, i, what);
  }
  return HKRT_OK;
}

/* Optional: absent, no entry. */
static hkrt_status hkrt_read_tuned(hkrt_catalog *cat, const hkrt_json *root) {
  const hkrt_json *list = hkrt_json_get(root, "tuned");
  if (!list) return HKRT_OK;
  if (list->type != HKRT_JSON_ARRAY)
    return hkrt_fail(HKRT_ERR_IO, "%s:%d:%d: \"tuned\" must be an array", cat->path, list->line, list->col);
  cat->tuned = calloc(list->count ? list->count : 1, sizeof *cat->tuned);
  if (!cat->tuned) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  size_t i = 0;
  for (const hkrt_json *o = list->child; o; o = o->next, i++) {
    cat->ntuned++; /* counted first: close frees what it holds */
    hkrt_status st = hkrt_read_tuned_one(cat, o, i, &cat->tuned[i]);
    if (st != HKRT_OK) return st;
  }
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_catalog_open(hkrt_device *dev, const char *dir, hkrt_catalog **out) {
  if (!dev || !dir || !out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_catalog_open: NULL argument");
  *out = NULL;
  hkrt_catalog *cat = calloc(1, sizeof *cat);
  size_t n = strlen(dir) + sizeof "/manifest.json";
  if (!cat || !(cat->dir = strdup(dir)) || !(cat->path = malloc(n))) {
    hkrt_catalog_close(cat);
    return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  }
  cat->dev = dev;
  snprintf(cat->path, n, "%s/manifest.json", dir);
  int emulated = 0;
  hkrt_status st = hkrt_json_read_file(cat->path, &cat->doc);
  const hkrt_json *root = st == HKRT_OK ? hkrt_json_root(cat->doc) : NULL;
  if (st == HKRT_OK) st = hkrt_read_header(cat, root, &emulated);
  if (st == HKRT_OK) st = hkrt_check_backend(cat, emulated);
  if (st == HKRT_OK) st = hkrt_read_kernels(cat, hkrt_json_get(root, "kernels"));
  if (st == HKRT_OK) st = hkrt_read_tuned(cat, root);
  if (st != HKRT_OK) {
    hkrt_catalog_close(cat);
    return st;
  }
  *out = cat;
  return HKRT_OK;
}

HKRT_API void hkrt_catalog_close(hkrt_catalog *cat) {
  if (!cat) return;
  for (size_t i = 0; i < cat->n; i++) {
    hkrt_kernel *k = &cat->kernels[i];
    hkrt_module_unload(k->mod);
    pthread_mutex_destroy(&k->lock);
    free(k->params);
    free(k->rt);
    free(k->args);
    free(k->tuning);
    free(k->defaults);
    free(k->checks);
  }
  free(cat->kernels);
  for (size_t i = 0; i < cat->ntuned; i++) free(cat->tuned[i].problem);
  free(cat->tuned);
  hkrt_json_free(cat->doc);
  free(cat->dir);
  free(cat->path);
  free(cat);
}

HKRT_API const char *hkrt_kernel_name(const hkrt_kernel *k) { return k ? k->name : "(null)"; }
HKRT_API unsigned hkrt_kernel_dynamic_lds(const hkrt_kernel *k) { return k ? k->dynamic_lds : 0; }

/* Whether a tensor-map argument's recipe holds the pointer named. */
static int hkrt_tmap_covers(const hkrt_kernel *k, const char *name) {
  for (size_t i = 0; i < k->nargs; i++)
    if (k->args[i].cls == HKRT_KA_TMAP && !strcmp(k->args[i].tmap.tensor, name)) return 1;
  return 0;
}

HKRT_API hkrt_status hkrt_kernel_set_pointer(const hkrt_kernel *k, void *args_buf, size_t args_size,
                                             const char *name, const void *ptr) {
  if (!k || !args_buf || !name) return hkrt_fail(HKRT_ERR_ARG, "hkrt_kernel_set_pointer: NULL argument");
  if (args_size < k->args_size)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: the packed arguments are %zu bytes, not its %u", k->name, args_size,
                     k->args_size);
  const hkrt_karg *a = hkrt_kernel_karg(k, name);
  if (!a) return hkrt_fail(HKRT_ERR_NOT_FOUND, "kernel %s: no argument '%s'", k->name, name);
  if (a->cls != HKRT_KA_PTR)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is a %s, not a pointer", k->name, name, a->type);
  if (!ptr || (uintptr_t)ptr % a->elem_align)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s: %s pointer %p (%s needs %u-byte alignment)", k->name,
                     name, ptr ? "misaligned" : "NULL", ptr, hkrt_karg_align_why(a), a->elem_align);
  unsigned char *buf = args_buf;
  memcpy(buf + a->offset, &ptr, sizeof ptr);
  for (size_t i = 0; i < k->nargs; i++) /* the tensor maps that hold the same address */
    if (k->args[i].cls == HKRT_KA_TMAP && !strcmp(k->args[i].tmap.tensor, name)) {
      hkrt_status st = hkrt_device_tensor_map_address(k->cat->dev, buf + k->args[i].offset, ptr);
      if (st != HKRT_OK) return st;
    }
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_kernel_pointer_slot(const hkrt_kernel *k, const char *name, size_t *offset,
                                              size_t *align) {
  if (!k || !name || !offset || !align) return hkrt_fail(HKRT_ERR_ARG, "hkrt_kernel_pointer_slot: NULL argument");
  const hkrt_karg *a = hkrt_kernel_karg(k, name);
  if (!a) return hkrt_fail(HKRT_ERR_NOT_FOUND, "kernel %s: no argument '%s'", k->name, name);
  if (a->cls != HKRT_KA_PTR)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is a %s, not a pointer", k->name, name, a->type);
  if (hkrt_tmap_covers(k, name))
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is held by a tensor map too: pack it again",
                     k->name, name);
  *offset = a->offset;
  *align = a->elem_align;
  return HKRT_OK;
}
HKRT_API const char *hkrt_kernel_target(const hkrt_kernel *k) { return k ? k->target : "(null)"; }

HKRT_API hkrt_status hkrt_catalog_find(hkrt_catalog *cat, const char *name, const char *target,
                                       hkrt_kernel **out) {
  if (!cat || !name || !out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_catalog_find: NULL argument");
  *out = NULL;
  if (!target) target = hkrt_device_target(cat->dev);
  for (size_t i = 0; i < cat->n; i++) {
    hkrt_kernel *k = &cat->kernels[i];
    if (!strcmp(k->name, name) && hkrt_target_fits(k->target, target)) {
      *out = k;
      return HKRT_OK;
    }
  }
  return hkrt_fail(HKRT_ERR_NOT_FOUND, "%s: no kernel %s for %s", cat->path, name,
                   target ? target : "an AMD target");
}

/* ---- selection ------------------------------------------------------------------------ */

hkrt_status hkrt_problem_check(const hkrt_problem *pb, const char *fn) {
  if (!pb || !pb->op || (pb->nparams && !pb->params))
    return hkrt_fail(HKRT_ERR_ARG, "%s: the problem or its op is NULL", fn);
  for (size_t i = 0; i < pb->nparams; i++) {
    if (!pb->params[i].name || !pb->params[i].value)
      return hkrt_fail(HKRT_ERR_ARG, "%s: problem parameter %zu has a NULL name or value", fn, i);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(pb->params[i].name, pb->params[j].name))
        return hkrt_fail(HKRT_ERR_ARG, "%s: the problem gives %s twice", fn, pb->params[i].name);
  }
  return HKRT_OK;
}

static const char *hkrt_problem_value(const hkrt_problem *pb, const char *name) {
  for (size_t i = 0; i < pb->nparams; i++)
    if (!strcmp(pb->params[i].name, name)) return pb->params[i].value;
  return NULL;
}

/* Equal as text, or as numbers when both are numbers ("128" == "128.0"). */
static int hkrt_values_equal(const char *a, const char *b) {
  if (!strcmp(a, b)) return 1;
  char *ea, *eb;
  double x = strtod(a, &ea), y = strtod(b, &eb);
  return *a && *b && !*ea && !*eb && ea != a && eb != b && x == y;
}

/* A baked parameter the problem leaves out: a tuning one, or at its default. */
static int hkrt_omission_ok(const hkrt_kernel *k, const hkrt_kv *baked) {
  for (size_t i = 0; i < k->ntuning; i++)
    if (!strcmp(k->tuning[i], baked->name)) return 1;
  for (size_t i = 0; i < k->ndefaults; i++)
    if (!strcmp(k->defaults[i].name, baked->name)) return hkrt_values_equal(k->defaults[i].value, baked->value);
  return 0;
}

static void hkrt_why(char *why, size_t n, int *count, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void hkrt_why(char *why, size_t n, int *count, const char *fmt, ...) {
  size_t used = strlen(why);
  if ((*count)++ && used + 3 < n) {
    memcpy(why + used, ", ", 3);
    used += 2;
  }
  if (used + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why + used, n - used, fmt, ap);
  va_end(ap);
}

int hkrt_fit(const hkrt_kernel *k, const hkrt_problem *pb, const char *target, int *named,
             char *why, size_t whylen) {
  int bad = 0;
  *named = 0;
  why[0] = 0;
  if (!hkrt_target_fits(k->target, target)) hkrt_why(why, whylen, &bad, "is for %s", k->target);
  for (size_t i = 0; i < k->nparams; i++) {
    const hkrt_kv *b = &k->params[i];
    const char *v = hkrt_problem_value(pb, b->name);
    if (v && hkrt_values_equal(v, b->value)) (*named)++;
    else if (v) hkrt_why(why, whylen, &bad, "bakes %s=%s, problem has %s=%s", b->name, b->value, b->name, v);
    else if (!hkrt_omission_ok(k, b))
      hkrt_why(why, whylen, &bad, "bakes %s=%s, problem does not give %s", b->name, b->value, b->name);
  }
  for (size_t i = 0; i < pb->nparams; i++) {
    const char *n = pb->params[i].name;
    if (!hkrt_kernel_baked(k, n) && !hkrt_kernel_is_runtime(k, n))
      hkrt_why(why, whylen, &bad, "has no parameter %s", n);
  }
  return bad;
}

/* The problem's value of a formula name, else the kernel's baked one, else
   (device_units) the device's. */
typedef struct {
  const hkrt_kernel *k;
  const hkrt_problem *pb;
} hkrt_cost_ctx;

static int hkrt_cost_lookup(const void *ctx, const char *name, size_t len, long long *v, char *note,
                            size_t notelen) {
  const hkrt_cost_ctx *c = ctx;
  char n[64];
  (void)note;
  (void)notelen;
  if (len >= sizeof n) return -1;
  memcpy(n, name, len);
  n[len] = 0;
  const char *pv = hkrt_problem_value(c->pb, n);
  const hkrt_kv *b = hkrt_kernel_baked(c->k, n);
  if (pv) return hkrt_parse_ll(pv, v) ? -2 : 0;
  if (b) return hkrt_parse_ll(b->value, v) ? -2 : 0;
  if (!strcmp(n, HKRT_DEVICE_UNITS)) return c->k->cat->dev && hkrt_device_units(c->k->cat->dev, v) == HKRT_OK ? 0 : -2;
  return -1;
}

/* The kernel's modelled cost of the problem; -1 when it has none or the
   problem lacks a value it needs. */
static long long hkrt_cost(const hkrt_kernel *k, const hkrt_problem *pb) {
  hkrt_cost_ctx c = {k, pb};
  long long v;
  char err[160];
  if (!k->cost || ex_eval(k->cost, hkrt_cost_lookup, &c, &v, err, sizeof err) < 0) return -1;
  return v;
}

/* Of two fitting kernels, is a better than b? The more specialised (more
   of the problem's values baked, then more baked parameters), then one
   whose cost model gives a value before one without, the lower cost, then
   the first in the manifest. */
static int hkrt_better(const hkrt_kernel *a, int named_a, long long cost_a, const hkrt_kernel *b, int named_b,
                       long long cost_b) {
  if (named_a != named_b) return named_a > named_b;
  if (a->nparams != b->nparams) return a->nparams > b->nparams;
  if ((cost_a >= 0) != (cost_b >= 0)) return cost_a >= 0;
  if (cost_a != cost_b) return cost_a < cost_b;
  return a->index < b->index;
}

typedef struct {
  const hkrt_kernel *k;
  int bad;
  char why[200];
} hkrt_near;

static void hkrt_near_add(hkrt_near near[3], const hkrt_kernel *k, int bad, const char *why) {
  int i = 3;
  while (i > 0 && (!near[i - 1].k || bad < near[i - 1].bad)) i--;
  if (i == 3) return;
  memmove(&near[i + 1], &near[i], (size_t)(2 - i) * sizeof near[0]);
  near[i].k = k;
  near[i].bad = bad;
  snprintf(near[i].why, sizeof near[i].why, "%s", why);
}

static void hkrt_problem_text(const hkrt_problem *pb, char *out, size_t n) {
  size_t used = 0;
  out[0] = 0;
  for (size_t i = 0; i < pb->nparams && used + 1 < n; i++)
    used += (size_t)snprintf(out + used, n - used, "%s%s=%s", i ? " " : "", pb->params[i].name,
                             pb->params[i].value);
  if (!pb->nparams) snprintf(out, n, "(no parameters)");
}

static hkrt_status hkrt_none_fits(const hkrt_catalog *cat, const hkrt_problem *pb, const char *target,
                                  const hkrt_near near[3]) {
  char text[256], list[800];
  size_t used = 0;
  hkrt_problem_text(pb, text, sizeof text);
  list[0] = 0;
  for (int i = 0; i < 3 && near[i].k && used + 1 < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s (%s)", i ? ", " : "",
                             near[i].k->name, near[i].why);
  const char *t = target ? target : "any AMD target";
  if (!near[0].k)
    return hkrt_fail(HKRT_ERR_NOT_FOUND, "no %s kernel for %s fits %s: %s has no %s kernel", pb->op, t,
                     text, cat->path, pb->op);
  return hkrt_fail(HKRT_ERR_NOT_FOUND, "no %s kernel for %s fits %s: nearest: %s", pb->op, t, text, list);
}

/* HIP devices do not say their ISA: refuse to guess between AMD targets. */
static hkrt_status hkrt_one_target(const hkrt_catalog *cat, const hkrt_problem *pb, const hkrt_kernel *best) {
  char why[8];
  int named;
  for (size_t i = 0; i < cat->n; i++) {
    const hkrt_kernel *k = &cat->kernels[i];
    if (!strcmp(k->op, pb->op) && strcmp(k->target, best->target) && !hkrt_fit(k, pb, NULL, &named, why, sizeof why))
      return hkrt_fail(HKRT_ERR_ARG, "hkrt_select: kernels for %s and %s fit and the device's target is "
                       "not known: give the problem's target", best->target, k->target);
  }
  return HKRT_OK;
}

/* Whether tuned entry t is for problem pb: each parameter it records is the
   problem's value, or one the problem leaves out that t's kernel bakes with
   that value; and t's kernel fits the problem. */
static int hkrt_tuned_applies(const hkrt_tuned *t, const hkrt_problem *pb, const char *target) {
  char why[8];
  int named;
  if (strcmp(t->op, pb->op) || !hkrt_target_fits(t->target, target)) return 0;
  for (size_t i = 0; i < t->nproblem; i++) {
    const char *v = hkrt_problem_value(pb, t->problem[i].name);
    const hkrt_kv *b = v ? NULL : hkrt_kernel_baked(t->kernel, t->problem[i].name);
    if (v ? !hkrt_values_equal(v, t->problem[i].value) : !b || !hkrt_values_equal(b->value, t->problem[i].value))
      return 0;
  }
  return !hkrt_fit(t->kernel, pb, target, &named, why, sizeof why);
}

HKRT_API hkrt_status hkrt_select(hkrt_catalog *cat, const hkrt_problem *pb, hkrt_kernel **out) {
  if (!cat || !out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_select: NULL argument");
  *out = NULL;
  hkrt_status st = hkrt_problem_check(pb, "hkrt_select");
  if (st != HKRT_OK) return st;
  const char *target = pb->target ? pb->target : hkrt_device_target(cat->dev);
  hkrt_kernel *best = NULL;
  int best_named = 0;
  long long best_cost = -1;
  hkrt_near near[3] = {{0}};
  for (size_t i = 0; i < cat->n; i++) {
    hkrt_kernel *k = &cat->kernels[i];
    char why[200];
    int named;
    if (strcmp(k->op, pb->op)) continue;
    int bad = hkrt_fit(k, pb, target, &named, why, sizeof why);
    if (bad) {
      hkrt_near_add(near, k, bad, why);
      continue;
    }
    long long cost = hkrt_cost(k, pb);
    if (!best || hkrt_better(k, named, cost, best, best_named, best_cost)) {
      best = k;
      best_named = named;
      best_cost = cost;
    }
  }
  if (!best) return hkrt_none_fits(cat, pb, target, near);
  for (size_t i = 0; i < cat->ntuned; i++) /* hkgen tune's winner for this problem, where there is one */
    if (hkrt_tuned_applies(&cat->tuned[i], pb, target)) {
      best = (hkrt_kernel *)cat->tuned[i].kernel;
      break;
    }
  if (!target && (st = hkrt_one_target(cat, pb, best))) return st;
  *out = best;
  return HKRT_OK;
}
