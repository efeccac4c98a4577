/* kernarg.c: a catalogue kernel's launch. Named arguments are checked (each
   given once, no unknown names, pointers non-null and aligned, integers in
   range, the manifest's launch rules) and packed at the manifest's
   offsets; the grid comes from the manifest's formula; the module is loaded
   at the first launch, under the kernel's lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expr.h"
#include "sha256.h"
#include "hkrt_cat.h"

/* ---- packing ----------------------------------------------------------------------------- */

typedef struct {
  hkrt_kernel *k;
  const hkrt_problem *pb; /* may be NULL */
  unsigned char *buf;
  unsigned char set[HKRT_MAX_ARGS];
  long long ival[HKRT_MAX_ARGS]; /* integer arguments, for the rules and the grid */
} hkrt_pack;

static size_t hkrt_karg_index(const hkrt_pack *p, const hkrt_karg *a) { return (size_t)(a - p->k->args); }

static hkrt_status hkrt_put_int(hkrt_pack *p, const hkrt_karg *a, long long v) {
  if (v < a->lo || v > a->hi)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s = %lld does not fit its type %s", p->k->name,
                     a->name, v, a->type);
  if (a->size == 4) {
    uint32_t u = (uint32_t)v; /* two's complement: int and unsigned alike */
    memcpy(p->buf + a->offset, &u, 4);
  } else {
    memcpy(p->buf + a->offset, &v, 8);
  }
  p->ival[hkrt_karg_index(p, a)] = v;
  return HKRT_OK;
}

static hkrt_status hkrt_put_ptr(hkrt_pack *p, const hkrt_karg *a, const hkrt_arg *x) {
  if (x->kind != HKRT_ARG_PTR)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is a pointer (%s); give it with HKRT_PTR",
                     p->k->name, a->name, a->type);
  if (!x->v.p) return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is a null pointer", p->k->name, a->name);
  if ((uintptr_t)x->v.p % a->elem_align)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s (%p) is not aligned to %u bytes, as %s needs",
                     p->k->name, a->name, x->v.p, a->elem_align, hkrt_karg_align_why(a));
  memcpy(p->buf + a->offset, &x->v.p, sizeof x->v.p);
  return HKRT_OK;
}

static hkrt_status hkrt_put_float(hkrt_pack *p, const hkrt_karg *a, const hkrt_arg *x) {
  if (x->kind == HKRT_ARG_PTR)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is a %s, not a pointer", p->k->name, a->name, a->type);
  double d = x->kind == HKRT_ARG_INT ? (double)x->v.i : x->v.f;
  if (a->size == 8) {
    memcpy(p->buf + a->offset, &d, 8);
    return HKRT_OK;
  }
  if (isfinite(d) && fabs(d) > FLT_MAX)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s = %g does not fit a float", p->k->name, a->name, d);
  float f = (float)d;
  memcpy(p->buf + a->offset, &f, 4);
  return HKRT_OK;
}

static hkrt_status hkrt_put(hkrt_pack *p, const hkrt_karg *a, const hkrt_arg *x) {
  switch (a->cls) {
  case HKRT_KA_PTR: return hkrt_put_ptr(p, a, x);
  case HKRT_KA_FLOAT: return hkrt_put_float(p, a, x);
  case HKRT_KA_TMAP:
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is a tensor map that the runtime builds from %s; "
                     "do not pass it", p->k->name, a->name, a->tmap.tensor);
  case HKRT_KA_INT: break;
  }
  if (x->kind != HKRT_ARG_INT)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is an integer (%s); give it with HKRT_INT",
                     p->k->name, a->name, a->type);
  return hkrt_put_int(p, a, x->v.i);
}

/* An argument naming a baked parameter: accepted when it agrees. */
static hkrt_status hkrt_baked_arg(const hkrt_pack *p, const hkrt_arg *x) {
  const hkrt_kv *b = hkrt_kernel_baked(p->k, x->name);
  long long v;
  if (!b) return hkrt_fail(HKRT_ERR_ARG, "kernel %s: unknown argument '%s'", p->k->name, x->name);
  if (x->kind != HKRT_ARG_INT || hkrt_parse_ll(b->value, &v) < 0 || v != x->v.i)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: %s is baked to %s; the argument disagrees", p->k->name,
                     x->name, b->value);
  return HKRT_OK;
}

static hkrt_status hkrt_pack_args(hkrt_pack *p, const hkrt_arg *args, size_t nargs) {
  for (size_t i = 0; i < nargs; i++) {
    const hkrt_arg *x = &args[i];
    if (!x->name) return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %zu has no name", p->k->name, i);
    const hkrt_karg *a = hkrt_kernel_karg(p->k, x->name);
    hkrt_status st;
    if (!a) {
      if ((st = hkrt_baked_arg(p, x))) return st;
      continue;
    }
    size_t j = hkrt_karg_index(p, a);
    if (p->set[j]) return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s is given twice", p->k->name, x->name);
    if ((st = hkrt_put(p, a, x))) return st;
    p->set[j] = 1;
  }
  return HKRT_OK;
}

/* Run-time parameters from the problem: they fill what the arguments left
   out, and must agree with what they did not. */
static hkrt_status hkrt_pack_problem(hkrt_pack *p) {
  for (size_t i = 0; p->pb && i < p->pb->nparams; i++) {
    const hkrt_param *q = &p->pb->params[i];
    const hkrt_karg *a = hkrt_kernel_is_runtime(p->k, q->name) ? hkrt_kernel_karg(p->k, q->name) : NULL;
    long long v;
    if (!a) continue; /* baked: hkrt_fit checked it */
    if (hkrt_parse_ll(q->value, &v) < 0)
      return hkrt_fail(HKRT_ERR_ARG, "kernel %s: the problem's %s = '%s' is not an integer", p->k->name,
                       q->name, q->value);
    size_t j = hkrt_karg_index(p, a);
    if (p->set[j] && p->ival[j] != v)
      return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument %s = %lld disagrees with the problem's %s=%s",
                       p->k->name, a->name, p->ival[j], q->name, q->value);
    hkrt_status st = p->set[j] ? HKRT_OK : hkrt_put_int(p, a, v);
    if (st) return st;
    p->set[j] = 1;
  }
  return HKRT_OK;
}

static hkrt_status hkrt_pack_missing(const hkrt_pack *p) {
  char list[512];
  size_t used = 0, n = 0;
  list[0] = 0;
  for (size_t i = 0; i < p->k->nargs; i++)
    if (!p->set[i] && p->k->args[i].cls != HKRT_KA_TMAP && used + 1 < sizeof list)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", n++ ? ", " : "", p->k->args[i].name);
  if (!n) return HKRT_OK;
  return hkrt_fail(HKRT_ERR_ARG, "kernel %s: argument%s %s %s missing", p->k->name, n > 1 ? "s" : "", list,
                   n > 1 ? "are" : "is");
}

/* ---- the op's rules and the grid --------------------------------------------------------- */

/* An integer parameter or argument by name: packed value, else baked value;
   HKRT_DEVICE_UNITS: the device's multiprocessors (-2 when its backend cannot
   tell). */
static int hkrt_pack_lookup(const void *ctx, const char *name, size_t len, long long *v, char *note,
                            size_t notelen) {
  const hkrt_pack *p = ctx;
  char n[64];
  if (len >= sizeof n) return -1;
  memcpy(n, name, len);
  n[len] = 0;
  if (!strcmp(n, HKRT_DEVICE_UNITS)) {
    if (hkrt_device_units(p->k->cat->dev, v) == HKRT_OK) return 0;
    snprintf(note, notelen, "%s", hkrt_error());
    return -2;
  }
  const hkrt_karg *a = hkrt_kernel_karg(p->k, n);
  if (a && a->cls == HKRT_KA_INT) {
    *v = p->ival[hkrt_karg_index(p, a)];
    return 0;
  }
  const hkrt_kv *b = hkrt_kernel_baked(p->k, n);
  return b ? hkrt_parse_ll(b->value, v) : -1;
}

/* A name by value for messages: "lda = 5". */
static int hkrt_lookup_name(const hkrt_pack *p, const char *name, long long *v) {
  char note[8];
  return hkrt_pack_lookup(p, name, strlen(name), v, note, sizeof note);
}

typedef struct {
  const hkrt_pack *p;
  char text[200];
  size_t used;
} hkrt_values;

static void hkrt_value_of(void *ctx, const char *name, size_t len) {
  hkrt_values *s = ctx;
  char n[64];
  long long v;
  if (len >= sizeof n || s->used + 1 >= sizeof s->text) return;
  memcpy(n, name, len);
  n[len] = 0;
  if (hkrt_lookup_name(s->p, n, &v) < 0) return;
  s->used += (size_t)snprintf(s->text + s->used, sizeof s->text - s->used, "%s%s = %lld", s->used ? ", " : "", n, v);
}

/* The manifest's launch rules ("checks"), each a formula over the kernel's
   integer parameters and arguments that must be non-zero. */
static hkrt_status hkrt_check_rules(const hkrt_pack *p) {
  for (size_t i = 0; i < p->k->nchecks; i++) {
    const hkrt_rule *r = &p->k->checks[i];
    char err[160];
    long long ok;
    if (ex_eval(r->rule, hkrt_pack_lookup, p, &ok, err, sizeof err) < 0)
      return hkrt_fail(HKRT_ERR_ARG, "kernel %s: launch rule \"%s\": %s (%s)", p->k->name, r->rule, err, r->why);
    if (ok) continue;
    hkrt_values vals = {.p = p};
    ex_names(r->rule, hkrt_value_of, &vals);
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s: %s does not hold: %s (%s)", p->k->name, r->rule, vals.text, r->why);
  }
  return HKRT_OK;
}

static hkrt_status hkrt_grid(const hkrt_pack *p, unsigned grid[3]) {
  static const char axis[] = "xyz";
  for (int i = 0; i < 3; i++) {
    char err[160];
    long long v;
    if (ex_eval(p->k->grid[i], hkrt_pack_lookup, p, &v, err, sizeof err) < 0)
      return hkrt_fail(HKRT_ERR_ARG, "kernel %s: grid[%d] \"%s\": %s", p->k->name, i, p->k->grid[i], err);
    if (v < 1)
      return hkrt_fail(HKRT_ERR_ARG, "kernel %s: grid[%d] = %s = %lld, not at least 1", p->k->name, i,
                       p->k->grid[i], v);
    if (v > p->k->grid_max[i])
      return hkrt_fail(HKRT_ERR_ARG, "kernel %s: grid[%d] = %s = %lld blocks, more than %s allows on axis %c (%lld)",
                       p->k->name, i, p->k->grid[i], v, p->k->target, axis[i], p->k->grid_max[i]);
    grid[i] = (unsigned)v;
  }
  return HKRT_OK;
}

/* ---- tensor maps ---------------------------------------------------------------------------- */

/* Each tensor-map argument, built from its recipe once everything else is
   packed. A tensor the copy engine cannot address keeps an all-zero map: base
   not 16-byte aligned, a stride that is not positive, not a multiple of 16
   bytes or not under 2^40 bytes, or a dimension outside 1 .. 2^32. The kernel
   tests the same conditions on the base and the strides (the dimensions are
   in range for any problem it takes) and copies such tensors itself. */
static hkrt_status hkrt_pack_tmaps(const hkrt_pack *p) {
  for (size_t i = 0; i < p->k->nargs; i++) {
    const hkrt_karg *a = &p->k->args[i];
    if (a->cls != HKRT_KA_TMAP) continue;
    const hkrt_tmap_recipe *r = &a->tmap;
    const hkrt_karg *t = hkrt_kernel_karg(p->k, r->tensor);
    hkrt_tmap_req q = {.rank = r->rank, .swizzle = r->swizzle, .elem_bytes = t->elem_align};
    memcpy(&q.ptr, p->buf + t->offset, sizeof q.ptr);
    int usable = (uintptr_t)q.ptr % 16 == 0;
    for (unsigned j = 0; j < r->rank; j++) {
      const char *dn = r->dims[j], *sn = j > 0 ? r->strides[j - 1] : NULL;
      long long d, s = 1;
      if (hkrt_lookup_name(p, dn, &d) < 0 || (sn && hkrt_lookup_name(p, sn, &s) < 0))
        return hkrt_fail(HKRT_ERR_ARG, "kernel %s: tensor map %s: %s%s%s is not an integer of the kernel",
                         p->k->name, a->name, dn, sn ? " or " : "", sn ? sn : "");
      usable &= d >= 1 && d <= (1LL << 32);
      if (sn) {
        usable &= s > 0 && s < (1LL << 40) / t->elem_align && s * t->elem_align % 16 == 0;
        q.strides[j - 1] = (unsigned long long)s * t->elem_align;
      }
      q.dims[j] = (unsigned long long)d;
      q.box[j] = r->box[j];
    }
    if (!usable) continue;
    char who[160];
    snprintf(who, sizeof who, "kernel %s (argument %s)", p->k->name, a->name);
    hkrt_status st = hkrt_device_tensor_map(p->k->cat->dev, who, p->buf + a->offset, &q);
    if (st) return st;
  }
  return HKRT_OK;
}

/* ---- entry points ------------------------------------------------------------------------- */

static hkrt_status hkrt_check_problem(const hkrt_kernel *k, const hkrt_problem *pb) {
  hkrt_status st = hkrt_problem_check(pb, "hkrt_kernel_args");
  if (st != HKRT_OK) return st;
  if (strcmp(pb->op, k->op))
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s is a %s kernel, not %s", k->name, k->op, pb->op);
  char why[300];
  int named;
  if (hkrt_fit(k, pb, pb->target ? pb->target : k->target, &named, why, sizeof why))
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s does not fit the problem: %s", k->name, why);
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_kernel_args(hkrt_kernel *k, const hkrt_problem *pb, const hkrt_arg *args,
                                      size_t nargs, void *args_buf, size_t buf_size, size_t *args_size,
                                      unsigned grid[3], unsigned block[3]) {
  if (!k || (!args && nargs) || !args_buf || !args_size || !grid || !block)
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_kernel_args: NULL argument");
  if (buf_size < k->args_size)
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s takes %u bytes of arguments; the buffer has %zu", k->name,
                     k->args_size, buf_size);
  hkrt_status st = pb ? hkrt_check_problem(k, pb) : HKRT_OK;
  if (st != HKRT_OK) return st;
  hkrt_pack p = {.k = k, .pb = pb, .buf = args_buf};
  memset(args_buf, 0, k->args_size);
  if ((st = hkrt_pack_args(&p, args, nargs)) || (st = hkrt_pack_problem(&p)) ||
      (st = hkrt_pack_missing(&p)) || (st = hkrt_check_rules(&p)) || (st = hkrt_grid(&p, grid)) ||
      (st = hkrt_pack_tmaps(&p)))
    return st;
  memcpy(block, k->block, sizeof k->block);
  *args_size = k->args_size;
  return HKRT_OK;
}

/* Opens rel (a relative path of the manifest) under the catalogue's folder,
   one component at a time, refusing symbolic links anywhere: nothing the
   manifest names can lead out of the folder. */
static int hkrt_open_inside(const char *dir, const char *rel, char *why, size_t n) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, n, "cannot open the catalogue folder %s: %s", dir, strerror(errno));
    return -1;
  }
  char part[256];
  for (const char *s = rel; *s;) {
    size_t len = strcspn(s, "/");
    int last = s[len] == 0;
    if (len == 0 || len >= sizeof part) {
      snprintf(why, n, "%s: a bad path", rel);
      close(fd);
      return -1;
    }
    memcpy(part, s, len);
    part[len] = 0;
    int next = openat(fd, part, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (last ? 0 : O_DIRECTORY));
    int err = errno;
    struct stat st;
    int link = next < 0 && fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    close(fd);
    if (next < 0) {
      if (link) snprintf(why, n, "%s: %s is a symbolic link; a catalogue's files must be its own", rel, part);
      else snprintf(why, n, "%s: cannot open: %s", rel, strerror(err));
      return -1;
    }
    fd = next;
    s += len + !last;
  }
  return fd;
}

/* The code object's bytes, checked against the manifest's sha256 before
   anything of it runs. */
static hkrt_status hkrt_read_verified(const hkrt_kernel *k, unsigned char **data, size_t *len) {
  char why[600], what[600];
  snprintf(what, sizeof what, "%s/%s", k->cat->dir, k->file);
  if (!k->sha256)
    return hkrt_fail(HKRT_ERR_IO, "kernel %s: the manifest gives no sha256 for %s; libhkrt loads verified code only",
                     k->name, k->file);
  int fd = hkrt_open_inside(k->cat->dir, k->file, why, sizeof why);
  if (fd < 0) return hkrt_fail(HKRT_ERR_IO, "kernel %s: %s", k->name, why);
  hkrt_status st = hkrt_read_fd(fd, what, 1u << 30, data, len);
  if (st) return st;
  char hex[65];
  sha256_hex(*data, *len, hex);
  if (strcmp(hex, k->sha256)) {
    free(*data);
    *data = NULL;
    return hkrt_fail(HKRT_ERR_IO, "kernel %s: %s does not match the manifest's sha256 (%zu bytes, sha256 %.16s..., "
                     "manifest %.16s...): a changed or truncated code object is never loaded", k->name, what, *len,
                     hex, k->sha256);
  }
  return HKRT_OK;
}

/* The kernel's function, its module loaded (verified) at the first call. */
HKRT_API hkrt_status hkrt_kernel_function(hkrt_kernel *k, hkrt_func **fn) {
  if (!k || !fn) return hkrt_fail(HKRT_ERR_ARG, "hkrt_kernel_function: NULL argument");
  hkrt_status st = HKRT_OK;
  pthread_mutex_lock(&k->lock);
  if (!k->fn) {
    unsigned char *data = NULL;
    size_t len = 0;
    st = hkrt_read_verified(k, &data, &len);
    if (!st) st = hkrt_module_load_bytes(k->cat->dev, data, len, k->file, &k->mod);
    if (!st && (st = hkrt_module_function(k->mod, k->name, &k->fn))) {
      hkrt_module_unload(k->mod);
      k->mod = NULL;
    }
    free(data);
  }
  *fn = k->fn;
  pthread_mutex_unlock(&k->lock);
  return st;
}

HKRT_API hkrt_status hkrt_kernel_launch(hkrt_kernel *k, const hkrt_problem *pb, const hkrt_arg *args,
                                        size_t nargs, void *stream) {
  _Alignas(64) unsigned char buf[HKRT_MAX_KERNARG]; /* may hold tensor maps: 64-byte objects */
  unsigned grid[3], block[3];
  size_t size;
  hkrt_func *fn;
  const char *dt = k ? hkrt_device_target(k->cat->dev) : NULL;
  if (dt && strcmp(dt, k->target))
    return hkrt_fail(HKRT_ERR_ARG, "kernel %s is for %s; the device runs %s", k->name, k->target, dt);
  hkrt_status st = hkrt_kernel_args(k, pb, args, nargs, buf, sizeof buf, &size, grid, block);
  if (!st) st = hkrt_kernel_function(k, &fn);
  if (!st) st = hkrt_launch_ex(fn, grid, block, k->dynamic_lds, buf, size, stream);
  return st;
}
