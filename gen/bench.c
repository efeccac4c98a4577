/* bench.c: `hkgen bench CATALOG [--kernel NAME] [--shape NAME=V,...]
   [--json] [-n N] [--target T]`. Each kernel of the GPU's target runs
   through libhkrt on the inputs its op's emulator test prepares (fresh
   random data: emutest.c, et_time): warm-ups, then N launches each after an
   L2 flush, timed by device events. The FLOP and byte counts are the op's
   (op_desc.work, the estimate's), so TFLOP/s and TB/s mean what the
   estimate's do. Without a GPU it says so (status 1). */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "estimate.h"
#include "hkrt.h"
#include "json.h"
#include "target.h"
#include "util.h"

int cmd_bench(int argc, char **argv);

#define BN_WARMUP 3
#define BN_RUNS 20
#define BN_SEED 0x5eedULL
#define BN_MAX_SHAPES 16

/* ---- problems ------------------------------------------------------------ */

int bn_problem_parse(const char *text, bn_problem *pb) {
  memset(pb, 0, sizeof *pb);
  pb->text = text;
  for (const char *p = text; p && *p;) {
    size_t len = strcspn(p, ","), eq = strcspn(p, "=");
    if (pb->n == BN_MAX_PAIRS || eq >= len || eq == 0 || eq >= sizeof pb->name[0] ||
        len - eq - 1 == 0 || len - eq - 1 >= sizeof pb->value[0]) {
      diag_error("--shape", 0, 0, "'%.*s' is not NAME=VALUE (at most %d pairs, as in --shape M=4096,N=4096)",
                 (int)len, p, BN_MAX_PAIRS);
      return -1;
    }
    memcpy(pb->name[pb->n], p, eq);
    memcpy(pb->value[pb->n], p + eq + 1, len - eq - 1);
    for (int i = 0; i < pb->n; i++)
      if (!strcmp(pb->name[i], pb->name[pb->n])) {
        diag_error("--shape", 0, 0, "'%s' gives %s twice", text, pb->name[i]);
        return -1;
      }
    pb->n++;
    p += len + (p[len] == ',');
  }
  if (!pb->n) {
    diag_error("--shape", 0, 0, "an empty problem: give NAME=VALUE,...");
    return -1;
  }
  return 0;
}

const char *bn_problem_get(const bn_problem *pb, const char *name) {
  for (int i = 0; pb && i < pb->n; i++)
    if (!strcmp(pb->name[i], name)) return pb->value[i];
  return NULL;
}

/* One value of pb for run-time parameter i of k into shape. */
static int bn_set(const op_inst *k, int i, const char *v, long *shape, char *why, size_t n) {
  const op_param *p = &k->op->params[i];
  char *end, msg[256];
  long x = strtol(v, &end, 10);
  if (p->type != OP_INT || *end || end == v) {
    snprintf(why, n, "--shape %s=%s: %s takes an integer", p->name, v, p->name);
    return -1;
  }
  if (op_value_ok(p, v, msg, sizeof msg) < 0) {
    snprintf(why, n, "--shape %s=%s: %s", p->name, v, msg);
    return -1;
  }
  shape[i] = x;
  return 0;
}

/* The op's bench_shape for k's run-time parameters. */
static void bn_defaults(const op_inst *k, long *shape, unsigned char *given) {
  bn_problem d;
  if (!k->op->bench_shape || bn_problem_parse(k->op->bench_shape, &d) < 0) return;
  char why[256];
  for (int j = 0; j < d.n; j++) {
    int i = op_param_index(k->op, d.name[j]);
    if (i >= 0 && op_is_any(k, d.name[j]) && bn_set(k, i, d.value[j], shape, why, sizeof why) == 0) given[i] = 1;
  }
}

int bn_shape(const op_inst *k, const bn_problem *pb, long *shape, char *why, size_t n) {
  unsigned char given[OP_MAX_PARAMS] = {0};
  op_shape_baked(k, shape);
  bn_defaults(k, shape, given);
  for (int j = 0; pb && j < pb->n; j++) {
    int i = op_param_index(k->op, pb->name[j]);
    if (i < 0) {
      snprintf(why, n, "op %s has no parameter %s", k->op->name, pb->name[j]);
      return 1;
    }
    if (!op_is_any(k, pb->name[j])) {
      const char *b = k->vals[i];
      char *e1, *e2;
      double x = strtod(b, &e1), y = strtod(pb->value[j], &e2);
      int same = !strcmp(b, pb->value[j]) || (!*e1 && !*e2 && e1 != b && e2 != pb->value[j] && x == y);
      if (!same) {
        snprintf(why, n, "bakes %s=%s", pb->name[j], b);
        return 1;
      }
      continue;
    }
    if (bn_set(k, i, pb->value[j], shape, why, n) < 0) return -1;
    given[i] = 1;
  }
  for (int i = 0; i < k->op->nparams; i++)
    if (op_is_any(k, k->op->params[i].name) && !given[i]) {
      snprintf(why, n, "kernel %s: %s is a run-time parameter: give it with --shape %s=V", k->name,
               k->op->params[i].name, k->op->params[i].name);
      return -1;
    }
  return 0;
}

/* ---- figures --------------------------------------------------------------- */

int bn_work(const op_inst *k, const long *shape, op_work *w, int *rate_tbs) {
  char msg[256];
  memset(w, 0, sizeof *w);
  if (!k->op->work || k->op->work(k, shape, w, msg, sizeof msg) < 0) return -1;
  *rate_tbs = !(w->mma_flops > 0); /* the estimate's rule (es_result.rate_is_tbs) */
  return 0;
}

double bn_rate(const op_work *w, int rate_tbs, double us) {
  if (!(us > 0)) return 0;
  return (rate_tbs ? w->bytes : w->flops) / (us * 1e-6) / 1e12;
}

static int bn_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void bn_stats(const et_timing *t, double *median, double *min, double *max) {
  double v[ET_MAX_RUNS];
  int n = t->runs;
  for (int i = 0; i < n; i++) v[i] = t->ms[i] * 1e3;
  qsort(v, (size_t)n, sizeof v[0], bn_cmp);
  *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  *min = v[0];
  *max = v[n - 1];
}

/* ---- the command ------------------------------------------------------------ */

typedef struct {
  const char *dir, *kernel, *targets;
  const char *shapes[BN_MAX_SHAPES];
  bn_problem pb[BN_MAX_SHAPES];
  int nshapes, json, runs;
} bn_args;

static int bn_parse_args(int argc, char **argv, bn_args *a) {
  memset(a, 0, sizeof *a);
  a->runs = BN_RUNS;
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = !strcmp(s, "--kernel") || !strcmp(s, "--shape") || !strcmp(s, "-n") || !strcmp(s, "--target");
    if (takes && !next) {
      diag_error(NULL, 0, 0, "%s needs a value (see hkgen bench --help)", s);
      return -1;
    }
    if (!strcmp(s, "--kernel")) a->kernel = argv[++i];
    else if (!strcmp(s, "--target")) a->targets = argv[++i];
    else if (!strcmp(s, "--json")) a->json = 1;
    else if (!strcmp(s, "-n")) {
      char *end;
      long n = strtol(argv[++i], &end, 10);
      if (*end || n < 1 || n > ET_MAX_RUNS) {
        diag_error(NULL, 0, 0, "-n takes a number of timed runs from 1 to %d (got '%s')", ET_MAX_RUNS, argv[i]);
        return -1;
      }
      a->runs = (int)n;
    } else if (!strcmp(s, "--shape")) {
      if (a->nshapes == BN_MAX_SHAPES) {
        diag_error(NULL, 0, 0, "at most %d --shape problems", BN_MAX_SHAPES);
        return -1;
      }
      if (bn_problem_parse(argv[++i], &a->pb[a->nshapes]) < 0) return -1;
      a->shapes[a->nshapes++] = argv[i];
    } else if (s[0] == '-' || a->dir) {
      diag_error(NULL, 0, 0, "bench takes one catalogue folder and --kernel, --shape, --json, -n, --target (got '%s')", s);
      return -1;
    } else a->dir = s;
  }
  if (!a->dir) diag_error(NULL, 0, 0, "bench takes a catalogue folder (hkgen build -o DIR)");
  return a->dir ? 0 : -1;
}

/* One planned run: kernel i at a problem (-1: the op's bench shape). */
typedef struct {
  size_t kernel;
  int problem;
  long shape[OP_MAX_PARAMS];
} bn_run;

/* The runs of the kernels --kernel selects, at every --shape each serves
   (or the op's bench shape). -1 (a message) on a bad --shape or --kernel. */
static int bn_plan(const bn_args *a, op_inst *ks, size_t nk, bn_run **runs, size_t *nr) {
  int found = 0, bad = 0, used[BN_MAX_SHAPES] = {0};
  char first_why[BN_MAX_SHAPES][320] = {{0}}; /* why the first kernel does not serve each problem */
  *runs = xcalloc(nk * (BN_MAX_SHAPES + 1), sizeof **runs);
  *nr = 0;
  for (size_t i = 0; i < nk && !bad; i++) {
    if (a->kernel && strcmp(ks[i].name, a->kernel)) continue;
    found = 1;
    for (int p = a->nshapes ? 0 : -1; p < a->nshapes && !bad; p++) {
      bn_run *r = &(*runs)[*nr];
      char why[512];
      int rc = bn_shape(&ks[i], p < 0 ? NULL : &a->pb[p], r->shape, why, sizeof why);
      if (rc < 0) diag_error(NULL, 0, 0, "%s", why);
      if (rc > 0 && p >= 0 && !first_why[p][0]) snprintf(first_why[p], sizeof first_why[p], "%.60s: %.180s", ks[i].name, why);
      bad |= rc < 0;
      if (rc == 0) {
        r->kernel = i;
        r->problem = p;
        (*nr)++;
        if (p >= 0) used[p] = 1;
      }
    }
  }
  if (!found) diag_error(a->dir, 0, 0, "no kernel %s in this catalogue", a->kernel);
  for (int p = 0; p < a->nshapes && found && !bad; p++)
    if (!used[p]) {
      diag_error("--shape", 0, 0, "%s: no kernel benchmarked here serves this problem (%s)", a->shapes[p],
                 first_why[p]);
      bad = 1;
    }
  return found && !bad ? 0 : -1;
}

static void bn_json_run(jw_t *w, const op_inst *k, const bn_run *r, const et_timing *t, const char *err) {
  jw_begin_obj(w);
  jw_kstr(w, "kernel", k->name);
  jw_kstr(w, "target", k->target);
  jw_key(w, "shape");
  w->inline_depth = w->depth + 1;
  jw_begin_obj(w);
  for (int i = 0; i < k->op->nparams; i++)
    if (k->op->params[i].type == OP_INT && !op_feature_off(k, i)) jw_kint(w, k->op->params[i].name, r->shape[i]);
  jw_end_obj(w);
  w->inline_depth = 1000;
  if (err) {
    jw_kstr(w, "error", err);
  } else {
    double med, mn, mx;
    op_work wk;
    int tbs = 0, have = bn_work(k, r->shape, &wk, &tbs) == 0;
    bn_stats(t, &med, &mn, &mx);
    jw_key(w, "median_us");
    jw_num(w, med, 3);
    jw_key(w, "min_us");
    jw_num(w, mn, 3);
    jw_key(w, "max_us");
    jw_num(w, mx, 3);
    if (have) {
      jw_key(w, "flops");
    jw_num(w, wk.flops, 0);
      jw_key(w, "bytes");
    jw_num(w, wk.bytes, 0);
      jw_key(w, "rate");
    jw_num(w, bn_rate(&wk, tbs, med), 2);
      jw_kstr(w, "unit", tbs ? "TB/s" : "TFLOP/s");
    }
  }
  jw_end_obj(w);
}

static void bn_text_run(const op_inst *k, const bn_run *r, const et_timing *t, const char *err) {
  char text[256];
  et_shape_text(k, r->shape, text, sizeof text);
  if (err) {
    printf("%-40s %-7s %-44s FAILED  %s\n", k->name, k->target, text, err);
    return;
  }
  double med, mn, mx;
  op_work wk;
  int tbs = 0, have = bn_work(k, r->shape, &wk, &tbs) == 0;
  bn_stats(t, &med, &mn, &mx);
  printf("%-40s %-7s %-44s %10.2f %10.2f %10.2f", k->name, k->target, text, med, mn, mx);
  if (have) printf("  %8.2f %s", bn_rate(&wk, tbs, med), tbs ? "TB/s" : "TFLOP/s");
  printf("\n");
  fflush(stdout);
}

/* Runs the planned runs of the device's target on dev. Returns the failures. */
static int bn_run_all(const bn_args *a, hkrt_device *dev, const char *target, op_inst *ks, const bn_run *runs,
                      size_t nr, jw_t *w, size_t *flush_bytes) {
  hkrt_catalog *cat = NULL;
  if (hkrt_catalog_open(dev, a->dir, &cat) != HKRT_OK) {
    diag_error(NULL, 0, 0, "%s", hkrt_error());
    return 1;
  }
  int failed = 0, ran = 0;
  for (size_t i = 0; i < nr; i++) {
    const op_inst *k = &ks[runs[i].kernel];
    if (strcmp(k->target, target)) continue;
    et_timing t = {.warmup = BN_WARMUP, .runs = a->runs};
    char msg[1024] = "";
    hkrt_kernel *kern = NULL;
    int rc = hkrt_catalog_find(cat, k->name, k->target, &kern) == HKRT_OK ? 0 : -1;
    if (rc < 0) snprintf(msg, sizeof msg, "%s", hkrt_error());
    else rc = et_time(dev, kern, k, runs[i].shape, BN_SEED + i, &t, msg, sizeof msg);
    if (rc == 0) *flush_bytes = t.flush_bytes;
    failed += rc < 0;
    ran++;
    if (w) bn_json_run(w, k, &runs[i], &t, rc < 0 ? msg : NULL);
    else bn_text_run(k, &runs[i], &t, rc < 0 ? msg : NULL);
  }
  hkrt_catalog_close(cat);
  if (!ran) diag_error(a->dir, 0, 0, "no kernel for the device's target %s among those chosen", target);
  return failed + !ran;
}

int cmd_bench(int argc, char **argv) {
  bn_args a;
  op_inst *ks = NULL;
  char **objs = NULL;
  size_t nk = 0, nr = 0;
  bn_run *runs = NULL;
  if (bn_parse_args(argc, argv, &a) < 0) return HK_EUSAGE;
  int usage = ie_catalogue_read(a.dir, &ks, &objs, &nk) < 0 || bn_plan(&a, ks, nk, &runs, &nr) < 0;
  const char *target = NULL;
  hkrt_device *dev = usage ? NULL : et_gpu_open("hkgen bench", "timing needs a GPU (CUDA or HIP); hkgen inspect --estimate "
                                 "predicts AMD kernels without one", a.targets, &target);
  int failed = 1;
  if (dev) {
    jw_t w;
    if (a.json) {
      jw_init(&w);
      jw_begin_obj(&w);
      jw_kint(&w, "hkgen_bench", 1);
      jw_kstr(&w, "backend", hkrt_device_target(dev) ? "CUDA" : "HIP");
      jw_kstr(&w, "target", target);
      jw_kint(&w, "warmup", BN_WARMUP);
      jw_kint(&w, "runs", a.runs);
      jw_key(&w, "results");
      jw_begin_arr(&w);
    } else {
      printf("hkgen bench: %s (%s), %d warm-ups, median of %d runs, L2 flushed before each (device events)\n",
             target, hkrt_device_target(dev) ? "CUDA" : "HIP", BN_WARMUP, a.runs);
      printf("%-40s %-7s %-44s %10s %10s %10s  %s\n", "kernel", "target", "shape", "median us", "min us", "max us",
             "rate");
    }
    size_t flush = 0;
    failed = bn_run_all(&a, dev, target, ks, runs, nr, a.json ? &w : NULL, &flush);
    if (!a.json) printf("L2 flush: %.1f MiB written before each timed launch (twice the device's L2)\n",
                        (double)flush / (1 << 20));
    if (a.json) {
      jw_end_arr(&w);
      jw_kint(&w, "flush_bytes", (long long)flush);
      jw_end_obj(&w);
      size_t len;
      char *text = jw_finish(&w, &len);
      fputs(text, stdout);
      free(text);
    }
    hkrt_device_close(dev);
  }
  for (size_t i = 0; i < nk; i++) {
    op_inst_free(&ks[i]);
    free(objs[i]);
  }
  free(ks);
  free(objs);
  free(runs);
  return usage ? HK_EUSAGE : failed ? HK_EFAIL : HK_OK;
}
