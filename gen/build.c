/* build.c: the build pipeline. Kernels are expanded and compiled in parallel;
   every file is written atomically, and the manifest is written last, so a
   failed or interrupted build never leaves a manifest that points at a
   missing or partial file. */
#define _GNU_SOURCE
#include "build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "estimate.h"
#include "hotloop.h"
#include "json.h"
#include "sha256.h"
#include "skel.h"
#include "target.h"
#include "util.h"

#ifndef HK_VERSION
#define HK_VERSION "0.1.0"
#endif

typedef struct {
  op_inst *k;
  char *src;
  size_t srclen;
  char *src_rel, *obj_rel; /* paths inside the catalogue */
  char obj_sha[65], src_sha[65];
  cc_compiler cc;
  cg_kernel_meta meta;
  int cached, ok;
  char *cost;            /* AMD: the estimate's formula (bd_cost); sm_90a: the plan's */
  const char *cost_part; /* the part it is for */
} bd_item;

typedef struct {
  const bd_options *o;
  bd_item *items;
  size_t n;
  atomic_size_t next, done, compiled;
  const char *tpldir;
  cc_cache cache;
  int tty;
  double t0;
  pthread_mutex_t progress_lock;
  cc_compiler gpu_cc[8]; /* --emulate with costs: each target's GPU compiler (gpu_have 1), for bd_cost */
  int gpu_have[8];
  atomic_int cost_warned;
} bd_ctx;

static double bd_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The code object's .vgpr_count already holds VGPRs and AGPRs (the VGPRs
   rounded up to 4, then the AGPRs): adding .agpr_count again would count
   the AGPRs twice. The rule itself is the target table's. */
int bd_waves_per_simd(const char *target, const cg_kernel_meta *m, int block) {
  const tgt_info *t = tgt_find(target);
  if (!t) return 0;
  int regs = tgt_is_amd(t) && m->agpr > m->vgpr ? m->agpr : m->vgpr;
  return tgt_occupancy(t, regs, m->lds, block);
}

/* --json: one object per line on stdout, for tools. */
static void bd_json_event(bd_ctx *c, const bd_item *it, size_t done) {
  hk_buf b;
  buf_init(&b);
  buf_puts(&b, "{\"event\": \"kernel\", \"name\": ");
  jw_escape(&b, it->k->name);
  buf_printf(&b, ", \"target\": \"%s\", \"status\": \"%s\", \"done\": %zu, \"total\": %zu}\n",
             it->k->target, !it->ok ? "failed" : c->o->sources_only ? "generated" : it->cached ? "cached" : "compiled",
             done, c->n);
  pthread_mutex_lock(&c->progress_lock);
  fputs(b.s, stdout);
  fflush(stdout);
  pthread_mutex_unlock(&c->progress_lock);
  buf_free(&b);
}

static void bd_progress(bd_ctx *c, const bd_item *it) {
  size_t done = atomic_fetch_add(&c->done, 1) + 1;
  if (c->o->json) bd_json_event(c, it, done);
  if (!c->tty || c->o->quiet || c->o->json) return;
  double el = bd_now() - c->t0, rate = el > 0 ? (double)done / el : 0;
  double eta = rate > 0 ? (double)(c->n - done) / rate : 0;
  pthread_mutex_lock(&c->progress_lock);
  fprintf(stderr, "\r\033[K[%zu/%zu] %.1f/s ETA %.0fs  %s %s%s", done, c->n, rate, eta,
          it->k->target, it->k->name, it->cached ? " (cached)" : "");
  pthread_mutex_unlock(&c->progress_lock);
}

/* Sources and objects: atomic, not synced one by one (bd_manifest syncs the
   folder once before the manifest that refers to them). */
static int bd_write(const char *outdir, const char *rel, const char *data, size_t len) {
  char *path = fs_join(outdir, rel);
  char *dir = fs_dirname(path);
  int rc = fs_mkdirs(dir) == 0 ? fs_write_file(path, data, len, 0) : -1;
  if (rc < 0) diag_error(path, 0, 0, "cannot write: %s", strerror(errno));
  free(dir);
  free(path);
  return rc;
}

/* A kernel that cannot keep one workgroup resident (0 waves per SIMD, or 0
   warps per SM) can never launch: an error with the figures that decide it. */
static int bd_occupancy(const bd_item *it) {
  const cg_kernel_meta *m = &it->meta;
  cg_kernel_meta occ = *m; /* occupancy counts static + dynamic LDS */
  occ.lds += it->k->plan->dynamic_lds;
  int block = it->k->plan->block;
  int w = bd_waves_per_simd(it->k->target, &occ, block);
  if (w > 0) return w;
  int amd = tgt_is_amd(tgt_find(it->k->target));
  diag_error(it->k->file, it->k->line, it->k->col,
             "kernel %s for %s fits 0 %s (%d VGPR%s, %d AGPR, %d bytes of LDS, %d threads per "
             "workgroup): it could never launch",
             it->k->name, it->k->target, amd ? "waves per SIMD" : "warps per SM",
             m->vgpr, amd ? " incl. AGPRs" : "", m->agpr, occ.lds, block);
  return 0;
}

int bd_check_kernargs(const op_inst *k, const cg_kernel_meta *m, char *msg, size_t n) {
  int plan = k->plan->args_size;
  if (m->args_size == plan) return 0;
  if (m->args_size < 0)
    snprintf(msg, n, "kernel %s for %s: the compiled object does not give its kernel arguments' size (the plan "
             "has %d bytes)", k->name, k->target, plan);
  else
    snprintf(msg, n, "kernel %s for %s: the compiler laid out %d bytes of kernel arguments, the plan %d: "
             "libhkrt would pack them wrongly", k->name, k->target, m->args_size, plan);
  return -1;
}

/* Spills, LDS beyond the target's limit, serialised wgmma and an ignored
   setmaxnreg fail the build, saying by how much or why. */
static int bd_check_resources(const bd_item *it) {
  const cg_kernel_meta *m = &it->meta;
  const tgt_info *t = tgt_find(it->k->target);
  int ok = 1;
  if (m->vgpr_spill || m->sgpr_spill) {
    diag_error(it->k->file, it->k->line, it->k->col,
               "kernel %s for %s spills %d VGPRs and %d SGPRs to scratch (%d bytes of scratch)",
               it->k->name, it->k->target, m->vgpr_spill, m->sgpr_spill, m->scratch);
    ok = 0;
  }
  if (m->mma_serialized) {
    diag_error(it->k->file, it->k->line, it->k->col,
               "kernel %s for %s: ptxas serialises its wgmma instructions (C7520: a branch around the "
               "products, or accumulators touched in a divergent path); the template must keep them out of "
               "branches", it->k->name, it->k->target);
    ok = 0;
  }
  if (m->maxnreg_ignored) {
    diag_error(it->k->file, it->k->line, it->k->col,
               "kernel %s for %s: ptxas ignores its setmaxnreg (C7508: no register count known at entry); the "
               "template must set HK_BLOCKS_PER_SM", it->k->name, it->k->target);
    ok = 0;
  }
  unsigned dyn = (unsigned)it->k->plan->dynamic_lds, lds = (unsigned)m->lds + dyn;
  if (lds > t->lds_bytes) {
    diag_error(it->k->file, it->k->line, it->k->col,
               "kernel %s for %s uses %u bytes of LDS (%d static + %u dynamic), %u over the %s limit of %u",
               it->k->name, it->k->target, lds, m->lds, dyn, lds - t->lds_bytes, t->name,
               t->lds_bytes);
    ok = 0;
  }
  char msg[400];
  if (bd_check_kernargs(it->k, m, msg, sizeof msg) < 0) {
    diag_error(it->k->file, it->k->line, it->k->col, "%s", msg);
    ok = 0;
  }
  if (ok && bd_occupancy(it) == 0) ok = 0;
  return ok ? 0 : -1;
}

/* "ptxas info : Used 40 registers, ... 16384 bytes smem" and "N bytes stack
   frame, N bytes spill stores" from nvcc -Xptxas -v, for the one kernel. */
static int bd_nv_meta(const char *text, const char *name, cg_kernel_meta *m) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  const char *regs = text ? strstr(text, "Used ") : NULL;
  if (!regs) return -1;
  m->vgpr = atoi(regs + 5);
  const char *smem = strstr(regs, " bytes smem");
  if (smem) {
    while (smem > regs && smem[-1] >= '0' && smem[-1] <= '9') smem--;
    m->lds = atoi(smem);
  }
  const char *frame = strstr(text, "bytes stack frame");
  const char *spill = strstr(text, "bytes spill stores");
  if (frame) {
    while (frame > text && (frame[-1] == ' ' || (frame[-1] >= '0' && frame[-1] <= '9'))) frame--;
    m->scratch = atoi(frame);
  }
  if (spill) {
    while (spill > text && (spill[-1] == ' ' || (spill[-1] >= '0' && spill[-1] <= '9'))) spill--;
    m->vgpr_spill = (atoi(spill) + 3) / 4; /* bytes -> 32-bit registers */
  }
  /* ptxas C7520: wgmma instructions serialised (an accumulator's registers
     touched in a divergent path); the kernel runs, at a fraction of its speed */
  m->mma_serialized = strstr(text, "C7520") || strstr(text, "wgmma.mma_async instructions are serialized");
  /* ptxas C7508: setmaxnreg ignored (no register count known at entry: the
     kernel has no minimum of blocks per SM), so every warp keeps the launch
     allocation and the consumers' larger share never comes */
  m->maxnreg_ignored = strstr(text, "C7508") != NULL;
  m->wave_size = 32;
  return 0;
}

/* The figures of an AMD object, kept beside it in the cache so that a
   rebuild need not parse the object's metadata again. */
static void bd_res_text(const cg_kernel_meta *m, char *out, size_t n) {
  snprintf(out, n, "hkres %d %d %d %d %d %d %d %d %d %d %d %s\n", m->vgpr, m->agpr, m->sgpr,
           m->vgpr_spill, m->sgpr_spill, m->lds, m->scratch, m->kernarg_size, m->max_wg_size,
           m->wave_size, m->args_size, m->name);
}

static int bd_res_parse(const char *text, cg_kernel_meta *m) {
  memset(m, 0, sizeof *m);
  /* an older entry (11 figures, no args_size) fails: the object is read again */
  return text && sscanf(text, "hkres %d %d %d %d %d %d %d %d %d %d %d %127s", &m->vgpr, &m->agpr,
                        &m->sgpr, &m->vgpr_spill, &m->sgpr_spill, &m->lds, &m->scratch,
                        &m->kernarg_size, &m->max_wg_size, &m->wave_size, &m->args_size, m->name) == 12
             ? 0
             : -1;
}

/* Resource figures: from the AMD code object's metadata, or nvcc's report. */
static int bd_meta(const bd_item *it, const char *obj, size_t objlen, const char *meta,
                   cg_kernel_meta *out) {
  if (!tgt_is_amd(tgt_find(it->k->target))) {
    if (bd_nv_meta(meta, it->k->name, out) < 0) return -1;
    out->args_size = cc_cubin_param_size(obj, objlen, it->k->name);
    return 0;
  }
  if (bd_res_parse(meta, out) == 0 && !strcmp(out->name, it->k->name)) return 0;
  cg_kernel_meta metas[4];
  int nm = cg_read_meta(obj, objlen, metas, 4);
  if (nm != 1 || strcmp(metas[0].name, it->k->name)) return -1;
  *out = metas[0];
  return 0;
}

/* Why a kernel has no cost formula: said once a build (a build without
   llvm-objdump would say it for every kernel). */
static void bd_cost_warn(bd_ctx *c, const bd_item *it, const char *why) {
  if (atomic_exchange(&c->cost_warned, 1)) return;
  diag_warn(it->k->file, it->k->line, it->k->col, "kernel %s for %s has no cost formula (hkrt_select takes the "
            "first fitting kernel among those without one): %s", it->k->name, it->k->target, why);
}

/* Whether it gets the estimate's cost formula: an AMD target the estimate
   models, an op that gives its work as formulas, and no cost in its plan. */
static int bd_wants_cost(const bd_ctx *c, const bd_item *it) {
  const tgt_info *t = tgt_find(it->k->target);
  return c->o->costs && !c->o->sources_only && tgt_is_amd(t) && t->rates && it->k->op->work_formula &&
         !it->k->plan->cost[0] && es_part_of(t, c->o->parts)->lds_bw;
}

/* The cost formula of it from its GPU code object at objpath, whose
   resources are m (es_cost_formula on the part es_part_of names). */
static void bd_cost(bd_ctx *c, bd_item *it, const char *objpath, const cg_kernel_meta *m) {
  const op_inst *k = it->k;
  const tgt_info *t = tgt_find(k->target);
  const tgt_part *part = es_part_of(t, c->o->parts);
  char mma[OP_FORMULA], bytes[OP_FORMULA], blocks[3 * OP_FORMULA + 16] = "", msg[512], out[4096];
  mma[0] = bytes[0] = 0;
  k->op->work_formula(k, mma, bytes);
  if (!bytes[0]) { /* the op has no closed form for this kernel's features */
    bd_cost_warn(c, it, "its op gives no work formula for its features");
    return;
  }
  for (int a = 0; a < 3; a++) /* the grid's workgroups: the axes' product */
    if (strcmp(k->plan->grid[a], "1"))
      snprintf(blocks + strlen(blocks), sizeof blocks - strlen(blocks), "%s(%s)", blocks[0] ? "*" : "",
               k->plan->grid[a]);
  if (!blocks[0]) snprintf(blocks, sizeof blocks, "1");
  cg_kernel_meta occ = *m;
  occ.lds += k->plan->dynamic_lds;
  es_launch l = {t, part, k->name, k->plan->block, bd_waves_per_simd(k->target, &occ, k->plan->block), 1,
                 {0, 0, 0, 0}};
  hk_buf dis;
  buf_init(&dis);
  if (hl_disassemble(objpath, k->target, &dis) < 0)
    bd_cost_warn(c, it, hl_objdump() ? "llvm-objdump failed on its code object"
                                     : "no llvm-objdump for amdgcn (install llvm-22, or set HKGEN_OBJDUMP)");
  else if (es_cost_formula(dis.s, &l, blocks, mma, bytes, out, sizeof out, msg, sizeof msg) < 0)
    ; /* a loop the compiler unrolled whole (a small baked problem): no formula, as the model has none */
  else {
    it->cost = xstrdup(out);
    it->cost_part = part->name;
  }
  buf_free(&dis);
}

/* --emulate: the cost comes from the GPU code object, compiled (through the
   cache) into a temporary folder beside the emulated one. */
static void bd_cost_emulated(bd_ctx *c, bd_item *it) {
  size_t nt, ti = 0;
  const tgt_info *ts = tgt_all(&nt);
  while (ti < nt && strcmp(ts[ti].name, it->k->target)) ti++;
  if (ti >= nt || c->gpu_have[ti] != 1) {
    bd_cost_warn(c, it, "no compiler for its GPU code object, which the cost formula is read from");
    return;
  }
  const cc_compiler *cc = &c->gpu_cc[ti];
  char key[65], *obj = NULL, *meta = NULL, *log = NULL;
  size_t objlen = 0;
  cc_cache_key(cc, it->k->target, it->src, it->srclen, key);
  if (cc_cache_get(&c->cache, key, &obj, &objlen, &meta) < 0) {
    if (cc_compile(cc, it->k->target, it->src, it->srclen, &obj, &objlen, &meta, &log) < 0) {
      bd_cost_warn(c, it, "its GPU code object did not compile");
      free(log);
      return;
    }
    cc_cache_put(&c->cache, key, obj, objlen, meta);
  }
  cg_kernel_meta m;
  char *dir = fs_tmp_template("hkgen-cost");
  if (bd_meta(it, obj, objlen, meta, &m) < 0) bd_cost_warn(c, it, "its GPU code object's resources are unreadable");
  else if (!mkdtemp(dir)) bd_cost_warn(c, it, "no temporary folder");
  else {
    char *path = fs_join(dir, "k.hsaco");
    if (fs_write_file(path, obj, objlen, 0) == 0) bd_cost(c, it, path, &m);
    else bd_cost_warn(c, it, "its GPU code object could not be written to a temporary folder");
    fs_remove_tree(dir);
    free(path);
  }
  free(dir);
  free(obj);
  free(meta);
}

static int bd_object(bd_ctx *c, bd_item *it) {
  char key[65], *obj = NULL, *log = NULL, *meta = NULL;
  size_t objlen = 0;
  cc_cache_key(&it->cc, it->k->target, it->src, it->srclen, key);
  if (cc_cache_get(&c->cache, key, &obj, &objlen, &meta) == 0) {
    it->cached = 1;
  } else if (cc_compile(&it->cc, it->k->target, it->src, it->srclen, &obj, &objlen, &meta, &log) < 0) {
    diag_error(it->k->file, it->k->line, it->k->col, "compiling %s for %s failed:\n%s",
               it->k->name, it->k->target, log ? log : "(no log)");
    free(log);
    return -1;
  } else {
    atomic_fetch_add(&c->compiled, 1);
    cc_cache_put(&c->cache, key, obj, objlen, meta);
  }
  int rc = -1;
  if (c->o->emulate) { /* host objects carry no GPU resources to check */
    sha256_hex(obj, objlen, it->obj_sha);
    rc = bd_write(c->o->outdir, it->obj_rel, obj, objlen);
    if (rc == 0 && bd_wants_cost(c, it)) bd_cost_emulated(c, it);
  } else if (bd_meta(it, obj, objlen, meta, &it->meta) < 0) {
    diag_error(it->k->file, it->k->line, it->k->col,
               "code object of %s for %s: cannot read its resource usage", it->k->name,
               it->k->target);
  } else {
    if (!meta && tgt_is_amd(tgt_find(it->k->target))) {
      char res[256];
      bd_res_text(&it->meta, res, sizeof res);
      cc_cache_put_text(&c->cache, key, ".meta", res, strlen(res));
    }
    sha256_hex(obj, objlen, it->obj_sha);
    if (bd_check_resources(it) == 0 && bd_write(c->o->outdir, it->obj_rel, obj, objlen) == 0)
      rc = 0;
    if (rc == 0 && bd_wants_cost(c, it)) {
      char *path = fs_join(c->o->outdir, it->obj_rel);
      bd_cost(c, it, path, &it->meta);
      free(path);
    }
  }
  free(obj);
  free(meta);
  return rc;
}

/* The generated source: from the cache when the same prologue and templates
   made it before (no m4 run), else from m4. */
static int bd_source(bd_ctx *c, bd_item *it) {
  char gkey[65];
  if (c->cache.enabled) {
    skel_gen_key(c->tpldir, it->k, gkey);
    if (cc_cache_get_text(&c->cache, gkey, ".src", &it->src, &it->srclen) == 0) return 0;
  }
  if (skel_expand(c->tpldir, it->k, &it->src, &it->srclen) < 0) return -1;
  if (c->cache.enabled) cc_cache_put_text(&c->cache, gkey, ".src", it->src, it->srclen);
  return 0;
}

static void bd_one(bd_ctx *c, bd_item *it) {
  if (bd_source(c, it) < 0) return;
  sha256_hex(it->src, it->srclen, it->src_sha);
  if (bd_write(c->o->outdir, it->src_rel, it->src, it->srclen) < 0) return;
  if (!c->o->sources_only && bd_object(c, it) < 0) return;
  it->ok = 1;
}

static void *bd_worker(void *arg) {
  bd_ctx *c = arg;
  for (;;) {
    size_t i = atomic_fetch_add(&c->next, 1);
    if (i >= c->n) break;
    bd_one(c, &c->items[i]);
    bd_progress(c, &c->items[i]);
  }
  return NULL;
}

/* A tensor-map argument's recipe, for the runtime (hkrt_pack_tmaps). */
static void bd_tmap_json(jw_t *w, const op_tmap *t) {
  jw_key(w, "tmap");
  jw_begin_obj(w);
  jw_kstr(w, "tensor", t->tensor);
  jw_key(w, "dims");
  jw_begin_arr(w);
  for (int i = 0; i < t->rank; i++) jw_str(w, t->dims[i]);
  jw_end_arr(w);
  jw_key(w, "strides");
  jw_begin_arr(w);
  for (int i = 0; i + 1 < t->rank; i++) jw_str(w, t->strides[i]);
  jw_end_arr(w);
  jw_key(w, "box");
  jw_begin_arr(w);
  for (int i = 0; i < t->rank; i++) jw_int(w, t->box[i]);
  jw_end_arr(w);
  jw_kint(w, "swizzle", t->swizzle);
  jw_end_obj(w);
}

/* Baked values, and the names of the run-time ones. */
static void bd_json_params(jw_t *w, const op_inst *k) {
  jw_key(w, "params");
  w->inline_depth = w->depth + 1;
  jw_begin_obj(w);
  for (int i = 0; i < k->op->nparams; i++)
    if (strcmp(k->vals[i], OP_ANY)) jw_kstr(w, k->op->params[i].name, k->vals[i]);
  jw_end_obj(w);
  jw_key(w, "runtime_params");
  jw_begin_arr(w);
  for (int i = 0; i < k->op->nparams; i++)
    if (!strcmp(k->vals[i], OP_ANY)) jw_str(w, k->op->params[i].name);
  jw_end_arr(w);
  w->inline_depth = 1000;
}

/* What selection needs to know of the op (libhkrt knows no op): the
   parameters a problem may leave out because they only tune, and those it
   may leave out because they allow one value only (dtype while it has one
   choice) or switch a feature on (at its default: off), which a problem
   that leaves them out means. Any other omission
   is ambiguous (layout, causal) and selection refuses it. */
static void bd_json_selection(jw_t *w, const op_inst *k) {
  w->inline_depth = w->depth + 1;
  jw_key(w, "tuning");
  jw_begin_arr(w);
  for (int i = 0; k->op->tuning && k->op->tuning[i]; i++) jw_str(w, k->op->tuning[i]);
  jw_end_arr(w);
  jw_key(w, "defaults");
  jw_begin_obj(w);
  for (int i = 0; i < k->op->nparams; i++) {
    const op_param *p = &k->op->params[i];
    int one_choice = p->type == OP_ENUM && p->choices[0] && !p->choices[1];
    if ((one_choice || op_is_feature(k->op, p->name) || op_is_omissible(k->op, p->name)) &&
        !op_is_tuning(k->op, p->name))
      jw_kstr(w, p->name, p->def);
  }
  jw_end_obj(w);
  w->inline_depth = 1000;
}

static void bd_json_resources(jw_t *w, const bd_item *it) {
  const op_inst *k = it->k;
  jw_key(w, "resources");
  w->inline_depth = w->depth + 1;
  jw_begin_obj(w);
  jw_kint(w, "vgpr", it->meta.vgpr);
  jw_kint(w, "agpr", it->meta.agpr);
  jw_kint(w, "sgpr", it->meta.sgpr);
  jw_kint(w, "lds", it->meta.lds);
  jw_kint(w, "scratch", it->meta.scratch);
  jw_kint(w, "vgpr_spill", it->meta.vgpr_spill);
  jw_kint(w, "sgpr_spill", it->meta.sgpr_spill);
  cg_kernel_meta occ = it->meta; /* occupancy counts static + dynamic LDS */
  occ.lds += k->plan->dynamic_lds;
  jw_kint(w, tgt_is_amd(tgt_find(k->target)) ? "waves_per_simd" : "warps_per_sm",
          bd_waves_per_simd(k->target, &occ, k->plan->block));
  jw_end_obj(w);
  w->inline_depth = 1000;
}

static void bd_json_kernarg(jw_t *w, const op_plan *p) {
  jw_key(w, "kernarg");
  jw_begin_obj(w);
  jw_kint(w, "size", p->args_size);
  jw_key(w, "args");
  jw_begin_arr(w);
  w->inline_depth = w->depth + 1;
  for (int i = 0; i < p->nargs; i++) {
    const op_arg *a = &p->args[i];
    jw_begin_obj(w);
    jw_kstr(w, "name", a->name);
    jw_kstr(w, "type", a->ctype);
    jw_kint(w, "offset", a->offset);
    jw_kint(w, "size", a->size);
    if (a->ptr_align) jw_kint(w, "align", a->ptr_align);
    if (a->tmap.tensor[0]) bd_tmap_json(w, &a->tmap);
    jw_end_obj(w);
  }
  w->inline_depth = 1000;
  jw_end_arr(w);
  jw_end_obj(w);
}

/* The launch: block, dynamic LDS, grid formulas and the target's grid
   limits, the descriptor's tunables (for the record) and the launch rules
   libhkrt checks. */
static void bd_json_launch(jw_t *w, const op_plan *p, const tgt_info *t, const bd_item *it) {
  jw_key(w, "block");
  w->inline_depth = w->depth + 1;
  jw_begin_arr(w);
  jw_int(w, p->block);
  jw_int(w, 1);
  jw_int(w, 1);
  jw_end_arr(w);
  jw_kint(w, "dynamic_lds", p->dynamic_lds);
  jw_key(w, "grid");
  jw_begin_arr(w);
  for (int i = 0; i < 3; i++) jw_str(w, p->grid[i]);
  jw_end_arr(w);
  jw_key(w, "grid_max"); /* the target's launch limits, in blocks */
  jw_begin_arr(w);
  for (int i = 0; i < 3; i++) jw_int(w, tgt_grid_max(t, i, p->block));
  jw_end_arr(w);
  jw_key(w, "tunables");
  jw_begin_obj(w);
  for (int i = 0; i < p->ntun; i++) jw_kint(w, p->tun[i].name, p->tun[i].value);
  jw_end_obj(w);
  w->inline_depth = 1000;
  if (p->cost[0]) jw_kstr(w, "cost", p->cost);
  if (it->cost) { /* the estimate's formula (bd_cost): picoseconds on cost_part */
    jw_kstr(w, "cost", it->cost);
    jw_kstr(w, "cost_part", it->cost_part);
  }
  jw_key(w, "checks");
  jw_begin_arr(w);
  w->inline_depth = w->depth + 1;
  for (int i = 0; i < p->nchecks; i++) {
    jw_begin_obj(w);
    jw_kstr(w, "rule", p->checks[i].rule);
    jw_kstr(w, "why", p->checks[i].why);
    jw_end_obj(w);
  }
  w->inline_depth = 1000;
  jw_end_arr(w);
}

/* A build-time choice (choose.c): every candidate's values and estimated
   time, and the values taken (none when no candidate could be estimated:
   the target's default stays). */
static void bd_json_choice(jw_t *w, const op_inst *k) {
  const op_choice *ch = k->choice;
  jw_key(w, "choice");
  jw_begin_obj(w);
  jw_kstr(w, "by", "estimate");
  jw_kstr(w, "part", ch->part);
  jw_key(w, "chosen");
  w->inline_depth = w->depth + 1;
  if (ch->winner < 0) {
    jw_null(w);
  } else {
    jw_begin_obj(w);
    for (int j = 0; j < ch->nparams; j++) jw_kstr(w, k->op->params[ch->params[j]].name, ch->vals[ch->winner][j]);
    jw_end_obj(w);
  }
  w->inline_depth = 1000;
  jw_key(w, "candidates");
  jw_begin_arr(w);
  w->inline_depth = w->depth + 1;
  for (int c = 0; c < ch->n; c++) {
    jw_begin_obj(w);
    for (int j = 0; j < ch->nparams; j++) jw_kstr(w, k->op->params[ch->params[j]].name, ch->vals[c][j]);
    if (ch->us[c] >= 0) {
      jw_key(w, "us");
      jw_num(w, ch->us[c], 3);
    } else {
      jw_kstr(w, "error", ch->err[c]);
    }
    jw_end_obj(w);
  }
  w->inline_depth = 1000;
  jw_end_arr(w);
  jw_end_obj(w);
}

static void bd_manifest_kernel(jw_t *w, const bd_item *it, int sources_only, int emulate) {
  const op_inst *k = it->k;
  jw_begin_obj(w);
  jw_kstr(w, "name", k->name);
  jw_kstr(w, "op", k->op->name);
  jw_kstr(w, "target", k->target);
  bd_json_params(w, k);
  bd_json_selection(w, k);
  jw_kstr(w, "source", it->src_rel);
  jw_kstr(w, "source_sha256", it->src_sha);
  if (!sources_only) {
    jw_kstr(w, "file", it->obj_rel);
    jw_kstr(w, "sha256", it->obj_sha);
    jw_kstr(w, "compiler", it->cc.identity);
  }
  if (!sources_only && !emulate) bd_json_resources(w, it);
  bd_json_kernarg(w, k->plan);
  bd_json_launch(w, k->plan, tgt_find(k->target), it);
  if (k->choice) bd_json_choice(w, k);
  jw_end_obj(w);
}

static int bd_manifest(bd_ctx *c) {
  jw_t w;
  jw_init(&w);
  jw_begin_obj(&w);
  jw_kstr(&w, "hkgen", HK_VERSION);
  jw_kint(&w, "format", 1);
  jw_kstr(&w, "kind", c->o->sources_only ? "sources" : "catalogue");
  jw_kstr(&w, "backend", c->o->emulate ? "emulator" : "gpu");
  jw_key(&w, "kernels");
  jw_begin_arr(&w);
  for (size_t i = 0; i < c->n; i++) bd_manifest_kernel(&w, &c->items[i], c->o->sources_only, c->o->emulate);
  jw_end_arr(&w);
  jw_end_obj(&w);
  size_t len;
  char *text = jw_finish(&w, &len);
  char *path = fs_join(c->o->outdir, c->o->sources_only ? "sources.json" : "manifest.json");
  int rc = fs_sync_dir(c->o->outdir) == 0 ? fs_write_atomic(path, text, len) : -1;
  if (rc < 0) diag_error(path, 0, 0, "cannot write: %s", strerror(errno));
  free(path);
  free(text);
  return rc;
}

/* Whether name is something a build or a merge writes into its folder. */
static int bd_own_entry(const char *name) {
  static const char *const own[] = {"manifest.json", "sources.json", ".hkgen.lock", ".hkgen-shard"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(name, own[i])) return 1;
  return tgt_find(name) != NULL || strstr(name, ".tmp.") != NULL;
}

/* A manifest hkgen wrote opens with its "hkgen" key. */
static int bd_own_manifest(const char *path) {
  char *text = NULL;
  size_t len = 0;
  if (fs_read_file(path, 1u << 30, &text, &len) < 0) return errno == ENOENT;
  int own = len > 2 && strstr(text, "\"hkgen\":") && strstr(text, "\"hkgen\":") - text < 64;
  free(text);
  return own;
}

int bd_check_outdir(const char *outdir) {
  DIR *d = opendir(outdir);
  if (!d) return 0; /* a new folder */
  const char *bad = NULL;
  for (struct dirent *e; !bad && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !bd_own_entry(e->d_name)) bad = e->d_name;
  char *foreign = bad ? xstrdup(bad) : NULL;
  closedir(d);
  static const char *const manifests[] = {"manifest.json", "sources.json"};
  for (int i = 0; i < 2 && !foreign; i++) {
    char *m = fs_join(outdir, manifests[i]);
    if (!bd_own_manifest(m)) foreign = xstrdup(manifests[i]);
    free(m);
  }
  if (!foreign) return 0;
  diag_error(outdir, 0, 0, "holds %s, which hkgen did not write: refusing to build a catalogue over it "
             "(give -o a new or empty folder, or one hkgen built)", foreign);
  free(foreign);
  return -1;
}

/* Resolves each target's compiler once; reports every target that has none. */
static int bd_compilers(bd_ctx *c) {
  size_t nt;
  const tgt_info *ts = tgt_all(&nt);
  cc_compiler ccs[8];
  int have[8] = {0}, bad = 0;
  for (size_t i = 0; i < c->n; i++) {
    size_t t = 0;
    while (t < nt && strcmp(ts[t].name, c->items[i].k->target)) t++;
    if (!have[t]) {
      char why[512];
      int r = c->o->emulate ? cc_resolve_host(&ccs[t], why, sizeof why) : cc_resolve(ts[t].name, &ccs[t], why, sizeof why);
      if (r == 0 && c->o->emulate && !tgt_is_amd(&ts[t])) {
        snprintf(why, sizeof why, "--emulate: the emulator runs AMD targets only, not %s", ts[t].name);
        r = -1;
      }
      if (r < 0) {
        diag_error(NULL, 0, 0, "%s", why);
        have[t] = -1;
        bad = 1;
      } else {
        have[t] = 1;
      }
    }
    if (have[t] == 1) c->items[i].cc = ccs[t];
    /* --emulate: the GPU compiler too where the cost formula needs the GPU object */
    if (c->o->emulate && have[t] == 1 && !c->gpu_have[t] && bd_wants_cost(c, &c->items[i])) {
      char why[512];
      c->gpu_have[t] = cc_resolve(ts[t].name, &c->gpu_cc[t], why, sizeof why) == 0 ? 1 : -1;
    }
  }
  return bad ? -1 : 0;
}

static int bd_run(bd_ctx *c) {
  int jobs = c->o->jobs > 0 ? c->o->jobs : 1;
  if ((size_t)jobs > c->n) jobs = (int)c->n;
  pthread_t th[256];
  int started = 0;
  for (int i = 1; i < jobs && i < 256; i++)
    if (pthread_create(&th[started], NULL, bd_worker, c) == 0) started++;
  bd_worker(c);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  if (c->tty && !c->o->quiet) fputs("\r\033[K", stderr);
  size_t failed = 0;
  for (size_t i = 0; i < c->n; i++) failed += !c->items[i].ok;
  return failed ? -1 : 0;
}

int bd_build(spec_set *set, const bd_options *o) {
  bd_ctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.n = set->n;
  c.tpldir = skel_template_dir();
  if (!c.tpldir) return HK_EFAIL;
  c.tty = isatty(2);
  c.t0 = bd_now();
  pthread_mutex_init(&c.progress_lock, NULL);
  c.items = xcalloc(c.n ? c.n : 1, sizeof *c.items);
  for (size_t i = 0; i < c.n; i++) {
    bd_item *it = &c.items[i];
    it->k = &set->v[i];
    it->src_rel = xasprintf("%s/%s.hip", it->k->target, it->k->name);
    it->obj_rel = xasprintf("%s/%s.%s", it->k->target, it->k->name,
                            o->emulate ? "emu.so" : tgt_is_amd(tgt_find(it->k->target)) ? "hsaco" : "cubin");
  }
  int status = HK_EFAIL, lockfd = -1;
  fs_sweep_tmp(); /* what a killed build left behind */
  if (!o->sources_only && bd_compilers(&c) < 0) goto out;
  if (bd_check_outdir(o->outdir) < 0) {
    status = HK_EUSAGE;
    goto out;
  }
  if (fs_mkdirs(o->outdir) < 0) {
    diag_error(o->outdir, 0, 0, "cannot create the output folder: %s", strerror(errno));
    goto out;
  }
  if ((lockfd = fs_lock_folder(o->outdir)) < 0) goto out;
  /* The old manifests go first (a build's and a gen's: either may describe
     files this run replaces): from here until the new one is in place the
     folder holds none, never a stale one. */
  static const char *const manifests[] = {"manifest.json", "sources.json"};
  for (int i = 0; i < 2; i++) {
    char *mpath = fs_join(o->outdir, manifests[i]);
    if (unlink(mpath) < 0 && errno != ENOENT)
      diag_error(mpath, 0, 0, "cannot replace: %s", strerror(errno));
    free(mpath);
  }
  cc_cache_open(&c.cache, o->use_cache);
  if (bd_run(&c) == 0 && bd_manifest(&c) == 0) status = HK_OK;
  if (o->json)
    printf("{\"event\": \"done\", \"status\": \"%s\", \"kernels\": %zu, \"compiled\": %zu, "
           "\"seconds\": %.3f}\n", status == HK_OK ? "ok" : "failed", c.n, (size_t)c.compiled, bd_now() - c.t0);
  if (!o->quiet && !o->json && status == HK_OK)
    diag_note("hkgen: %zu kernel%s into %s: %zu compiled, %zu from cache, %.2f s\n", c.n,
              c.n == 1 ? "" : "s", o->outdir, (size_t)c.compiled,
              o->sources_only ? 0 : c.n - (size_t)c.compiled, bd_now() - c.t0);
out:
  if (lockfd >= 0) fs_unlock_folder(o->outdir, lockfd);
  for (size_t i = 0; i < c.n; i++) {
    free(c.items[i].src);
    free(c.items[i].src_rel);
    free(c.items[i].obj_rel);
    free(c.items[i].cost);
  }
  free(c.items);
  pthread_mutex_destroy(&c.progress_lock);
  return status;
}
