/* choose.c: tuning parameters a spec leaves to hkgen, chosen at build time
   by the estimate (issue #16; docs/MODEL.md, "Tile choice"). A kernel
   qualifies when its target is an AMD one the estimate models, its op
   describes its work, every parameter is baked (the problem is the
   kernel's own) and the spec left out at least one tuning parameter with
   a list of allowed values (gemm's tile_m, tile_n). Each combination of
   those values that the op accepts is a candidate (fewer than two: no
   choice to make, the kernel is left as it is): compiled (through the
   cache), estimated on the target's largest part (or the one --part
   names), and the fastest replaces the target's default; the kernel is
   renamed for its values and
   k->choice records every candidate's time for the manifest ("choice")
   and hkgen explain. Kernels that do not qualify are left exactly as they
   were. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "compile.h"
#include "skel.h"
#include "estimate.h"
#include "spec.h"
#include "target.h"
#include "util.h"

/* The enum tuning parameters k left to hkgen, or 0 when k does not qualify. */
static int ch_params(const op_inst *k, int *idx, const char *parts) {
  const tgt_info *t = tgt_find(k->target);
  /* a part with the LDS figures the model needs (inspect --estimate's list) */
  if (!k->left || !t || !tgt_is_amd(t) || !t->rates || !t->nparts || !es_part_of(t, parts)->lds_bw || !k->op->work)
    return 0;
  int n = 0;
  for (int i = 0; i < k->op->nparams; i++) {
    if (!strcmp(k->vals[i], OP_ANY)) return 0;
    if (((k->left >> i) & 1) && k->op->params[i].type == OP_ENUM && n < 4) idx[n++] = i;
  }
  return n;
}

/* Candidate c of k (the odometer over the parameters' choices): -1 when
   the op refuses it or there is no such candidate. */
static int ch_candidate(const op_inst *k, const int *idx, int np, int c, op_inst *out, op_choice *ch) {
  int rest = c;
  *out = *k;
  out->plan = NULL;
  out->choice = NULL;
  for (int i = 0; i < k->op->nparams; i++) out->vals[i] = xstrdup(k->vals[i]);
  for (int j = 0; j < np; j++) {
    const char *const *ch_vals = k->op->params[idx[j]].choices;
    int nv = 0;
    while (ch_vals[nv]) nv++;
    free(out->vals[idx[j]]);
    out->vals[idx[j]] = xstrdup(ch_vals[rest % nv]);
    snprintf(ch->vals[ch->n][j], sizeof ch->vals[0][0], "%s", ch_vals[rest % nv]);
    rest /= nv;
  }
  char msg[256];
  if (out->op->check(out, msg, sizeof msg) < 0 || op_plan_resolve(out, msg, sizeof msg) < 0) {
    op_inst_free(out);
    return -1;
  }
  return 0;
}

/* The estimates of a built set of candidates, taken in turn by workers. */
typedef struct {
  op_inst *cands;
  int n;
  const char *dir;
  const tgt_part *part;
  op_choice *ch;
  atomic_int next;
} ch_pool;

static void ch_one(ch_pool *p, int i) {
  char *obj = xasprintf("%s/%s/%s.hsaco", p->dir, p->cands[i].target, p->cands[i].name);
  long shape[OP_MAX_PARAMS];
  es_launch l;
  es_result r;
  op_shape_baked(&p->cands[i], shape);
  if (!fs_exists(obj))
    snprintf(p->ch->err[i], sizeof p->ch->err[0], "does not build (spills, or more LDS than the target has)");
  else if (ie_kernel_estimate(obj, &p->cands[i], shape, p->part, &l, &r, p->ch->err[i], sizeof p->ch->err[0]) == 0)
    p->ch->us[i] = r.seconds * 1e6;
  free(obj);
}

static void *ch_worker(void *arg) {
  ch_pool *p = arg;
  for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) ch_one(p, i);
  return NULL;
}

/* Compiles the candidates together into a temporary catalogue (a
   candidate that spills or overflows LDS fails alone: the others' objects
   are written all the same) and estimates each there; us[i] < 0 with a
   message in err[i] where there is no figure. */
static void ch_estimate_all(op_inst *cands, int n, const tgt_part *part, int jobs, op_choice *ch) {
  char *dir = fs_tmp_template("hkgen-choose");
  if (!mkdtemp(dir)) {
    for (int i = 0; i < n; i++) snprintf(ch->err[i], sizeof ch->err[0], "no temporary folder: %s", strerror(errno));
    free(dir);
    return;
  }
  spec_set all = {.v = cands, .n = (size_t)n, .cap = (size_t)n};
  bd_options o = {.outdir = dir, .jobs = jobs, .use_cache = 1, .quiet = 1};
  int saved = diag_silence(1); /* a candidate that spills is not the spec's error */
  bd_build(&all, &o);
  diag_silence(saved);
  ch_pool p = {.cands = cands, .n = n, .dir = dir, .part = part, .ch = ch};
  atomic_init(&p.next, 0);
  pthread_t th[OP_MAX_CHOICES];
  int started = 0;
  if (n) ch_one(&p, atomic_fetch_add(&p.next, 1)); /* alone first: the tools are found (and cached) once */
  for (int w = 1; w < jobs && w < n; w++) /* the estimates wait on llvm-objdump: run them side by side */
    if (pthread_create(&th[started], NULL, ch_worker, &p) == 0) started++;
  ch_worker(&p);
  for (int w = 0; w < started; w++) pthread_join(th[w], NULL);
  fs_remove_tree(dir);
  free(dir);
}

/* hkgen explain: the candidate's object from the compile cache only; -1
   with "not compiled yet" when it is not there. */
static double ch_estimate_cached(op_inst *cand, const cc_compiler *cc, const tgt_part *part, char *msg, size_t n) {
  cc_cache cache;
  char *src = NULL, key[65];
  size_t len;
  double us = -1;
  if (skel_expand(skel_template_dir(), cand, &src, &len) < 0) {
    snprintf(msg, n, "its source could not be generated");
    free(src);
    return -1;
  }
  cc_cache_open(&cache, 1);
  cc_cache_key(cc, cand->target, src, len, key);
  free(src);
  if (!cc_cache_has(&cache, key)) {
    snprintf(msg, n, "not compiled yet");
    return -1;
  }
  char *obj = xasprintf("%s/%s.obj", cache.dir, key);
  long shape[OP_MAX_PARAMS];
  es_launch l;
  es_result r;
  op_shape_baked(cand, shape);
  if (ie_kernel_estimate(obj, cand, shape, part, &l, &r, msg, n) == 0) us = r.seconds * 1e6;
  free(obj);
  return us;
}

/* Chooses for one kernel (cached: from the compile cache only, and only
   when it holds every candidate); k is replaced by the winner. */
static void ch_kernel(op_inst *k, int jobs, int quiet, int cached, const char *parts) {
  int idx[4], np = ch_params(k, idx, parts);
  if (!np) return;
  op_choice *ch = xcalloc(1, sizeof *ch);
  const tgt_part *part = es_part_of(tgt_find(k->target), parts);
  ch->part = part->name;
  ch->nparams = np;
  memcpy(ch->params, idx, sizeof idx);
  ch->winner = -1;
  op_inst best;
  memset(&best, 0, sizeof best);
  int total = 1, missing = 0;
  for (int j = 0; j < np; j++) {
    int nv = 0;
    while (k->op->params[idx[j]].choices[nv]) nv++;
    total *= nv;
  }
  op_inst cands[OP_MAX_CHOICES];
  for (int c = 0; c < total && ch->n < OP_MAX_CHOICES; c++) {
    if (ch_candidate(k, idx, np, c, &cands[ch->n], ch) < 0) continue;
    /* a trial name of its own, so that the candidates build side by side */
    snprintf(cands[ch->n].name, sizeof cands[0].name, "%.80s_hkc%d", k->name, c);
    ch->us[ch->n++] = -1;
  }
  if (ch->n < 2) { /* one value the op accepts (promote on AMD): nothing to choose */
    for (int c = 0; c < ch->n; c++) op_inst_free(&cands[c]);
    free(ch);
    return;
  }
  cc_compiler cc;
  char why[256];
  if (cached && cc_resolve(k->target, &cc, why, sizeof why) < 0) {
    for (int c = 0; c < ch->n; c++) snprintf(ch->err[c], sizeof ch->err[0], "not compiled yet");
    missing = ch->n;
  } else if (cached) {
    for (int c = 0; c < ch->n; c++) {
      ch->us[c] = ch_estimate_cached(&cands[c], &cc, part, ch->err[c], sizeof ch->err[0]);
      missing += ch->us[c] < 0 && !strcmp(ch->err[c], "not compiled yet");
    }
  } else {
    ch_estimate_all(cands, ch->n, part, jobs, ch);
  }
  for (int c = 0; c < ch->n; c++)
    if (ch->us[c] >= 0 && (ch->winner < 0 || ch->us[c] < ch->us[ch->winner])) ch->winner = c;
  if (ch->winner >= 0) { /* the winner under its own name */
    best = cands[ch->winner];
    memset(&cands[ch->winner], 0, sizeof cands[0]);
    spec_name(&best);
  }
  for (int c = 0; c < ch->n; c++) op_inst_free(&cands[c]);
  if (missing) { /* explain before a build: no choice to show yet */
    ch->winner = -1;
    op_inst_free(&best);
  }
  if (ch->winner >= 0) {
    op_inst_free(k);
    *k = best;
  }
  k->choice = ch;
  if (!quiet && ch->winner >= 0)
    diag_note("hkgen: %s (%s): tuning chosen by the estimate on %s: %.1f us, the fastest of %d candidates\n",
              k->name, k->target, ch->part, ch->us[ch->winner], ch->n);
}

void bd_choose(spec_set *set, int jobs, int quiet, const char *parts) {
  for (size_t i = 0; i < set->n; i++) ch_kernel(&set->v[i], jobs, quiet, 0, parts);
}

void bd_choose_cached(spec_set *set, const char *parts) {
  for (size_t i = 0; i < set->n; i++) ch_kernel(&set->v[i], 1, 1, 1, parts);
}
