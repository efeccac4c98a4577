/* emutest.c: `hkgen test SPEC`. The spec's AMD kernels are built as an
   emulated catalogue (hkgen build --emulate: each source compiled for the
   host against runtime/include/hk_emu.h) in a temporary folder, which is
   opened, packed and launched through libhkrt's public calls like any
   user's: the manifest's argument layout, launch rules and grid formulas
   are the ones exercised. Each kernel runs at small problem sizes (odd ones
   included) on fresh random inputs; outputs start poisoned and are compared
   with an fp64 reference by relative L2 error. NaN never passes. */
#define _GNU_SOURCE
#include "emutest.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "compile.h"
#include "hkrt.h"
#include "skel.h"
#include "target.h"
#include "util.h"


#define ET_MAX_SHAPES 16

static double et_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
#define ET_TOLERANCE 1e-2 /* bf16 outputs: about 2^-8 per element */

struct et_ctx {
  hkrt_device *dev;
  hkrt_kernel *kern; /* the catalogue's kernel */
  const op_inst *k;
  const long *shape;
  hkrt_arg args[OP_MAX_ARGS]; /* named arguments, as a user passes them */
  char names[OP_MAX_ARGS][32];
  int nargs;
  void *allocs[64];
  int nallocs;
  uint64_t rng;
  char msg[1024];
  et_timing *timing; /* hkgen bench: time the launch instead (et_time) */
  int timed;
};

/* Poisoned here, whatever the device: a GPU's fresh memory holds zeros or
   old data, which a check of untouched padding must not mistake for its
   own poison. */
void *et_alloc(et_ctx *c, size_t bytes) {
  void *p = NULL;
  if (!bytes) bytes = 1;
  unsigned char *poison = malloc(bytes);
  if (!poison || c->nallocs == 64 || hkrt_alloc(c->dev, bytes, &p) != HKRT_OK) {
    fprintf(stderr, "hkgen: device allocation failed: %s\n", poison ? hkrt_error() : "out of host memory");
    exit(HK_EFAIL);
  }
  memset(poison, 0xff, bytes);
  c->allocs[c->nallocs++] = p;
  et_upload(c, p, poison, bytes);
  free(poison);
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

/* The next named argument; the kernel's own names are checked at launch
   (an unknown or missing one is libhkrt's error). */
static hkrt_arg *et_next_arg(et_ctx *c, const char *name) {
  if (c->nargs == OP_MAX_ARGS) {
    fprintf(stderr, "hkgen: internal: kernel %s: more than %d arguments\n", c->k->name, OP_MAX_ARGS);
    exit(HK_EFAIL);
  }
  snprintf(c->names[c->nargs], sizeof c->names[0], "%s", name);
  hkrt_arg *a = &c->args[c->nargs];
  a->name = c->names[c->nargs++];
  return a;
}

void et_arg_ptr(et_ctx *c, const char *name, const void *p) {
  hkrt_arg *a = et_next_arg(c, name);
  a->kind = HKRT_ARG_PTR;
  a->v.p = (void *)p;
}

void et_arg_int(et_ctx *c, const char *name, long v) {
  hkrt_arg *a = et_next_arg(c, name);
  a->kind = HKRT_ARG_INT;
  a->v.i = v;
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
  hkrt_arg *a = et_next_arg(c, name);
  a->kind = HKRT_ARG_FLOAT;
  a->v.f = v;
}

void et_note(et_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
}

void et_args_clear(et_ctx *c) { c->nargs = 0; }

int et_dense(const et_ctx *c) { return c->timing != NULL; }

void et_note_get(const et_ctx *c, char *out, size_t n) { snprintf(out, n, "%s", c->msg); }

/* Through hkrt_kernel_launch: libhkrt checks the arguments against the
   manifest, evaluates the launch rules and the grid, packs and launches. */
static int et_launch_timed(et_ctx *c);

int et_launch(et_ctx *c) {
  if (c->timing) return et_launch_timed(c);
  if (hkrt_kernel_launch(c->kern, NULL, c->args, (size_t)c->nargs, NULL) != HKRT_OK) {
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

/* ---- the emulated catalogue ---------------------------------------------------- */

/* The AMD kernels of set, built with hkgen build --emulate into dir
   (quietly, from the cache where it has them). */
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

void et_shape_text(const op_inst *k, const long *shape, char *out, size_t n) {
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < k->op->nparams; i++) {
    const op_param *p = &k->op->params[i];
    if (p->type != OP_INT || op_feature_off(k, i)) continue; /* a feature the kernel lacks says nothing */
    int w = snprintf(out + used, n - used, "%s%s=%ld", used ? " " : "", p->name, shape[i]);
    if (w < 0 || (size_t)w >= n - used) break;
    used += (size_t)w;
  }
}

/* ---- the command -------------------------------------------------------------- */

/* One emulated device per target, each with the catalogue opened on it. */
typedef struct {
  hkrt_device *dev[8];
  hkrt_catalog *cat[8];
  const char *names[8];
  int n;
} et_devices;

static int et_device(et_devices *ds, const char *target, const char *catdir, unsigned long long seed,
                     int stats) {
  for (int i = 0; i < ds->n; i++)
    if (!strcmp(ds->names[i], target)) return i;
  hkrt_device *d = NULL;
  hkrt_catalog *cat = NULL;
  if (ds->n == 8 || hkrt_device_open(HKRT_BACKEND_EMU, target, &d) != HKRT_OK) return -1;
  hkrt_emu_configure(d, seed, 0);
  hkrt_emu_shuffle(d, 1); /* workgroups in a seeded order: results must not depend on it */
  if ((stats && hkrt_emu_stats_enable(d, 1) != HKRT_OK) || hkrt_catalog_open(d, catdir, &cat) != HKRT_OK) {
    hkrt_device_close(d);
    return -1;
  }
  ds->dev[ds->n] = d;
  ds->cat[ds->n] = cat;
  ds->names[ds->n] = target;
  return ds->n++;
}

static void et_devices_close(et_devices *ds) {
  for (int i = 0; i < ds->n; i++) {
    hkrt_catalog_close(ds->cat[i]);
    hkrt_device_close(ds->dev[i]);
  }
}

/* ---- --stats ------------------------------------------------------------------ */

static const char *et_kind_name(hkrt_emu_access k) {
  static const char *const names[] = {"lds read", "lds write", "global read", "global write"};
  return names[k];
}

static int et_is_lds(const hkrt_emu_site *e) { return e->kind == HKRT_EMU_LDS_READ || e->kind == HKRT_EMU_LDS_WRITE; }

/* LDS sites first, most extra cycles first; then global ones, most wasted
   line bytes first. */
static int et_site_cmp(const void *a, const void *b) {
  const hkrt_emu_site *x = a, *y = b;
  if (et_is_lds(x) != et_is_lds(y)) return et_is_lds(y) - et_is_lds(x);
  unsigned long long wx = et_is_lds(x) ? x->cycles - x->ideal : x->line_bytes - x->req_bytes;
  unsigned long long wy = et_is_lds(y) ? y->cycles - y->ideal : y->line_bytes - y->req_bytes;
  return wx < wy ? 1 : wx > wy ? -1 : (x->line > y->line) - (x->line < y->line);
}

static double et_ratio(unsigned long long a, unsigned long long b) { return b ? (double)a / (double)b : 1.0; }

static void et_print_site(FILE *f, const hkrt_emu_site *e) {
  const char *base = strrchr(e->file, '/');
  char where[160];
  snprintf(where, sizeof where, "%s:%d", base ? base + 1 : e->file, e->line);
  if (!et_is_lds(e)) {
    fprintf(f, "    %-30s %-12s %3u %9llu %11llu B requested %11llu B in lines  %5.2fx", where, et_kind_name(e->kind),
           e->bytes, e->insts, e->req_bytes, e->line_bytes, et_ratio(e->line_bytes, e->req_bytes));
    if (e->partial) fprintf(f, "  %llu with inactive lanes", e->partial);
    fprintf(f, "\n");
    return;
  }
  fprintf(f, "    %-30s %-12s %3u %9llu %11llu cycles %15llu conflict-free %5.2fx", where, et_kind_name(e->kind),
         e->bytes, e->insts, e->cycles, e->ideal, et_ratio(e->cycles, e->ideal));
  if (e->partial) fprintf(f, "  %llu with inactive lanes", e->partial);
  if (e->worst_extra) {
    fprintf(f, "  worst +%u, pass lane:offset", e->worst_extra);
    for (int i = 0; i < e->worst_lanes && i < 8; i++) fprintf(f, " %u:%u", e->worst_lane[i], e->worst_off[i]);
    if (e->worst_lanes > 8) fprintf(f, " ...");
  }
  fprintf(f, "\n");
}

/* The run's statistics, under its result row. */
static void et_print_stats(FILE *f, hkrt_device *dev) {
  hkrt_emu_stats st;
  if (hkrt_emu_stats_get(dev, &st) != HKRT_OK) return;
  fprintf(f, "  stats: lds %llu insts, %llu bank cycles, %llu conflict-free (%.2fx; %d banks x %d B); "
         "global %llu insts, %llu B requested, %llu B in %d-B lines (%.2fx)%s\n",
         st.lds_insts, st.lds_cycles, st.lds_ideal, et_ratio(st.lds_cycles, st.lds_ideal), st.banks,
         st.bank_bytes, st.global_insts, st.global_req_bytes, st.global_line_bytes, st.line_bytes,
         et_ratio(st.global_line_bytes, st.global_req_bytes), st.dropped ? " (some accesses not counted)" : "");
  hkrt_emu_site *v = malloc((size_t)(st.nsites ? st.nsites : 1) * sizeof *v);
  if (!v) return;
  memcpy(v, st.sites, (size_t)st.nsites * sizeof *v);
  qsort(v, (size_t)st.nsites, sizeof *v, et_site_cmp);
  for (int i = 0; i < st.nsites; i++) et_print_site(f, &v[i]);
  free(v);
}

/* One run: its result row (and statistics) written to f. Returns 1 when it
   passed. */
static int et_one_shape(FILE *f, et_ctx *c, const long *shape, unsigned long long seed, int stats) {
  char text[256];
  et_shape_text(c->k, shape, text, sizeof text);
  c->shape = shape;
  c->nargs = 0;
  c->msg[0] = 0;
  c->rng = seed;
  double err = INFINITY;
  if (stats) hkrt_emu_stats_reset(c->dev);
  int ran = c->k->op->emu_run(c->k, shape, c, &err) == 0;
  int pass = ran && err <= ET_TOLERANCE; /* false for NaN and inf */
  fprintf(f, "%-36s %-7s %-52s %10.3e  %s%s%s\n", c->k->name, c->k->target, text, ran ? err : NAN,
          pass ? "PASS" : "FAIL", c->msg[0] ? "  " : "", c->msg);
  if (stats) et_print_stats(f, c->dev);
  for (int i = 0; i < c->nallocs; i++) hkrt_free(c->dev, c->allocs[i]);
  c->nallocs = 0;
  return pass;
}

static char *et_tmpdir(void) {
  char *dir = fs_tmp_template("hkgen-test");
  if (!mkdtemp(dir)) {
    diag_error(NULL, 0, 0, "cannot make a temporary folder: %s", strerror(errno));
    free(dir);
    return NULL;
  }
  return dir;
}

/* ---- running: every (kernel, shape) pair is one item ------------------------
   Workers take items in turn, each with its own devices (emulated devices
   run one launch at a time, so parallel runs need one each); rows are
   printed in item order as soon as every earlier item is done, so the
   output is the same whatever the number of workers. */

typedef struct {
  const op_inst *k;
  size_t kernel; /* index in the set */
  int s;         /* shape index: the run's seed */
  long shape[OP_MAX_PARAMS];
} et_item;

typedef struct {
  et_item *items;
  size_t n;
  atomic_size_t next;
  const char *catdir;
  const et_options *o;
  hkrt_device *gpu; /* --device: the one device every worker shares (one worker) */
  pthread_mutex_t lock; /* guards everything below */
  char **rows;
  unsigned char *done, *kernel_broken;
  size_t printed;
  int failed, runs;
} et_pool;

/* The items' catalogue kernel on this worker's device for the item's target. */
static int et_item_kernel(et_pool *p, et_devices *ds, const et_item *it, et_ctx *c) {
  if (p->gpu) {
    c->dev = p->gpu;
    return ds->n ? hkrt_catalog_find(ds->cat[0], it->k->name, it->k->target, &c->kern) : HKRT_ERR_NOT_FOUND;
  }
  int d = et_device(ds, it->k->target, p->catdir, p->o->seed, p->o->stats);
  if (d < 0) return HKRT_ERR_NO_DEVICE;
  c->dev = ds->dev[d];
  return hkrt_catalog_find(ds->cat[d], it->k->name, it->k->target, &c->kern);
}

static void et_flush_rows(et_pool *p) {
  while (p->printed < p->n && p->done[p->printed]) {
    fputs(p->rows[p->printed], stdout);
    free(p->rows[p->printed]);
    p->rows[p->printed++] = NULL;
  }
  fflush(stdout);
}

static void et_run_item(et_pool *p, et_devices *ds, size_t i) {
  et_item *it = &p->items[i];
  char *row = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&row, &len);
  if (!f) {
    fprintf(stderr, "hkgen: out of memory\n");
    exit(HK_EFAIL);
  }
  et_ctx c;
  memset(&c, 0, sizeof c);
  c.k = it->k;
  int ok = 0, broken = 0;
  if (et_item_kernel(p, ds, it, &c) != HKRT_OK) {
    fprintf(f, "%-36s %-7s %-52s %10s  BROKEN  %s\n", it->k->name, it->k->target, "-", "-", hkrt_error());
    broken = 1;
  } else {
    ok = et_one_shape(f, &c, it->shape, p->o->seed + (unsigned long long)it->s * 7919u, p->o->stats);
  }
  fclose(f);
  pthread_mutex_lock(&p->lock);
  p->rows[i] = row;
  p->done[i] = 1;
  if (broken) p->kernel_broken[it->kernel] = 1;
  else p->runs++, p->failed += !ok;
  et_flush_rows(p);
  pthread_mutex_unlock(&p->lock);
}

static void *et_worker(void *arg) {
  et_pool *p = arg;
  et_devices ds = {0};
  if (p->gpu) { /* the catalogue opened once on the shared device */
    ds.cat[0] = NULL;
    if (hkrt_catalog_open(p->gpu, p->catdir, &ds.cat[0]) == HKRT_OK) ds.n = 1;
  }
  for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) et_run_item(p, &ds, i);
  if (p->gpu) {
    if (ds.n) hkrt_catalog_close(ds.cat[0]);
  } else {
    et_devices_close(&ds);
  }
  return NULL;
}

/* The runnable kernels' items, in the set's order. -1 on a bad --shape. */
static int et_items(const spec_set *set, const et_options *o, const char *only, et_item **out, size_t *n) {
  *out = xcalloc(set->n * ET_MAX_SHAPES + 1, sizeof **out);
  *n = 0;
  for (size_t i = 0; i < set->n; i++) {
    const op_inst *k = &set->v[i];
    if (only ? strcmp(k->target, only) != 0 : !tgt_is_amd(tgt_find(k->target))) continue;
    long shapes[ET_MAX_SHAPES][OP_MAX_PARAMS];
    int ns = et_shapes(k, o, shapes);
    if (ns < 0) return -1;
    for (int s = 0; s < ns; s++) {
      et_item *it = &(*out)[(*n)++];
      it->k = k;
      it->kernel = i;
      it->s = s;
      memcpy(it->shape, shapes[s], sizeof it->shape);
    }
  }
  return 0;
}

/* Runs the items on `workers' threads; the counts go to *runs, *failed and
   *broken (kernels that could not be run). */
static void et_run(const spec_set *set, et_item *items, size_t n, const char *catdir, const et_options *o,
                   hkrt_device *gpu, int workers, int *runs, int *failed, int *broken) {
  et_pool p;
  memset(&p, 0, sizeof p);
  p.items = items;
  p.n = n;
  atomic_init(&p.next, 0);
  p.catdir = catdir;
  p.o = o;
  p.gpu = gpu;
  pthread_mutex_init(&p.lock, NULL);
  p.rows = xcalloc(n + 1, sizeof *p.rows);
  p.done = xcalloc(n + 1, 1);
  p.kernel_broken = xcalloc(set->n + 1, 1);
  if (workers > (int)n) workers = n ? (int)n : 1;
  pthread_t th[256];
  int started = 0;
  for (int w = 1; w < workers; w++)
    if (pthread_create(&th[started], NULL, et_worker, &p) == 0) started++;
  et_worker(&p);
  for (int w = 0; w < started; w++) pthread_join(th[w], NULL);
  *runs = p.runs;
  *failed = p.failed;
  for (size_t i = 0; i < set->n; i++) *broken += p.kernel_broken[i];
  free(p.rows);
  free(p.done);
  free(p.kernel_broken);
  pthread_mutex_destroy(&p.lock);
}

static void et_list_skipped(const spec_set *set, const char *only) {
  for (size_t i = 0; i < set->n; i++) {
    const op_inst *k = &set->v[i];
    if (only ? !strcmp(k->target, only) : tgt_is_amd(tgt_find(k->target))) continue;
    printf("%-36s %-7s %-52s %10s  %s\n", k->name, k->target, "-", "-",
           only ? "not run: the device runs another target"
                : "not emulated: the emulator runs AMD targets; check NVIDIA ones on a GPU (hkgen test --device)");
  }
}

hkrt_device *et_gpu_open(const char *who, const char *hint, const char *targets, const char **target) {
  static const hkrt_backend bs[] = {HKRT_BACKEND_CUDA, HKRT_BACKEND_HIP};
  static const char *const names[] = {"CUDA", "HIP"};
  char why[1024] = "";
  for (int i = 0; i < 2; i++) {
    hkrt_device *d = NULL;
    if (hkrt_device_open(bs[i], NULL, &d) != HKRT_OK) {
      size_t at = strlen(why);
      snprintf(why + at, sizeof why - at, "%s%s: %s", at ? "; " : "", names[i], hkrt_error());
      continue;
    }
    *target = hkrt_device_target(d);
    if (!*target && targets && !strchr(targets, ',')) *target = targets;
    if (!*target) {
      diag_error(NULL, 0, 0, "%s: a HIP device does not say its target: name one with --target (gfx90a, gfx942 "
                 "or gfx950)", who);
      hkrt_device_close(d);
      return NULL;
    }
    return d;
  }
  diag_error(NULL, 0, 0, "%s: no GPU here (%s)%s%s", who, why, hint ? "; " : "", hint ? hint : "");
  return NULL;
}

/* --device: the GPU present and the target it runs. */
static hkrt_device *et_gpu(const et_options *o, const char **target) {
  return et_gpu_open("hkgen test --device", "without --device the AMD kernels run on the CPU emulator", o->targets,
                     target);
}

/* The catalogue the runs use: emulated host objects of the AMD kernels, or
   (--device) code objects of the device's target's kernels. */
static int et_build(const spec_set *set, const char *dir, int jobs, const char *only) {
  spec_set sub = {0};
  sub.v = xcalloc(set->n ? set->n : 1, sizeof *sub.v);
  for (size_t i = 0; i < set->n; i++) /* a view: the kernels stay set's */
    if (only ? !strcmp(set->v[i].target, only) : tgt_is_amd(tgt_find(set->v[i].target)))
      sub.v[sub.n++] = set->v[i];
  bd_options o = {.outdir = dir, .jobs = jobs, .use_cache = 1, .quiet = !isatty(2), .emulate = !only};
  int rc = sub.n ? bd_build(&sub, &o) : HK_OK;
  free(sub.v);
  return rc;
}

int et_test(const spec_set *set, const et_options *o) {
  const char *only = NULL; /* --device: the device's target */
  hkrt_device *gpu = NULL;
  if (o->device && o->stats) {
    diag_error(NULL, 0, 0, "--stats counts what the emulator sees; it does not go with --device");
    return HK_EUSAGE;
  }
  if (o->device && !(gpu = et_gpu(o, &only))) return HK_EFAIL;
  char *dir = et_tmpdir();
  if (!dir) {
    if (gpu) hkrt_device_close(gpu);
    return HK_EFAIL;
  }
  double t0 = et_now();
  int failed = 0, runs = 0, broken = 0;
  et_item *items = NULL;
  size_t n = 0;
  if (et_items(set, o, only, &items, &n) < 0) {
    broken = (int)set->n;
  } else if (et_build(set, dir, o->jobs, only) != HK_OK) {
    diag_error(NULL, 0, 0, "the %s catalogue did not build; nothing was run", gpu ? "device's" : "emulated");
    broken = (int)set->n;
  }
  if (gpu)
    printf("hkgen test: on the %s device (%s), fp64 reference, tolerance %.0e, seed %llu\n",
           hkrt_device_target(gpu) ? "CUDA" : "HIP", only, ET_TOLERANCE, o->seed);
  else
    printf("hkgen test: emulated CDNA waves, fp64 reference, tolerance %.0e, seed %llu, %d worker%s\n",
           ET_TOLERANCE, o->seed, o->jobs, o->jobs == 1 ? "" : "s");
  printf("%-36s %-7s %-52s %10s  %s\n", "kernel", "target", "shape", "rel err", "result");
  et_list_skipped(set, only);
  if (!broken) et_run(set, items, n, dir, o, gpu, gpu ? 1 : o->jobs, &runs, &failed, &broken);
  printf("%d run%s, %d failed, %d kernel%s not built or not run; %.1f s; seed %llu (rerun with --seed %llu)\n",
         runs, runs == 1 ? "" : "s", failed, broken, broken == 1 ? "" : "s", et_now() - t0, o->seed, o->seed);
  if (o->keep) printf("the %s catalogue is kept in %s\n", gpu ? "device's" : "emulated", dir);
  else fs_remove_tree(dir);
  free(dir);
  free(items);
  if (gpu) hkrt_device_close(gpu);
  return failed || broken ? HK_EFAIL : HK_OK;
}

/* ---- timing (hkgen bench, hkgen tune) ------------------------------------------ */

static double et_elapsed(hkrt_event *a, hkrt_event *b) {
  double ms = -1;
  return hkrt_event_elapsed(a, b, &ms) == HKRT_OK ? ms : -1;
}

/* Packed once, then launched as hkrt_kernel_launch would: warm-ups, then
   each timed launch after an L2 flush, between two events. Returns -1
   always, so that emu_run computes no reference; c->timed says whether the
   timing ran. */
static int et_launch_timed(et_ctx *c) {
  unsigned char buf[4096];
  size_t size = 0;
  unsigned grid[3], block[3];
  hkrt_func *fn = NULL;
  hkrt_event *a = NULL, *b = NULL;
  et_timing *t = c->timing;
  if (hkrt_kernel_args(c->kern, NULL, c->args, (size_t)c->nargs, buf, sizeof buf, &size, grid, block) != HKRT_OK ||
      hkrt_kernel_function(c->kern, &fn) != HKRT_OK) {
    et_note(c, "%s", hkrt_error());
    return -1;
  }
  unsigned lds = hkrt_kernel_dynamic_lds(c->kern);
  int ok = hkrt_event_create(c->dev, &a) == HKRT_OK && hkrt_event_create(c->dev, &b) == HKRT_OK;
  for (int i = 0; ok && i < t->warmup; i++) ok = hkrt_launch_ex(fn, grid, block, lds, buf, size, NULL) == HKRT_OK;
  ok = ok && hkrt_synchronize(c->dev) == HKRT_OK;
  for (int i = 0; ok && i < t->runs; i++) {
    ok = hkrt_flush_l2(c->dev, NULL, &t->flush_bytes) == HKRT_OK && hkrt_event_record(a, NULL) == HKRT_OK &&
         hkrt_launch_ex(fn, grid, block, lds, buf, size, NULL) == HKRT_OK && hkrt_event_record(b, NULL) == HKRT_OK &&
         (t->ms[i] = et_elapsed(a, b)) >= 0;
  }
  if (!ok) et_note(c, "%s", hkrt_error());
  else c->timed = 1;
  hkrt_event_destroy(a);
  hkrt_event_destroy(b);
  return -1;
}

int et_time(hkrt_device *dev, hkrt_kernel *kern, const op_inst *k, const long *shape, unsigned long long seed,
            et_timing *t, char *msg, size_t n) {
  et_ctx c;
  memset(&c, 0, sizeof c);
  c.dev = dev;
  c.kern = kern;
  c.k = k;
  c.shape = shape;
  c.rng = seed;
  c.timing = t;
  double err;
  if (t->runs < 1 || t->runs > ET_MAX_RUNS) t->runs = t->runs < 1 ? 1 : ET_MAX_RUNS;
  k->op->emu_run(k, shape, &c, &err);
  for (int i = 0; i < c.nallocs; i++) hkrt_free(dev, c.allocs[i]);
  if (!c.timed) snprintf(msg, n, "%s", c.msg[0] ? c.msg : "the op's run did not launch the kernel");
  return c.timed ? 0 : -1;
}
