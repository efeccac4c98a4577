/* inspect_est.c: `hkgen inspect PATH --estimate PART [--shape NAME=V,...]`,
   the estimate of estimate.h for every kernel of a catalogue (the problem:
   the op's parameters, --shape for those left to run time; the work from the
   op's descriptor) or of one AMD code object (the problem given whole:
   blocks=, block=, lds=, flops=, mma_flops=, bytes=, trips=). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build.h"
#include "comgr.h"
#include "estimate.h"
#include "hotloop.h"
#include "op.h"
#include "util.h"

int cmd_inspect_estimate(const char *path, const char *part, const char *shape);

#define IE_MAX 32

/* --shape NAME=V,... as parsed pairs. */
typedef struct {
  char name[IE_MAX][32];
  double v[IE_MAX];
  int used[IE_MAX];
  int n;
} ie_shape;

static int ie_shape_parse(const char *text, ie_shape *s) {
  memset(s, 0, sizeof *s);
  for (const char *p = text; p && *p;) {
    size_t len = strcspn(p, ","), eq = strcspn(p, "=");
    char *end;
    if (s->n == IE_MAX || eq >= len || eq == 0 || eq >= sizeof s->name[0]) {
      diag_error(NULL, 0, 0, "--shape takes NAME=V,... (at most %d; got '%.*s')", IE_MAX, (int)len, p);
      return -1;
    }
    memcpy(s->name[s->n], p, eq);
    s->v[s->n] = strtod(p + eq + 1, &end);
    if (end != p + len || end == p + eq + 1 || !(s->v[s->n] >= 0)) {
      diag_error(NULL, 0, 0, "--shape %s: '%.*s' is not a number >= 0", s->name[s->n], (int)(len - eq - 1), p + eq + 1);
      return -1;
    }
    s->n++;
    p += len + (p[len] == ',');
  }
  return 0;
}

static int ie_shape_get(ie_shape *s, const char *name, double *v) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->name[i], name)) {
      s->used[i] = 1;
      *v = s->v[i];
      return 1;
    }
  return 0;
}

/* Every --shape name some kernel took; the others are mistakes. */
static int ie_shape_unused(const ie_shape *s) {
  int bad = 0;
  for (int i = 0; i < s->n; i++)
    if (!s->used[i]) {
      diag_error(NULL, 0, 0, "--shape %s: no kernel estimated here takes it", s->name[i]);
      bad = 1;
    }
  return bad;
}

static void ie_header(void) {
  printf("%-48s %-7s %-7s %6s %5s %10s  %s\n", "kernel", "target", "part", "waves", "trips", "time",
         "rate, limiter");
}

static void ie_print(const es_launch *l, const es_result *r) {
  char line[128];
  es_format(r, line, sizeof line);
  printf("%-48s %-7s %-7s %6d %5.0f  %s\n", l->kernel, l->t->name, l->part->name, l->waves_simd, r->trips, line);
}

static int ie_row(const char *dis, es_launch *l) {
  es_result r;
  char msg[512];
  if (es_estimate(dis, l, &r, msg, sizeof msg) < 0) {
    diag_error(NULL, 0, 0, "%s", msg);
    return -1;
  }
  ie_print(l, &r);
  return 0;
}

/* The part's target must be the object's. */
static int ie_target_ok(const char *path, const char *target, const tgt_info *pt, const char *part) {
  if (target && !strcmp(target, pt->name)) return 0;
  diag_error(path, 0, 0, "a %s object cannot run on %s (a %s part)", target ? target : "non-AMD", part, pt->name);
  return -1;
}

/* ---- one code object, the problem given whole -------------------------- */

static int ie_object_kernel(const char *dis, const cg_kernel_meta *m, es_launch l, ie_shape *s) {
  double v = 0, lds = 0;
  if (!ie_shape_get(s, "blocks", &l.blocks)) {
    diag_error(NULL, 0, 0, "kernel %s: an object outside a catalogue needs --shape blocks=N (workgroups), and "
               "flops= or bytes=", m->name);
    return -1;
  }
  l.block = m->max_wg_size > 0 ? m->max_wg_size : 1024;
  if (ie_shape_get(s, "block", &v)) l.block = v >= 1 && v <= 1024 ? (int)v : 0;
  ie_shape_get(s, "lds", &lds); /* dynamic LDS per workgroup */
  if (!l.block || lds > (double)l.t->lds_bytes) {
    diag_error(NULL, 0, 0, "kernel %s: --shape block must be 1 to 1024 threads and lds at most %u bytes (%s)",
               m->name, l.t->lds_bytes, l.t->name);
    return -1;
  }
  ie_shape_get(s, "flops", &l.work.flops);
  ie_shape_get(s, "bytes", &l.work.bytes);
  ie_shape_get(s, "trips", &l.work.trips);
  ie_shape_get(s, "mma_flops", &l.work.mma_flops); /* 0 when not given: no matrix work */
  cg_kernel_meta occ = *m;
  occ.lds = m->lds + (int)lds;
  l.waves_simd = bd_waves_per_simd(l.t->name, &occ, l.block);
  l.kernel = m->name;
  return ie_row(dis, &l);
}

static char *ie_disassemble(const char *path, const char *target, char *msg, size_t n) {
  hk_buf dis;
  buf_init(&dis);
  if (hl_disassemble(path, target, &dis) == 0) return buf_steal(&dis);
  buf_free(&dis);
  snprintf(msg, n, "%s", hl_objdump() ? "llvm-objdump failed on it" :
           "no llvm-objdump for amdgcn (install llvm-22, or set HKGEN_OBJDUMP): no estimate without the code");
  return NULL;
}

/* The target and kernels of an AMD code object; -1 with a message. */
static int ie_read_object(const char *path, const char **target, cg_kernel_meta *m, int max, char *msg, size_t mn) {
  char *data;
  size_t len;
  if (fs_read_file(path, 1u << 30, &data, &len) < 0) {
    snprintf(msg, mn, "cannot read: %s", strerror(errno));
    return -1;
  }
  const unsigned char *p = (const unsigned char *)data;
  int elf = len >= 52 && !memcmp(p, "\177ELF", 4) && p[4] == 2;
  const tgt_info *t = elf && (p[18] | p[19] << 8) == 224 ? tgt_from_elf_mach((p[48] | (unsigned)p[49] << 8) & 0xff)
                                                          : NULL; /* EM_AMDGPU */
  int n = t ? cg_read_meta(data, len, m, max) : -1, cubin = elf && (p[18] | p[19] << 8) == 190; /* EM_CUDA */
  free(data);
  *target = t ? t->name : NULL;
  if (!t)
    snprintf(msg, mn, "not an AMD code object: the estimate reads AMD code objects only%s",
             cubin ? " (this is a CUDA cubin)" : "");
  else if (n < 0)
    snprintf(msg, mn, "cannot read the kernels' metadata%s", cg_identity() ? "" : " (comgr not found)");
  return t ? n : -1;
}

static int ie_object(const char *path, const tgt_info *pt, const tgt_part *part, ie_shape *s) {
  const char *target;
  cg_kernel_meta m[64];
  char msg[256];
  int n = ie_read_object(path, &target, m, 64, msg, sizeof msg);
  if (n < 0) diag_error(path, 0, 0, "%s", msg);
  if (n < 0 || ie_target_ok(path, target, pt, part->name) < 0) return -1;
  char *dis = ie_disassemble(path, target, msg, sizeof msg);
  if (!dis) {
    diag_error(path, 0, 0, "%s", msg);
    return -1;
  }
  int bad = 0;
  es_launch l = {pt, part, NULL, 0, 0, 0, {0, 0, 0, 0}};
  for (int i = 0; i < n; i++) bad |= ie_object_kernel(dis, &m[i], l, s) < 0;
  free(dis);
  return bad ? -1 : 0;
}

/* ---- a catalogue: the manifest's kernels and their ops ------------------- */

typedef struct {
  char name[96], op[32], target[16], file[512], params[2048], runtime[1024];
} ie_entry;

/* The text of `"key": "VALUE"` on line (trimmed), or NULL. */
static int ie_field(const char *line, size_t len, const char *key, char *out, size_t n) {
  char pat[48];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  size_t k = strlen(pat);
  if (len < k || strncmp(line, pat, k)) return 0;
  const char *v = line + k;
  size_t vl = len - k - (line[len - 1] == ',');
  if (*v == '"') v++, vl -= 2;
  if (vl >= n) return 0;
  memcpy(out, v, vl);
  out[vl] = 0;
  return 1;
}

/* The value of parameter name in params ({"a": "1", "b": "x"}), or NULL. */
static char *ie_param(const char *params, const char *name) {
  char pat[48];
  snprintf(pat, sizeof pat, "\"%s\": \"", name);
  const char *p = strstr(params, pat);
  if (!p) return NULL;
  p += strlen(pat);
  size_t n = strcspn(p, "\"");
  char *v = xcalloc(1, n + 1);
  memcpy(v, p, n);
  return v;
}

/* The op_inst of entry e with its plan; -1 with a message. */
static int ie_inst(const ie_entry *e, op_inst *k) {
  memset(k, 0, sizeof *k);
  k->op = op_find(e->op);
  const tgt_info *t = tgt_find(e->target);
  if (!k->op || !t) {
    diag_error(NULL, 0, 0, "kernel %s: op '%s' or target '%s' is unknown to this hkgen", e->name, e->op, e->target);
    return -1;
  }
  k->target = t->name;
  snprintf(k->name, sizeof k->name, "%s", e->name);
  for (int i = 0; i < k->op->nparams; i++) {
    char *v = ie_param(e->params, k->op->params[i].name), quoted[48];
    /* a run-time parameter whose default is a value (a window edge) */
    snprintf(quoted, sizeof quoted, "\"%s\"", k->op->params[i].name);
    if (!v && strstr(e->runtime, quoted)) v = xstrdup(OP_ANY);
    k->vals[i] = v ? v : xstrdup(k->op->params[i].def);
  }
  char msg[256];
  if (op_plan_resolve(k, msg, sizeof msg) < 0) {
    diag_error(NULL, 0, 0, "%s", msg);
    return -1;
  }
  return 0;
}

/* The problem: baked values, then --shape for the run-time ones. -1 (a
   message) when a run-time one is missing; 1 (a row saying so) when the
   kernel bakes another value than --shape gives: it does not serve it. */
static int ie_problem(op_inst *k, ie_shape *s, long *shape, const char *part) {
  op_shape_baked(k, shape);
  int bad = 0, other = 0;
  for (int i = 0; i < k->op->nparams; i++) {
    double v = 0;
    int given = ie_shape_get(s, k->op->params[i].name, &v); /* marks the name used, whatever follows */
    if (!op_is_any(k, k->op->params[i].name)) {
      if (given && (long)v != shape[i] && !other++)
        printf("%-48s %-7s %-7s %6s %5s  not this problem: %s is %ld in the kernel, not %.0f\n", k->name,
               k->target, part, "-", "-", k->op->params[i].name, shape[i], v);
      continue;
    }
    if (other) continue;
    if (!given) {
      diag_error(NULL, 0, 0, "kernel %s: %s is a run-time parameter: give it with --shape %s=V", k->name,
                 k->op->params[i].name, k->op->params[i].name);
      bad = 1;
    }
    shape[i] = (long)v;
  }
  return other ? 1 : bad ? -1 : 0;
}


int ie_kernel_estimate(const char *obj, const op_inst *k, const long *shape, const tgt_part *part, es_launch *l,
                       es_result *r, char *msg, size_t n) {
  const tgt_info *t = tgt_find(k->target);
  memset(l, 0, sizeof *l);
  l->t = t;
  l->part = part;
  l->kernel = k->name;
  if (!k->op->work) {
    snprintf(msg, n, "kernel %s: op %s does not describe its work for the estimate", k->name, k->op->name);
    return -1;
  }
  l->blocks = 1;
  for (int a = 0; a < 3; a++) {
    long v;
    if (op_eval_units(k, shape, part->units, k->plan->grid[a], &v) < 0) {
      snprintf(msg, n, "kernel %s: its grid '%s' cannot be evaluated here", k->name, k->plan->grid[a]);
      return -1;
    }
    l->blocks *= (double)v;
  }
  if (k->op->work(k, shape, &l->work, msg, n) < 0) return -1;
  const char *target;
  cg_kernel_meta m[64];
  int nk = ie_read_object(obj, &target, m, 64, msg, n), rc = -1;
  for (int i = 0; i < nk; i++) {
    if (strcmp(m[i].name, k->name)) continue;
    m[i].lds += k->plan->dynamic_lds;
    l->block = k->plan->block;
    l->waves_simd = bd_waves_per_simd(target, &m[i], l->block);
    char *dis = ie_disassemble(obj, target, msg, n);
    rc = dis ? es_estimate(dis, l, r, msg, n) : -1;
    free(dis);
    return rc;
  }
  if (nk >= 0) snprintf(msg, n, "kernel %s is not in its object %s", k->name, obj);
  return -1;
}

static int ie_entry_estimate(const char *dir, const ie_entry *e, const tgt_part *part, ie_shape *s) {
  op_inst k;
  long shape[OP_MAX_PARAMS];
  char msg[512];
  if (ie_inst(e, &k) < 0) return -1;
  int rc = ie_problem(&k, s, shape, part->name);
  if (rc == 0) {
    es_launch l;
    es_result r;
    char *obj = fs_join(dir, e->file);
    rc = ie_kernel_estimate(obj, &k, shape, part, &l, &r, msg, sizeof msg);
    if (rc < 0) diag_error(NULL, 0, 0, "%s", msg);
    else ie_print(&l, &r);
    free(obj);
  }
  op_inst_free(&k);
  return rc;
}

/* Calls fn on each kernel entry of dir's manifest, in order, until it
   returns nonzero. The manifest is read line by line (our own writer's
   stable layout: one key per line, a kernel's "file" after its "params").
   -1 when there is no manifest to read (said unless quiet). */
typedef int (*ie_visit)(void *ctx, const char *dir, const ie_entry *e);
static int ie_walk(const char *dir, int quiet, ie_visit fn, void *ctx) {
  char *mpath = fs_join(dir, "manifest.json"), *text;
  size_t len;
  if (fs_read_file(mpath, 64u << 20, &text, &len) < 0) {
    if (!quiet) diag_error(mpath, 0, 0, "cannot read the catalogue's manifest: %s", strerror(errno));
    free(mpath);
    return -1;
  }
  free(mpath);
  ie_entry e;
  memset(&e, 0, sizeof e);
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, "\n"), ind = strspn(p, " ");
    const char *l = p + ind;
    size_t ll = n - ind;
    if (ind == 6 && ie_field(l, ll, "name", e.name, sizeof e.name)) e.op[0] = e.target[0] = e.params[0] = e.runtime[0] = 0;
    else if (ind == 6) {
      ie_field(l, ll, "op", e.op, sizeof e.op);
      ie_field(l, ll, "target", e.target, sizeof e.target);
      ie_field(l, ll, "params", e.params, sizeof e.params);
      ie_field(l, ll, "runtime_params", e.runtime, sizeof e.runtime);
      if (ie_field(l, ll, "file", e.file, sizeof e.file) && fn(ctx, dir, &e)) break;
    }
    p += n + (p[n] == '\n');
  }
  free(text);
  return 0;
}

/* ie_catalogue's walk: the estimate of each kernel of the part's target. */
typedef struct {
  const tgt_info *pt;
  const tgt_part *part;
  ie_shape *s;
  int bad, rows, done;
} ie_cat;

static int ie_cat_visit(void *ctx, const char *dir, const ie_entry *e) {
  ie_cat *c = ctx;
  if (strcmp(e->target, c->pt->name)) return 0;
  int r = ie_entry_estimate(dir, e, c->part, c->s);
  c->bad |= r < 0;
  c->done += r == 0;
  c->rows++;
  return 0;
}

/* Estimates each kernel of the part's target in the catalogue dir. */
static int ie_catalogue(const char *dir, const tgt_info *pt, const tgt_part *part, ie_shape *s) {
  ie_cat c = {pt, part, s, 0, 0, 0};
  if (ie_walk(dir, 0, ie_cat_visit, &c) < 0) return -1;
  if (!c.rows) diag_error(dir, 0, 0, "no %s kernel in this catalogue to estimate on %s", pt->name, part->name);
  else if (!c.done && !c.bad) diag_error(dir, 0, 0, "no kernel in this catalogue serves the problem --shape gives");
  return c.bad || !c.done ? -1 : 0;
}

/* ie_catalogue_read's walk: every kernel with its object's path. */
typedef struct {
  op_inst *kernels;
  char **objs;
  size_t n, cap;
  int bad;
} ie_list;

static int ie_list_visit(void *ctx, const char *dir, const ie_entry *e) {
  ie_list *L = ctx;
  if (L->n == L->cap) {
    L->cap = L->cap ? 2 * L->cap : 16;
    L->kernels = xrealloc(L->kernels, L->cap * sizeof *L->kernels);
    L->objs = xrealloc(L->objs, L->cap * sizeof *L->objs);
  }
  L->bad = ie_inst(e, &L->kernels[L->n]) < 0;
  if (!L->bad) L->objs[L->n++] = fs_join(dir, e->file);
  return L->bad;
}

int ie_catalogue_read(const char *dir, op_inst **kernels, char ***objs, size_t *n) {
  ie_list L;
  memset(&L, 0, sizeof L);
  int rc = ie_walk(dir, 0, ie_list_visit, &L);
  if (rc == 0 && !L.bad && !L.n) diag_error(dir, 0, 0, "the catalogue's manifest lists no kernel");
  if (rc == 0 && !L.bad && L.n) {
    *kernels = L.kernels;
    *objs = L.objs;
    *n = L.n;
    return 0;
  }
  for (size_t i = 0; i < L.n; i++) {
    op_inst_free(&L.kernels[i]);
    free(L.objs[i]);
  }
  free(L.kernels);
  free(L.objs);
  *kernels = NULL;
  *objs = NULL;
  *n = 0;
  return -1;
}

typedef struct {
  int shown, skipped;
} ie_baked;

static int ie_baked_visit(void *ctx, const char *dir, const ie_entry *e) {
  ie_baked *b = ctx;
  const tgt_info *t = tgt_find(e->target);
  op_inst k;
  if (!t || !tgt_is_amd(t) || !t->rates) return 0;
  if (ie_inst(e, &k) == 0) {
    int baked = k.op->work != NULL;
    for (int i = 0; baked && i < k.op->nparams; i++) baked = !op_is_any(&k, k.op->params[i].name);
    long shape[OP_MAX_PARAMS];
    es_launch el;
    es_result r;
    char msg[512], *obj = fs_join(dir, e->file);
    op_shape_baked(&k, shape);
    if (baked && !b->shown++) {
      printf("\nestimates (kernels with every parameter baked; docs/MODEL.md):\n");
      ie_header();
    }
    if (baked && ie_kernel_estimate(obj, &k, shape, tgt_largest_part(t), &el, &r, msg, sizeof msg) == 0)
      ie_print(&el, &r);
    else if (baked)
      printf("%-48s %-7s no estimate: %s\n", k.name, k.target, msg);
    b->skipped += !baked;
    free(obj);
  }
  op_inst_free(&k);
  return 0;
}

/* Under `hkgen inspect DIR`: the estimate of every AMD kernel whose every
   parameter is baked (its problem is its own), on its target's biggest part;
   kernels with run-time parameters need --estimate PART --shape. */
int ie_catalogue_baked(const char *dir) {
  ie_baked b = {0, 0};
  ie_walk(dir, 1, ie_baked_visit, &b); /* no manifest: inspect has said so already */
  if (b.skipped)
    printf("%d AMD kernel%s with run-time parameters: hkgen inspect DIR --estimate PART --shape NAME=V,...\n",
           b.skipped, b.skipped == 1 ? "" : "s");
  return 0;
}

static int ie_part(const char *name, const tgt_info **t, const tgt_part **p) {
  *p = tgt_part_find(name, t);
  if (*p && tgt_is_amd(*t)) return 0;
  char list[256] = "";
  size_t nt;
  const tgt_info *all = tgt_all(&nt);
  for (size_t i = 0; i < nt; i++)
    for (int j = 0; tgt_is_amd(&all[i]) && all[i].rates && j < all[i].nparts; j++)
      if (all[i].parts[j].lds_bw) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                                           list[0] ? ", " : "", all[i].parts[j].name);
  diag_error(NULL, 0, 0, "--estimate: unknown AMD part '%s'; allowed: %s", name, list);
  return -1;
}

int cmd_inspect_estimate(const char *path, const char *part, const char *shape) {
  const tgt_info *t;
  const tgt_part *p;
  ie_shape s;
  struct stat st;
  if (ie_part(part, &t, &p) < 0 || ie_shape_parse(shape, &s) < 0) return HK_EUSAGE;
  if (stat(path, &st) < 0) {
    diag_error(path, 0, 0, "%s", strerror(errno));
    return HK_EUSAGE;
  }
  ie_header();
  int rc = S_ISDIR(st.st_mode) ? ie_catalogue(path, t, p, &s) : ie_object(path, t, p, &s);
  if (rc == 0 && ie_shape_unused(&s)) rc = -1;
  return rc < 0 ? HK_EUSAGE : HK_OK;
}
