/* emutest.c: `hkgen test SPEC`. Each kernel's generated source is compiled
   for the host against runtime/include/hk_emu.h, loaded into libhkrt's
   emulator, and run at small problem sizes (odd ones included) on fresh
   random inputs; outputs start poisoned and are compared with an fp64
   reference by relative L2 error. NaN never passes. */
#define _GNU_SOURCE
#include "emutest.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "hkrt.h"
#include "skel.h"
#include "target.h"
#include "util.h"


#define ET_MAX_SHAPES 16
#define ET_TOLERANCE 1e-2 /* bf16 outputs: about 2^-8 per element */

struct et_ctx {
  hkrt_device *dev;
  hkrt_func *fn;
  const op_inst *k;
  const long *shape;
  op_arg args[OP_MAX_ARGS];
  int nargs;
  unsigned char argbuf[1024];
  unsigned char argset[OP_MAX_ARGS];
  void *allocs[64];
  int nallocs;
  uint64_t rng;
  char msg[1024];
};

void *et_alloc(et_ctx *c, size_t bytes) {
  void *p = NULL;
  if (c->nallocs == 64 || hkrt_alloc(c->dev, bytes ? bytes : 1, &p) != HKRT_OK) {
    fprintf(stderr, "hkgen: emulator allocation failed: %s\n", hkrt_error());
    exit(HK_EFAIL);
  }
  c->allocs[c->nallocs++] = p;
  return p;
}

void et_upload(et_ctx *c, void *dev, const void *host, size_t bytes) {
  if (hkrt_copy_to_device(c->dev, dev, host, bytes) != HKRT_OK) {
    fprintf(stderr, "hkgen: %s\n", hkrt_error());
    exit(HK_EFAIL);
  }
}

void et_download(et_ctx *c, void *host, const void *dev, size_t bytes) {
  if (hkrt_copy_to_host(c->dev, host, dev, bytes) != HKRT_OK) {
    fprintf(stderr, "hkgen: %s\n", hkrt_error());
    exit(HK_EFAIL);
  }
}

uint64_t et_rand(et_ctx *c) { /* splitmix64 */
  uint64_t z = (c->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double et_uniform(et_ctx *c) { return (double)(et_rand(c) >> 11) * 0x1p-52 - 1.0; }

unsigned short et_to_bf16(double x) {
  float f = (float)x;
  unsigned u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

double et_from_bf16(unsigned short b) {
  unsigned u = (unsigned)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int et_is_nan_bf16(unsigned short b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

static op_arg *et_find_arg(et_ctx *c, const char *name) {
  for (int i = 0; i < c->nargs; i++)
    if (!strcmp(c->args[i].name, name)) {
      c->argset[i] = 1;
      return &c->args[i];
    }
  fprintf(stderr, "hkgen: internal: kernel %s has no argument '%s'\n", c->k->name, name);
  exit(HK_EFAIL);
}

void et_arg_ptr(et_ctx *c, const char *name, const void *p) {
  op_arg *a = et_find_arg(c, name);
  memcpy(c->argbuf + a->offset, &p, sizeof p);
}

void et_arg_int(et_ctx *c, const char *name, long v) {
  op_arg *a = et_find_arg(c, name);
  if (a->size == 8) memcpy(c->argbuf + a->offset, &v, 8);
  else {
    int i = (int)v;
    memcpy(c->argbuf + a->offset, &i, 4);
  }
}

int et_shapes_from_cases(const op_inst *k, const char *const *dims, int ndims, const long *cases,
                         int ncases, int (*keep)(const op_inst *k, const long *shape),
                         long out[][OP_MAX_PARAMS], int max) {
  int n = 0;
  for (int c = 0; c < ncases && n < max; c++) {
    long *s = out[n];
    op_shape_baked(k, s);
    for (int d = 0; d < ndims; d++)
      if (op_is_any(k, dims[d])) s[op_param_index(k->op, dims[d])] = cases[c * ndims + d];
    if (keep && !keep(k, s)) continue;
    int dup = 0;
    for (int j = 0; j < n; j++) dup |= !memcmp(out[j], s, sizeof out[j]);
    n += !dup;
  }
  return n;
}

void et_arg_strides(et_ctx *c, const char *tensor, long sb, long ss, long sh) {
  static const char *const axes[] = {"b", "s", "h"};
  long v[] = {sb, ss, sh};
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s_stride_%s", tensor, axes[i]);
    et_arg_int(c, name, v[i]);
  }
}

void et_arg_float(et_ctx *c, const char *name, double v) {
  op_arg *a = et_find_arg(c, name);
  float f = (float)v;
  memcpy(c->argbuf + a->offset, &f, 4);
}

void et_note(et_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
}

int et_launch(et_ctx *c) {
  for (int i = 0; i < c->nargs; i++)
    if (!c->argset[i]) {
      et_note(c, "internal: argument %s was never set", c->args[i].name);
      return -1;
    }
  const op_plan *p = c->k->plan;
  unsigned grid[3], block[3] = {(unsigned)p->block, 1, 1};
  for (int i = 0; i < 3; i++) {
    long v;
    if (op_eval(c->k, c->shape, p->grid[i], &v) < 0 || v < 1 || v > 0x7fffffffL) {
      et_note(c, "grid formula '%s' gives no valid size", p->grid[i]);
      return -1;
    }
    grid[i] = (unsigned)v;
  }
  size_t size = (size_t)p->args_size;
  if (hkrt_launch(c->fn, grid, block, c->argbuf, size, NULL) != HKRT_OK) {
    et_note(c, "%s", hkrt_error());
    return -1;
  }
  return 0;
}

double et_rel_l2(const double *ref, const double *got, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(got[i]) || isinf(got[i])) return INFINITY;
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* ---- host build of one kernel ------------------------------------------------ */

/* Generated source -> host shared object, through the host compiler. */
static int et_build(const op_inst *k, const char *dir, char **so_path) {
  char *src = NULL, *obj = NULL, *meta = NULL, *log = NULL;
  size_t len, objlen;
  cc_compiler cc;
  char why[512];
  if (skel_expand(skel_template_dir(), k, &src, &len) < 0) return -1;
  char *hip = xasprintf("%s/%s.%s.hip", dir, k->name, k->target);
  char *so = xasprintf("%s/%s.%s.so", dir, k->name, k->target);
  int rc = -1;
  if (cc_resolve_host(&cc, why, sizeof why) < 0) {
    diag_error(NULL, 0, 0, "%s", why);
  } else if (fs_write_atomic(hip, src, len) < 0) { /* kept with --keep, for debugging */
    diag_error(hip, 0, 0, "cannot write: %s", strerror(errno));
  } else if (cc_compile(&cc, k->target, src, len, &obj, &objlen, &meta, &log) < 0) {
    diag_error(k->file, k->line, k->col, "host build of %s for %s failed:\n%s", k->name, k->target,
               log ? log : "");
  } else if (fs_write_atomic(so, obj, objlen) < 0) {
    diag_error(so, 0, 0, "cannot write: %s", strerror(errno));
  } else {
    rc = 0;
  }
  free(src);
  free(obj);
  free(meta);
  free(log);
  free(hip);
  if (rc == 0) *so_path = so;
  else free(so);
  return rc;
}

/* ---- shapes ------------------------------------------------------------------ */

/* Applies "NAME=V,NAME=V" to shape; baked parameters cannot change. */
static int et_apply_shape(const op_inst *k, const char *text, long *shape) {
  char *copy = xstrdup(text);
  int bad = 0;
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(t, '=');
    char *end = NULL;
    long v = eq ? strtol(eq + 1, &end, 10) : 0;
    if (!eq || !*(eq + 1) || *end) {
      diag_error("--shape", 0, 0, "'%s' is not NAME=INTEGER", t);
      bad = 1;
      continue;
    }
    *eq = 0;
    int i = op_param_index(k->op, t);
    if (i < 0) continue; /* a name of another op's shape */
    char msg[256], num[32];
    snprintf(num, sizeof num, "%ld", v);
    if (op_value_ok(&k->op->params[i], num, msg, sizeof msg) < 0) {
      diag_error("--shape", 0, 0, "%s", msg);
      bad = 1;
    } else if (!op_is_any(k, t) && op_int(k, t) != v) {
      diag_error("--shape", 0, 0, "%s is baked to %ld in kernel %s; it cannot be %ld", t,
                 op_int(k, t), k->name, v);
      bad = 1;
    } else {
      shape[i] = v;
    }
  }
  free(copy);
  return bad ? -1 : 0;
}

static int et_shapes(const op_inst *k, const et_options *o, long out[][OP_MAX_PARAMS]) {
  if (!o->nshapes) return k->op->emu_shapes(k, out, ET_MAX_SHAPES);
  int n = 0;
  for (int i = 0; i < o->nshapes && n < ET_MAX_SHAPES; i++) {
    long s[OP_MAX_PARAMS];
    k->op->emu_shapes(k, &s, 1); /* defaults for what --shape leaves out */
    if (et_apply_shape(k, o->shapes[i], s) < 0) return -1;
    memcpy(out[n++], s, sizeof s);
  }
  return n;
}

static void et_shape_text(const op_inst *k, const long *shape, char *out, size_t n) {
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < k->op->nparams; i++) {
    const op_param *p = &k->op->params[i];
    if (p->type != OP_INT) continue;
    int w = snprintf(out + used, n - used, "%s%s=%ld", used ? " " : "", p->name, shape[i]);
    if (w < 0 || (size_t)w >= n - used) break;
    used += (size_t)w;
  }
}

/* ---- the command -------------------------------------------------------------- */

typedef struct {
  hkrt_device *dev[8];
  const char *names[8];
  int n;
} et_devices;

static hkrt_device *et_device(et_devices *ds, const char *target, unsigned long long seed) {
  for (int i = 0; i < ds->n; i++)
    if (!strcmp(ds->names[i], target)) return ds->dev[i];
  hkrt_device *d = NULL;
  if (ds->n == 8 || hkrt_device_open(HKRT_BACKEND_EMU, target, &d) != HKRT_OK) return NULL;
  hkrt_emu_configure(d, seed, 0);
  ds->dev[ds->n] = d;
  ds->names[ds->n++] = target;
  return d;
}

static int et_one_shape(et_ctx *c, const long *shape, unsigned long long seed, int *failed) {
  char text[256];
  et_shape_text(c->k, shape, text, sizeof text);
  c->shape = shape;
  c->nargs = c->k->plan->nargs;
  memcpy(c->args, c->k->plan->args, sizeof c->args);
  memset(c->argset, 0, sizeof c->argset);
  memset(c->argbuf, 0, sizeof c->argbuf);
  c->msg[0] = 0;
  c->rng = seed;
  double err = INFINITY;
  int ran = c->k->op->emu_run(c->k, shape, c, &err) == 0;
  int pass = ran && err <= ET_TOLERANCE; /* false for NaN and inf */
  printf("%-36s %-7s %-52s %10.3e  %s%s%s\n", c->k->name, c->k->target, text, ran ? err : NAN,
         pass ? "PASS" : "FAIL", c->msg[0] ? "  " : "", c->msg);
  fflush(stdout);
  for (int i = 0; i < c->nallocs; i++) hkrt_free(c->dev, c->allocs[i]);
  c->nallocs = 0;
  *failed += !pass;
  return 0;
}

int et_test(const spec_set *set, const et_options *o) {
  char tmpl[] = "/tmp/hkgen-test.XXXXXX";
  const char *tmp = getenv("TMPDIR");
  char *dir = tmp && *tmp ? xasprintf("%s/hkgen-test.XXXXXX", tmp) : xstrdup(tmpl);
  if (!mkdtemp(dir)) {
    diag_error(NULL, 0, 0, "cannot make a temporary folder: %s", strerror(errno));
    free(dir);
    return HK_EFAIL;
  }
  unsigned long long seed = o->seed;
  printf("hkgen test: emulated CDNA waves, fp64 reference, tolerance %.0e, seed %llu\n",
         ET_TOLERANCE, seed);
  printf("%-36s %-7s %-52s %10s  %s\n", "kernel", "target", "shape", "rel err", "result");
  int failed = 0, runs = 0, broken = 0;
  et_devices ds = {0};
  for (size_t i = 0; i < set->n; i++) {
    const op_inst *k = &set->v[i];
    if (!tgt_is_amd(tgt_find(k->target))) {
      printf("%-36s %-7s %-52s %10s  %s\n", k->name, k->target, "-", "-",
             "not emulated: the emulator runs AMD targets; check NVIDIA ones on a GPU (tests/device)");
      continue;
    }
    long shapes[ET_MAX_SHAPES][OP_MAX_PARAMS];
    int ns = et_shapes(k, o, shapes);
    char *so = NULL;
    if (ns < 0 || et_build(k, dir, &so) < 0) {
      broken++;
      continue;
    }
    hkrt_device *dev = et_device(&ds, k->target, seed);
    hkrt_module *mod = NULL;
    et_ctx c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.dev = dev;
    if (!dev || hkrt_module_load(dev, so, &mod) != HKRT_OK ||
        hkrt_module_function(mod, k->name, &c.fn) != HKRT_OK) {
      diag_error(NULL, 0, 0, "emulator: %s", hkrt_error());
      broken++;
    } else {
      for (int s = 0; s < ns; s++, runs++)
        et_one_shape(&c, shapes[s], seed + (unsigned long long)s * 7919u, &failed);
    }
    hkrt_module_unload(mod);
    if (!o->keep) unlink(so);
    free(so);
  }
  for (int i = 0; i < ds.n; i++) hkrt_device_close(ds.dev[i]);
  printf("%d run%s, %d failed, %d kernel%s not built; seed %llu (rerun with --seed %llu)\n", runs,
         runs == 1 ? "" : "s", failed, broken, broken == 1 ? "" : "s", seed, seed);
  if (o->keep) printf("sources and host objects kept in %s\n", dir);
  else {
    char *cmd_dir = dir;
    /* remove the .hip files, then the folder */
    for (size_t i = 0; i < set->n; i++) {
      char *hip = xasprintf("%s/%s.%s.hip", cmd_dir, set->v[i].name, set->v[i].target);
      unlink(hip);
      free(hip);
    }
    rmdir(cmd_dir);
  }
  free(dir);
  return failed || broken ? HK_EFAIL : HK_OK;
}
