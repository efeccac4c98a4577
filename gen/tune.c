/* tune.c: `hkgen tune`. For each problem (--shape) and each op and target
   of a catalogue, the kernels that serve the problem (by hkrt_select's
   rule, runtime/include/hkrt.h: baked values equal, run-time ones given,
   only tuning parameters or defaults left out) are the candidates; each is
   measured on the GPU present (bench.c's timing) when the GPU runs its
   target, else estimated (estimate.h) when the target is AMD, else the
   problem cannot be tuned here and the command says so. The fastest
   candidate per problem goes into the manifest's "tuned" list with every
   candidate's figure and the method, and hkrt_select then prefers it for
   that problem. The manifest is rewritten atomically, only when every
   problem was tuned. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "estimate.h"
#include "hkrt.h"
#include "json.h"
#include "target.h"
#include "util.h"

int tn_tune(const char *dir, const char *const *shapes, int nshapes, const char *part, const char *targets, int runs);

#define TN_MAX_CAND 64
#define TN_WARMUP 3
#define TN_SEED 0x7e57ULL

typedef struct {
  size_t kernel;
  double us;      /* median measured, or estimated */
  double min_us, max_us;
  double rate;
  int rate_tbs;
  char err[256];  /* non-empty: no figure */
} tn_cand;

/* One problem of one op on one target, and its candidates. */
typedef struct {
  int problem;
  const char *op, *target;
  const char *method;      /* "measured", "estimate" */
  const tgt_part *part;    /* estimate */
  tn_cand c[TN_MAX_CAND];
  int n, winner;           /* winner: index in c, -1 none */
} tn_group;

typedef struct {
  op_inst *ks;
  char **objs;
  size_t nk;
  bn_problem pb[16];
  int npb;
  hkrt_device *gpu;
  const char *gpu_target;
  hkrt_catalog *cat;       /* on gpu */
  const char *part;        /* --part */
  int runs;
} tn_ctx;

/* A baked parameter the problem leaves out is fine, as for hkrt_select,
   when it only tunes, allows one value, or is a feature left off. */
static int tn_omission_ok(const op_inst *k, int i) {
  const op_param *p = &k->op->params[i];
  if (op_is_tuning(k->op, p->name) || op_feature_off(k, i)) return 1;
  /* an omissible parameter (gemm's dtype) left out means its default, as in hkrt_select */
  if (op_is_omissible(k->op, p->name) && !strcmp(k->vals[i], p->def)) return 1;
  return p->type == OP_ENUM && p->choices[0] && !p->choices[1];
}

/* Whether k serves pb; shape filled then. Every run-time parameter must be
   given: a tuned entry records the problem it was measured at. -1 with a
   message for a bad value. */
static int tn_fits(const op_inst *k, const bn_problem *pb, long *shape) {
  char why[512];
  int rc = bn_shape(k, pb, shape, why, sizeof why);
  if (rc < 0 && strstr(why, "is a run-time parameter")) return 0; /* it does not serve a problem without it */
  if (rc < 0) {
    diag_error(NULL, 0, 0, "%s", why);
    return -1;
  }
  if (rc > 0) return 0;
  for (int i = 0; i < k->op->nparams; i++) {
    const char *name = k->op->params[i].name;
    if (op_is_any(k, name) && !bn_problem_get(pb, name)) return 0;
    if (!op_is_any(k, name) && !bn_problem_get(pb, name) && !tn_omission_ok(k, i)) return 0;
  }
  return 1;
}

/* Why a kernel bn_shape accepts does not serve pb: the parameter left out. */
static void tn_omitted(const op_inst *k, const bn_problem *pb, char *why, size_t n) {
  snprintf(why, n, "?");
  for (int i = 0; i < k->op->nparams; i++) {
    const char *name = k->op->params[i].name;
    if (bn_problem_get(pb, name)) continue;
    if (op_is_any(k, name)) {
      snprintf(why, n, "%s is a run-time parameter: give it", name);
      return;
    }
    if (!tn_omission_ok(k, i)) {
      snprintf(why, n, "bakes %s=%s: give %s=%s", name, k->vals[i], name, k->vals[i]);
      return;
    }
  }
}

static int tn_measure(tn_ctx *t, const op_inst *k, const long *shape, tn_cand *c) {
  hkrt_kernel *kern = NULL;
  et_timing tm = {.warmup = TN_WARMUP, .runs = t->runs};
  if (hkrt_catalog_find(t->cat, k->name, k->target, &kern) != HKRT_OK) {
    snprintf(c->err, sizeof c->err, "%s", hkrt_error());
    return -1;
  }
  if (et_time(t->gpu, kern, k, shape, TN_SEED, &tm, c->err, sizeof c->err) < 0) return -1;
  bn_stats(&tm, &c->us, &c->min_us, &c->max_us);
  op_work w;
  if (bn_work(k, shape, &w, &c->rate_tbs) == 0) c->rate = bn_rate(&w, c->rate_tbs, c->us);
  return 0;
}

static int tn_estimate(tn_ctx *t, const tn_group *g, size_t i, const long *shape, tn_cand *c) {
  es_launch l;
  es_result r;
  if (ie_kernel_estimate(t->objs[i], &t->ks[i], shape, g->part, &l, &r, c->err, sizeof c->err) < 0) return -1;
  c->us = c->min_us = c->max_us = r.seconds * 1e6;
  c->rate = r.rate;
  c->rate_tbs = r.rate_is_tbs;
  return 0;
}

/* The method for a target: the GPU's when it runs it, the estimate for an
   AMD target it models; NULL with the reason otherwise. */
static const char *tn_method(const tn_ctx *t, const char *target, const tgt_part **part, char *why, size_t n) {
  const tgt_info *ti = tgt_find(target), *pt = NULL;
  *part = NULL;
  if (t->gpu && !strcmp(t->gpu_target, target)) return "measured";
  if (ti && tgt_is_amd(ti) && ti->rates && ti->nparts && tgt_largest_part(ti)->lds_bw) { /* modelled parts */
    const tgt_part *p = t->part ? tgt_part_find(t->part, &pt) : NULL;
    *part = p && pt == ti ? p : tgt_largest_part(ti);
    return "estimate";
  }
  snprintf(why, n, "%s kernels cannot be tuned here: %s, and the estimate models AMD targets only "
           "(gfx942, gfx950); run hkgen tune where a GPU of that target is", target,
           t->gpu ? "the GPU here runs another target" : "there is no GPU here");
  return NULL;
}

static void tn_print_group(const tn_ctx *t, const tn_group *g) {
  printf("problem %s  op %s  target %s  (%s%s%s)\n", t->pb[g->problem].text, g->op, g->target, g->method,
         g->part ? " on " : "", g->part ? g->part->name : "");
  for (int j = 0; j < g->n; j++) {
    const tn_cand *c = &g->c[j];
    if (c->err[0]) printf("  %-44s failed: %s\n", t->ks[c->kernel].name, c->err);
    else printf("  %-44s %10.2f us  %8.2f %-7s%s\n", t->ks[c->kernel].name, c->us, c->rate,
                c->rate_tbs ? "TB/s" : "TFLOP/s", j == g->winner ? "  <- tuned" : "");
  }
  fflush(stdout);
}

/* Evaluates group g's candidates and picks the fastest; -1 when none has a figure. */
static int tn_run_group(tn_ctx *t, tn_group *g) {
  g->winner = -1;
  for (int j = 0; j < g->n; j++) {
    tn_cand *c = &g->c[j];
    long shape[OP_MAX_PARAMS];
    tn_fits(&t->ks[c->kernel], &t->pb[g->problem], shape);
    int rc = !strcmp(g->method, "measured") ? tn_measure(t, &t->ks[c->kernel], shape, c)
                                            : tn_estimate(t, g, c->kernel, shape, c);
    if (rc == 0 && (g->winner < 0 || c->us < g->c[g->winner].us)) g->winner = j;
  }
  tn_print_group(t, g);
  return g->winner < 0 ? -1 : 0;
}

/* The groups of problem p: the fitting kernels by op and target, in
   manifest order. -1 on a bad value. */
static int tn_groups(tn_ctx *t, int p, tn_group *gs, int *ng, int max) {
  for (size_t i = 0; i < t->nk; i++) {
    long shape[OP_MAX_PARAMS];
    int fit = tn_fits(&t->ks[i], &t->pb[p], shape);
    if (fit < 0) return -1;
    if (!fit) continue;
    int g = 0;
    while (g < *ng && (gs[g].problem != p || strcmp(gs[g].op, t->ks[i].op->name) || strcmp(gs[g].target, t->ks[i].target)))
      g++;
    if (g == *ng) {
      if (*ng == max) continue;
      memset(&gs[g], 0, sizeof gs[g]);
      gs[g].problem = p;
      gs[g].op = t->ks[i].op->name;
      gs[g].target = t->ks[i].target;
      (*ng)++;
    }
    if (gs[g].n < TN_MAX_CAND) gs[g].c[gs[g].n++].kernel = i;
  }
  return 0;
}

/* ---- the manifest ----------------------------------------------------------- */

static void tn_json_group(jw_t *w, const tn_ctx *t, const tn_group *g) {
  const bn_problem *pb = &t->pb[g->problem];
  const op_inst *win = &t->ks[g->c[g->winner].kernel];
  jw_begin_obj(w);
  jw_kstr(w, "op", g->op);
  jw_kstr(w, "target", g->target);
  jw_key(w, "problem");
  w->inline_depth = w->depth + 1;
  jw_begin_obj(w);
  for (int i = 0; i < pb->n; i++)
    if (op_param_index(win->op, pb->name[i]) >= 0) jw_kstr(w, pb->name[i], pb->value[i]);
  jw_end_obj(w);
  w->inline_depth = 1000;
  jw_kstr(w, "kernel", win->name);
  jw_kstr(w, "method", g->method);
  if (g->part) jw_kstr(w, "part", g->part->name);
  if (!strcmp(g->method, "measured")) jw_kint(w, "runs", t->runs);
  jw_key(w, "candidates");
  jw_begin_arr(w);
  w->inline_depth = w->depth + 1;
  for (int j = 0; j < g->n; j++) {
    const tn_cand *c = &g->c[j];
    jw_begin_obj(w);
    jw_kstr(w, "kernel", t->ks[c->kernel].name);
    if (c->err[0]) {
      jw_kstr(w, "error", c->err);
    } else {
      jw_key(w, "us");
      jw_num(w, c->us, 3);
      if (!strcmp(g->method, "measured")) {
        jw_key(w, "min_us");
        jw_num(w, c->min_us, 3);
        jw_key(w, "max_us");
        jw_num(w, c->max_us, 3);
      }
      jw_key(w, "rate");
      jw_num(w, c->rate, 2);
      jw_kstr(w, "unit", c->rate_tbs ? "TB/s" : "TFLOP/s");
    }
    jw_end_obj(w);
  }
  w->inline_depth = 1000;
  jw_end_arr(w);
  jw_end_obj(w);
}

/* The manifest without its "tuned" list (always the last key: hkgen's
   writer puts it there), then the new one. */
static int tn_write(const char *dir, const tn_ctx *t, const tn_group *gs, int ng) {
  char *path = fs_join(dir, "manifest.json"), *text;
  size_t len;
  if (fs_read_file(path, 64u << 20, &text, &len) < 0) {
    diag_error(path, 0, 0, "cannot read: %s", strerror(errno));
    free(path);
    return -1;
  }
  char *old = strstr(text, "\n  \"tuned\": ");
  if (old) *old = 0;
  size_t keep = strlen(text);
  while (keep && (text[keep - 1] == '\n' || text[keep - 1] == '}' || text[keep - 1] == ',')) keep--;
  text[keep] = 0; /* ends with the kernels' "  ]" */
  jw_t w;
  jw_init(&w);
  jw_begin_obj(&w);
  jw_key(&w, "tuned");
  jw_begin_arr(&w);
  for (int g = 0; g < ng; g++) tn_json_group(&w, t, &gs[g]);
  jw_end_arr(&w);
  jw_end_obj(&w);
  size_t tl;
  char *tuned = jw_finish(&w, &tl);
  char *body = strchr(tuned, '\n'), *end = strrchr(tuned, '}');
  while (end > body && end[-1] == '\n') end--;
  char *out = xasprintf("%s,%.*s\n}\n", text, (int)(end - body), body);
  int rc = fs_write_atomic(path, out, strlen(out));
  if (rc < 0) diag_error(path, 0, 0, "cannot write: %s", strerror(errno));
  free(out);
  free(tuned);
  free(text);
  free(path);
  return rc;
}

/* ---- the command -------------------------------------------------------------- */

/* The GPU, quietly: without one every target is estimated or refused. */
static void tn_open_gpu(tn_ctx *t, const char *targets) {
  static const hkrt_backend bs[] = {HKRT_BACKEND_CUDA, HKRT_BACKEND_HIP};
  for (int i = 0; i < 2 && !t->gpu; i++) {
    hkrt_device *d = NULL;
    if (hkrt_device_open(bs[i], NULL, &d) != HKRT_OK) continue;
    t->gpu_target = hkrt_device_target(d);
    if (!t->gpu_target && targets && !strchr(targets, ',')) t->gpu_target = targets;
    if (t->gpu_target) t->gpu = d;
    else hkrt_device_close(d);
  }
}

static int tn_part_ok(const char *part) {
  const tgt_info *t;
  if (!part || (tgt_part_find(part, &t) && tgt_is_amd(t) && t->rates)) return 0;
  diag_error(NULL, 0, 0, "--part: '%s' is not an AMD part the estimate models (MI300X, MI325X, MI350X, MI355X)", part);
  return -1;
}

/* --part names a part of a target some problem's kernels are for. */
static int tn_part_used(const char *part, const tn_group *gs, int ng) {
  const tgt_info *pt = NULL;
  if (!part) return 0;
  tgt_part_find(part, &pt);
  for (int g = 0; g < ng; g++)
    if (!strcmp(gs[g].target, pt->name)) return 0;
  diag_error(NULL, 0, 0, "--part %s is a %s part, and no %s kernel serves these problems", part, pt->name, pt->name);
  return -1;
}

int tn_tune(const char *dir, const char *const *shapes, int nshapes, const char *part, const char *targets, int runs) {
  tn_ctx t;
  memset(&t, 0, sizeof t);
  t.part = part;
  t.runs = runs;
  if (!nshapes) {
    diag_error(NULL, 0, 0, "tune needs at least one problem: --shape NAME=V,...");
    return HK_EUSAGE;
  }
  if (tn_part_ok(part) < 0) return HK_EUSAGE;
  for (int i = 0; i < nshapes; i++)
    if (bn_problem_parse(shapes[i], &t.pb[t.npb++]) < 0) return HK_EUSAGE;
  if (ie_catalogue_read(dir, &t.ks, &t.objs, &t.nk) < 0) return HK_EUSAGE;
  int max = 256, ng = 0, rc = HK_OK;
  tn_group *gs = xcalloc((size_t)max, sizeof *gs);
  for (int p = 0; p < t.npb && rc == HK_OK; p++) {
    int before = ng;
    if (tn_groups(&t, p, gs, &ng, max) < 0) rc = HK_EUSAGE;
    else if (ng == before) {
      char why[256] = "";
      long shape[OP_MAX_PARAMS];
      if (bn_shape(&t.ks[0], &t.pb[p], shape, why, sizeof why) == 0) tn_omitted(&t.ks[0], &t.pb[p], why, sizeof why);
      diag_error("--shape", 0, 0, "%s: no kernel of %s serves this problem (every run-time parameter must be given, "
                 "and every baked one that is not a tuning parameter; %s: %s)", shapes[p], dir, t.ks[0].name, why);
      rc = HK_EUSAGE;
    }
  }
  if (rc == HK_OK && tn_part_used(part, gs, ng) < 0) rc = HK_EUSAGE;
  if (rc == HK_OK) tn_open_gpu(&t, targets);
  for (int g = 0; g < ng && rc == HK_OK; g++)
    if (!targets || strstr(targets, gs[g].target)) {
      char why[256];
      if (!(gs[g].method = tn_method(&t, gs[g].target, &gs[g].part, why, sizeof why))) {
        diag_error(NULL, 0, 0, "problem %s: %s", shapes[gs[g].problem], why);
        rc = HK_EFAIL;
      }
    }
  if (rc == HK_OK && t.gpu && hkrt_catalog_open(t.gpu, dir, &t.cat) != HKRT_OK) {
    diag_error(NULL, 0, 0, "%s", hkrt_error());
    rc = HK_EFAIL;
  }
  int kept = 0;
  for (int g = 0; g < ng && rc == HK_OK; g++) {
    if (targets && !strstr(targets, gs[g].target)) continue;
    if (tn_run_group(&t, &gs[g]) < 0) {
      diag_error(NULL, 0, 0, "problem %s, %s on %s: no candidate could be %s", shapes[gs[g].problem], gs[g].op,
                 gs[g].target, gs[g].method);
      rc = HK_EFAIL;
    }
    gs[kept++] = gs[g];
  }
  if (rc == HK_OK && tn_write(dir, &t, gs, kept) < 0) rc = HK_EFAIL;
  if (rc == HK_OK) printf("hkgen tune: %d problem%s tuned into %s/manifest.json\n", kept, kept == 1 ? "" : "s", dir);
  hkrt_catalog_close(t.cat);
  if (t.gpu) hkrt_device_close(t.gpu);
  for (size_t i = 0; i < t.nk; i++) {
    op_inst_free(&t.ks[i]);
    free(t.objs[i]);
  }
  free(t.ks);
  free(t.objs);
  free(gs);
  return rc;
}
