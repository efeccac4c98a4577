/* explain.c: `hkgen explain SPEC`: before anything compiles, which kernel
   serves each problem the spec derives, per target (natively, or not at all
   and why), whether its object is already cached, and an estimate of the
   build time; for a cached AMD kernel with every parameter baked, its
   estimated time on its target's fastest part (estimate.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "estimate.h"
#include "skel.h"
#include "spec.h"
#include "target.h"
#include "util.h"

int cmd_explain_set(const spec_set *set, int jobs);

/* Seconds one compile takes on one core, measured on the 2-core Debian 12
   machines of this project (2026-11-29): the catalogue of specs/ built in
   33 s for 72 GEMM and RoPE kernels; attention kernels take longer. */
static double ex_seconds(const op_inst *k) { return !strncmp(k->op->name, "attn_", 5) ? 3.0 : 0.9; }

/* Why k cannot be built here, or NULL. */
static const char *ex_blocker(const op_inst *k, const cc_compiler *cc, int have_cc, char *why, size_t n) {
  const char *tpl = skel_template_dir();
  char *skel = skel_skeleton_for(tpl, k);
  char *path = fs_join(tpl, skel);
  const tgt_info *t = tgt_find(k->target);
  char *hdr = xasprintf("%s/include/%s", tpl, t->header);
  const char *r = NULL;
  if (!fs_exists(path)) {
    snprintf(why, n, "no skeleton %s", skel);
    r = why;
  } else if (!fs_exists(hdr)) {
    snprintf(why, n, "no tile header %s for %s", t->header, t->arch);
    r = why;
  } else if (!have_cc) {
    r = why; /* cc_resolve's message */
  }
  (void)cc;
  free(skel);
  free(path);
  free(hdr);
  return r;
}

/* One estimate line for a cached AMD kernel whose every parameter is baked
   (the problem is the kernel's own); nothing otherwise. */
static void ex_estimate(const op_inst *k, const cc_cache *cache, const char *key) {
  const tgt_info *t = tgt_find(k->target);
  if (!tgt_is_amd(t) || !t->rates || !k->op->work || !k->plan || !t->nparts) return;
  for (int i = 0; i < k->op->nparams; i++)
    if (!strcmp(k->vals[i], OP_ANY)) return;
  char *obj, *meta, msg[512], line[128];
  size_t len;
  if (cc_cache_get(cache, key, &obj, &len, &meta) < 0) return; /* verifies the entry's checksum */
  free(obj);
  free(meta);
  const tgt_part *part = tgt_largest_part(t);
  long shape[OP_MAX_PARAMS];
  op_shape_baked(k, shape);
  char *path = xasprintf("%s/%s.obj", cache->dir, key);
  es_launch l;
  es_result r;
  if (ie_kernel_estimate(path, k, shape, part, &l, &r, msg, sizeof msg) == 0) {
    es_format(&r, line, sizeof line);
    printf("  estimate on %s: %s\n", part->name, line);
  }
  free(path);
}

/* Candidates of a build-time choice the build still has to compile. */
static int ex_choice_pending(const op_inst *k) {
  int missing = 0;
  for (int c = 0; k->choice && c < k->choice->n; c++)
    missing += k->choice->us[c] < 0 && !strcmp(k->choice->err[c], "not compiled yet");
  return missing;
}

/* The build-time choice of the tuning parameters the spec left to hkgen
   (choose.c): the values taken and each candidate's estimated time, or
   that the build will choose (candidates not compiled yet). */
static void ex_choice(const op_inst *k) {
  const op_choice *ch = k->choice;
  int missing = ex_choice_pending(k);
  if (!ch) return;
  if (missing) {
    printf("  tuning left to hkgen: the build chooses by the estimate on %s among %d candidates (%d not "
           "compiled yet)\n", ch->part, ch->n, missing);
    return;
  }
  if (ch->winner < 0) {
    printf("  tuning left to hkgen: no candidate could be estimated; the target's default stays\n");
    return;
  }
  printf("  tuning chosen by the estimate on %s:", ch->part);
  for (int j = 0; j < ch->nparams; j++) printf(" %s=%s", k->op->params[ch->params[j]].name, ch->vals[ch->winner][j]);
  printf(" (%.1f us); candidates:", ch->us[ch->winner]);
  for (int c = 0; c < ch->n; c++) {
    printf(" ");
    for (int j = 0; j < ch->nparams; j++) printf("%s%s", j ? "x" : "", ch->vals[c][j]);
    if (ch->us[c] >= 0) printf(" %.1f", ch->us[c]);
    else printf(" -");
  }
  printf(" us\n");
}

/* The scratch a launch of k needs (its launch rules on workspace_bytes and
   counters_len, attn_decode's and sm_90a attn_bwd's): the formula, and its
   value when every dimension is baked. */
static void ex_scratch(const op_inst *k) {
  static const char *const sizes[] = {"workspace_bytes >= ", "counters_len >= "};
  for (int i = 0; k->plan && i < k->plan->nchecks; i++)
    for (int j = 0; j < 2; j++) {
      const char *rule = k->plan->checks[i].rule;
      size_t len = strlen(sizes[j]);
      if (strncmp(rule, sizes[j], len)) continue;
      long shape[OP_MAX_PARAMS], v;
      int baked = 1;
      for (int p = 0; p < k->op->nparams; p++)
        if (!strcmp(k->vals[p], OP_ANY) && strstr(rule, k->op->params[p].name)) baked = 0;
      op_shape_baked(k, shape);
      printf("  scratch: %s", rule);
      if (baked && op_eval(k, shape, rule + len, &v) == 0) printf(" (%ld%s)", v, j ? " counters" : " bytes");
      printf("\n");
    }
}

static void ex_params(const op_inst *k, int runtime, char *out, size_t n) {
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < k->op->nparams; i++) {
    int any = !strcmp(k->vals[i], OP_ANY);
    /* dtype only where it is not the usual bf16 (gemm's fp8); features at
       their default (as in the kernel name) */
    if (any != runtime || (!strcmp(k->op->params[i].name, "dtype") && !strcmp(k->vals[i], "bf16")) ||
        op_feature_off(k, i))
      continue;
    int w = runtime ? snprintf(out + used, n - used, "%s%s", used ? "," : "", k->op->params[i].name)
                    : snprintf(out + used, n - used, "%s%s=%s", used ? " " : "", k->op->params[i].name, k->vals[i]);
    if (w < 0 || (size_t)w >= n - used) break;
    used += (size_t)w;
  }
  if (!used) snprintf(out, n, "-");
}

int cmd_explain_set(const spec_set *set, int jobs) {
  if (!skel_template_dir()) return 1;
  cc_cache cache;
  cc_cache_open(&cache, 1);
  size_t cached = 0, todo = 0, blocked = 0;
  double work = 0;
  printf("%-30s %-7s %-9s %-44s %-28s %s\n", "kernel", "target", "op", "baked", "run-time", "served");
  for (size_t i = 0; i < set->n; i++) {
    const op_inst *k = &set->v[i];
    cc_compiler cc;
    char why[512] = "", baked[256], rt[128];
    int have_cc = cc_resolve(k->target, &cc, why, sizeof why) == 0;
    const char *blocker = ex_blocker(k, &cc, have_cc, why, sizeof why);
    ex_params(k, 0, baked, sizeof baked);
    ex_params(k, 1, rt, sizeof rt);
    const char *status = "natively";
    char key[65] = "";
    if (blocker) {
      status = "not at all";
      blocked++;
    } else {
      char *src = NULL;
      size_t len;
      int quiet = skel_expand(skel_template_dir(), k, &src, &len) == 0;
      if (quiet) {
        cc_cache_key(&cc, k->target, src, len, key);
        if (cc_cache_has(&cache, key)) {
          cached++;
          status = "natively (cached)";
        } else {
          todo++;
          work += ex_seconds(k);
        }
      }
      free(src);
    }
    printf("%-30s %-7s %-9s %-44s %-28s %s%s%s\n", k->name, k->target, k->op->name, baked, rt, status,
           blocker ? ": " : "", blocker ? blocker : "");
    ex_choice(k);
    work += ex_choice_pending(k) * ex_seconds(k);
    if (key[0] && !strcmp(status, "natively (cached)")) ex_estimate(k, &cache, key);
    ex_scratch(k);
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int j = jobs > 0 ? jobs : (int)(cores > 0 ? cores : 1);
  printf("%zu kernels: %zu to compile, %zu cached, %zu cannot be built here; "
         "estimated build time %.0f s with -j %d\n",
         set->n, todo, cached, blocked, work / j + (double)cached * 0.02, j);
  return blocked ? HK_EFAIL : HK_OK;
}
