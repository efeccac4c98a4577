/* spec.c: spec validation and cross-product expansion.

   A spec is a mapping with `kernels:` (a list of entries) and optional
   `defaults:`. Each entry names an `op` and gives op parameters; a list value
   expands into one kernel per element (cross product over all lists). A value
   of `any`, or an omitted parameter whose default is `any`, becomes a run-time
   argument. */
#include "spec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "target.h"
#include "util.h"
#include "yamltree.h"

static const char *const spec_top_keys[] = {"hkgen", "defaults", "kernels", "models"};
static const char *const spec_entry_keys[] = {"op", "name", "target"};

/* The values one parameter takes within an entry, and where they came from. */
typedef struct {
  char **v;
  size_t n;
  const yt_node *where;
} spec_vals;

typedef struct {
  const char *file;
  const yt_node *defaults;
  const char *targets_override;
  unsigned char *defaults_used; /* per defaults pair: read by some kernel */
  spec_set *set;
  int errors;
  unsigned needs; /* a model's derived entry: targets without these features are left out */
} spec_ctx;

static void spec_err(spec_ctx *c, const yt_node *n, const char *fmt, const char *a,
                     const char *b) {
  char msg[1024];
  snprintf(msg, sizeof msg, fmt, a, b);
  diag_error(c->file, n ? n->line : 0, n ? n->col : 0, "%s", msg);
  c->errors++;
}

static void spec_vals_free(spec_vals *sv) {
  for (size_t i = 0; i < sv->n; i++) free(sv->v[i]);
  free(sv->v);
  sv->v = NULL;
  sv->n = 0;
}

/* Canonical text of a scalar for parameter p, so that `4096`, `04096` and
   `4.096e3` cannot produce different kernels for one value. */
static char *spec_canon(const op_param *p, const char *v) {
  if (strcmp(v, OP_ANY) == 0) return xstrdup(v);
  if (p->type == OP_INT) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!errno && *v && !*end) return xasprintf("%ld", x);
  }
  if (p->type == OP_FLOAT) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!errno && *v && !*end && isfinite(d)) return xasprintf("%.9g", d);
  }
  return xstrdup(v);
}

/* Reads the value node of parameter p into sv, checking every element. */
static int spec_read_vals(spec_ctx *c, const op_param *p, const yt_node *n, spec_vals *sv) {
  spec_vals_free(sv);
  sv->where = n;
  if (n->kind == YT_MAP) {
    spec_err(c, n, "'%s' takes a value or a list of values, not a mapping", p->name, NULL);
    return -1;
  }
  size_t cnt = n->kind == YT_SEQ ? n->n : 1;
  if (cnt == 0) {
    spec_err(c, n, "'%s' is an empty list", p->name, NULL);
    return -1;
  }
  sv->v = xcalloc(cnt, sizeof *sv->v);
  int bad = 0;
  for (size_t i = 0; i < cnt; i++) {
    const yt_node *e = n->kind == YT_SEQ ? n->items[i] : n;
    if (e->kind != YT_SCALAR) {
      spec_err(c, e, "'%s' list elements must be plain values", p->name, NULL);
      bad = 1;
      continue;
    }
    char msg[512];
    if (e->quoted && strcmp(e->value, OP_ANY) == 0) { /* quoted scalars are never keywords */
      diag_error(c->file, e->line, e->col,
                 "'%s': a quoted \"any\" is a string; write any without quotes for a run-time argument",
                 p->name);
      c->errors++;
      bad = 1;
      continue;
    }
    if (op_value_ok(p, e->value, msg, sizeof msg) < 0) {
      diag_error(c->file, e->line, e->col, "%s", msg);
      c->errors++;
      bad = 1;
      continue;
    }
    sv->v[sv->n++] = spec_canon(p, e->value);
  }
  return bad ? -1 : 0;
}

static void spec_unknown_key(spec_ctx *c, const yt_node *key, const op_desc *op) {
  const char *cands[OP_MAX_PARAMS + 4];
  size_t n = 0;
  for (size_t i = 0; i < 3; i++) cands[n++] = spec_entry_keys[i];
  for (int i = 0; op && i < op->nparams; i++) cands[n++] = op->params[i].name;
  const char *near = str_closest(key->value, cands, n);
  hk_buf allowed;
  buf_init(&allowed);
  for (size_t i = 0; i < n; i++) buf_printf(&allowed, "%s%s", i ? ", " : "", cands[i]);
  if (near)
    diag_error(c->file, key->line, key->col, "unknown key '%s' for op %s; did you mean '%s'?",
               key->value, op ? op->name : "?", near);
  else
    diag_error(c->file, key->line, key->col, "unknown key '%s' for op %s; allowed: %s",
               key->value, op ? op->name : "?", allowed.s);
  buf_free(&allowed);
  c->errors++;
}

/* Target list for an entry: --target, else the entry's, else defaults', else
   the built-in default. Each element is checked against the target table. */
static int spec_read_targets(spec_ctx *c, const yt_node *entry, spec_vals *tv) {
  const yt_node *n = yt_map_get(entry, "target");
  if (!n && c->defaults) n = yt_map_get(c->defaults, "target");
  char *list = NULL;
  if (c->targets_override) list = xstrdup(c->targets_override);
  else if (!n) list = xstrdup(tgt_default_list());
  tv->where = n ? n : entry;
  size_t tn;
  const tgt_info *all = tgt_all(&tn);
  char allowed[256] = "";
  for (size_t i = 0; i < tn; i++) {
    strcat(allowed, i ? ", " : "");
    strcat(allowed, all[i].name);
  }
  if (list) { /* --target was checked by spec_targets_ok */
    tv->v = xcalloc(strlen(list) + 1, sizeof *tv->v);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      int seen = 0;
      for (size_t j = 0; j < tv->n; j++) seen |= !strcmp(tv->v[j], t);
      if (tgt_find(t) && !seen) tv->v[tv->n++] = xstrdup(t); /* gfx942,gfx942 is one target */
    }
    free(list);
    return tv->n ? 0 : -1;
  }
  size_t cnt = n->kind == YT_SEQ ? n->n : 1;
  tv->v = xcalloc(cnt + 1, sizeof *tv->v);
  int bad = n->kind == YT_MAP || cnt == 0;
  if (bad) spec_err(c, n, "'target' takes a target or a list of targets; allowed: %s", allowed, NULL);
  for (size_t i = 0; !bad && i < cnt; i++) {
    const yt_node *e = n->kind == YT_SEQ ? n->items[i] : n;
    if (e->kind != YT_SCALAR || !tgt_find(e->value)) {
      spec_err(c, e, "unknown target '%s'; allowed: %s", e->kind == YT_SCALAR ? e->value : "?",
               allowed);
      bad = 1;
      continue;
    }
    tv->v[tv->n++] = xstrdup(e->value);
  }
  return bad ? -1 : 0;
}

/* Leaves out the targets without c->needs (a derived entry may end with none:
   then it makes no kernel). */
static void spec_keep_targets(spec_ctx *c, spec_vals *tv) {
  size_t k = 0;
  for (size_t i = 0; i < tv->n; i++) {
    if (!c->needs || tgt_name_has(tv->v[i], c->needs)) tv->v[k++] = tv->v[i];
    else free(tv->v[i]);
  }
  tv->n = k;
}

/* A parameter's value text as it appears in a kernel name. */
static void spec_name_part(hk_buf *b, const op_param *p, const char *v) {
  buf_puts(b, "_");
  buf_puts(b, p->tag);
  if (strcmp(v, OP_ANY) == 0) {
    buf_puts(b, "x");
    return;
  }
  if (p->type == OP_BOOL) {
    buf_puts(b, strcmp(v, "true") == 0 ? "1" : "0");
    return;
  }
  for (const char *s = v; *s; s++) {
    char ch = *s == '.' ? 'p' : *s == '-' ? 'm' : *s;
    if (ch == '+') continue;
    buf_add(b, &ch, 1);
  }
}

void spec_name(op_inst *k) {
  hk_buf b;
  buf_init(&b);
  buf_puts(&b, k->base);
  for (int i = 0; i < k->op->nparams; i++) {
    const op_param *p = &k->op->params[i];
    int varies = (k->varies >> i) & 1;
    int shown = !k->user_named && (strcmp(k->vals[i], p->def) != 0 || p->runtime_ok) && !op_feature_off(k, i);
    if (varies || shown) spec_name_part(&b, p, k->vals[i]);
  }
  snprintf(k->name, sizeof k->name, "%s", b.s);
  buf_free(&b);
}

static int spec_name_ok(spec_ctx *c, const yt_node *n) {
  if (n->kind != YT_SCALAR || !str_is_c_identifier(n->value) || strlen(n->value) > 48) {
    spec_err(c, n, "'name' must be a C identifier of at most 48 characters (got '%s')",
             n->kind == YT_SCALAR ? n->value : "?", NULL);
    return -1;
  }
  if (!strncmp(n->value, "hk_", 3) || !strncmp(n->value, "hkm_", 4) || !strncmp(n->value, "m4_", 3) ||
      !strncmp(n->value, "__", 2)) {
    spec_err(c, n, "'name' may not start with hk_, hkm_, m4_ or __ (reserved): '%s'", n->value, NULL);
    return -1;
  }
  return 0;
}

static void spec_push(spec_set *set, op_inst *k) {
  if (set->n == set->cap) {
    set->cap = set->cap ? set->cap * 2 : 16;
    set->v = xrealloc(set->v, set->cap * sizeof *set->v);
  }
  set->v[set->n++] = *k;
}

static void spec_make_name(op_inst *k, const char *base, const spec_vals *pv, int user_named) {
  snprintf(k->base, sizeof k->base, "%s", base);
  k->user_named = user_named;
  k->varies = 0;
  for (int i = 0; i < k->op->nparams; i++) k->varies |= (unsigned)(pv[i].n > 1) << i;
  spec_name(k);
}

/* Parameters the spec left out (no `where') take the op's default for the
   kernel's target where it has one; the tuning ones among them are marked
   as left to hkgen (a choice at build time may replace them). */
static void spec_target_defaults(op_inst *k, const spec_vals *pv) {
  for (int i = 0; i < k->op->nparams; i++)
    if (!pv[i].where && op_is_tuning(k->op, k->op->params[i].name)) k->left |= 1u << i;
  for (int i = 0; k->op->target_default && i < k->op->nparams; i++) {
    const char *d = pv[i].where ? NULL : k->op->target_default(k, k->op->params[i].name);
    if (d && strcmp(d, k->vals[i])) {
      free(k->vals[i]);
      k->vals[i] = xstrdup(d);
    }
  }
}

/* Walks the cross product of pv[0..np) x targets, one kernel per point. */
static void spec_expand(spec_ctx *c, const op_desc *op, const yt_node *entry, spec_vals *pv,
                        const spec_vals *tv, const char *base, int user_named) {
  size_t total = tv->n;
  for (int i = 0; i < op->nparams; i++) {
    if (total > SPEC_MAX_KERNELS / (pv[i].n ? pv[i].n : 1)) {
      total = SPEC_MAX_KERNELS + 1;
      break;
    }
    total *= pv[i].n;
  }
  if (total + c->set->n > SPEC_MAX_KERNELS) {
    char lim[32];
    snprintf(lim, sizeof lim, "%d", SPEC_MAX_KERNELS);
    spec_err(c, entry, "this spec expands to more than %s kernels; split it", lim, NULL);
    return;
  }
  size_t idx[OP_MAX_PARAMS + 1] = {0};
  for (size_t done = 0; done < total; done++) {
    op_inst k;
    memset(&k, 0, sizeof k);
    k.op = op;
    k.target = tgt_find(tv->v[idx[op->nparams]])->name;
    k.file = c->file;
    k.line = entry->line;
    k.col = entry->col;
    for (int i = 0; i < op->nparams; i++) k.vals[i] = xstrdup(pv[i].v[idx[i]]);
    spec_target_defaults(&k, pv);
    char msg[512];
    int ok = op->check(&k, msg, sizeof msg) == 0;
    if (ok) spec_make_name(&k, base, pv, user_named);
    if (ok) ok = op_plan_resolve(&k, msg, sizeof msg) == 0;
    if (!ok) {
      diag_error(c->file, entry->line, entry->col, "%s", msg);
      c->errors++;
      op_inst_free(&k);
    } else {
      spec_push(c->set, &k);
    }
    for (int i = 0; i <= op->nparams; i++) { /* odometer step */
      size_t lim = i < op->nparams ? pv[i].n : tv->n;
      if (++idx[i] < lim) break;
      idx[i] = 0;
    }
  }
}

static void spec_mark_default_used(spec_ctx *c, const char *key) {
  if (!c->defaults) return;
  for (size_t i = 0; i + 1 < c->defaults->n; i += 2)
    if (strcmp(c->defaults->items[i]->value, key) == 0) c->defaults_used[i / 2] = 1;
}

static void spec_entry(spec_ctx *c, const yt_node *entry) {
  if (entry->kind != YT_MAP) {
    spec_err(c, entry, "each kernel entry must be a mapping with an 'op' key", NULL, NULL);
    return;
  }
  const yt_node *opn = yt_map_get(entry, "op");
  size_t nops;
  const op_desc *const *ops = op_all(&nops);
  char allowed[256] = "";
  for (size_t i = 0; i < nops; i++) {
    strcat(allowed, i ? ", " : "");
    strcat(allowed, ops[i]->name);
  }
  if (!opn) {
    spec_err(c, entry, "kernel entry has no 'op'; allowed: %s", allowed, NULL);
    return;
  }
  const op_desc *op = opn->kind == YT_SCALAR ? op_find(opn->value) : NULL;
  if (!op) {
    const char *names[16];
    for (size_t i = 0; i < nops && i < 16; i++) names[i] = ops[i]->name;
    const char *near = opn->kind == YT_SCALAR ? str_closest(opn->value, names, nops) : NULL;
    if (near)
      spec_err(c, opn, "unknown op '%s'; did you mean '%s'?", opn->value, near);
    else
      spec_err(c, opn, "unknown op '%s'; allowed: %s", opn->kind == YT_SCALAR ? opn->value : "?", allowed);
    return;
  }
  int before = c->errors;
  spec_vals pv[OP_MAX_PARAMS];
  memset(pv, 0, sizeof pv);
  for (int i = 0; i < op->nparams; i++) { /* built-in defaults */
    pv[i].v = xcalloc(1, sizeof *pv[i].v);
    pv[i].v[0] = xstrdup(op->params[i].def);
    pv[i].n = 1;
  }
  for (int i = 0; c->defaults && i < op->nparams; i++) {
    const yt_node *d = yt_map_get(c->defaults, op->params[i].name);
    if (!d) continue;
    spec_mark_default_used(c, op->params[i].name);
    spec_read_vals(c, &op->params[i], d, &pv[i]);
  }
  for (size_t j = 0; j + 1 < entry->n; j += 2) {
    const yt_node *key = entry->items[j], *val = entry->items[j + 1];
    int pi = op_param_index(op, key->value);
    if (pi >= 0) spec_read_vals(c, &op->params[pi], val, &pv[pi]);
    else if (!strcmp(key->value, "name") && val) spec_name_ok(c, val);
    else if (strcmp(key->value, "op") && strcmp(key->value, "target")) spec_unknown_key(c, key, op);
  }
  spec_vals tv = {0};
  spec_read_targets(c, entry, &tv);
  spec_keep_targets(c, &tv);
  if (yt_map_get(c->defaults, "target")) spec_mark_default_used(c, "target");
  const yt_node *namen = yt_map_get(entry, "name");
  if (c->errors == before)
    spec_expand(c, op, entry, pv, &tv, namen ? namen->value : op->name, namen != NULL);
  for (int i = 0; i < op->nparams; i++) spec_vals_free(&pv[i]);
  spec_vals_free(&tv);
}

/* Every defaults key must be a parameter of some op (or `target`). */
static void spec_check_defaults(spec_ctx *c) {
  const yt_node *d = c->defaults;
  size_t nops;
  const op_desc *const *ops = op_all(&nops);
  const char *cands[512]; /* every op's parameters: about 100 today */
  size_t nc = 0, max = sizeof cands / sizeof cands[0];
  cands[nc++] = "target";
  for (size_t i = 0; i < nops; i++)
    for (int j = 0; j < ops[i]->nparams && nc < max; j++) cands[nc++] = ops[i]->params[j].name;
  for (size_t i = 0; i + 1 < d->n; i += 2) {
    const yt_node *key = d->items[i];
    int known = 0;
    for (size_t j = 0; j < nc; j++) known |= !strcmp(cands[j], key->value);
    if (known) continue;
    const char *near = str_closest(key->value, cands, nc);
    if (near)
      spec_err(c, key, "unknown defaults key '%s'; did you mean '%s'?", key->value, near);
    else
      spec_err(c, key, "unknown defaults key '%s': it is no parameter of any op%s", key->value, "");
  }
}

static void spec_top(spec_ctx *c, const yt_node *root) {
  if (!root) {
    diag_error(c->file, 0, 0, "empty spec: expected a mapping with 'kernels:'");
    c->errors++;
    return;
  }
  if (root->kind != YT_MAP) {
    spec_err(c, root, "a spec is a mapping with 'kernels:' (and optional 'defaults:'), not %s",
             yt_kind_name(root->kind), NULL);
    return;
  }
  for (size_t i = 0; i + 1 < root->n; i += 2) {
    const yt_node *key = root->items[i];
    int known = 0;
    for (size_t j = 0; j < 4; j++) known |= !strcmp(key->value, spec_top_keys[j]);
    if (known) continue;
    const char *near = str_closest(key->value, spec_top_keys, 4);
    if (near) spec_err(c, key, "unknown top-level key '%s'; did you mean '%s'?", key->value, near);
    else spec_err(c, key, "unknown top-level key '%s'; allowed: hkgen, defaults, kernels, models%s", key->value, "");
  }
  const yt_node *ver = yt_map_get(root, "hkgen");
  if (ver && (ver->kind != YT_SCALAR || strcmp(ver->value, "1")))
    spec_err(c, ver, "unsupported spec version '%s'; allowed: 1", ver->kind == YT_SCALAR ? ver->value : "?", NULL);
  c->defaults = yt_map_get(root, "defaults");
  if (c->defaults && c->defaults->kind != YT_MAP) {
    spec_err(c, c->defaults, "'defaults' must be a mapping of parameter: value%s%s", "", "");
    c->defaults = NULL;
  }
  if (c->defaults) {
    spec_check_defaults(c);
    c->defaults_used = xcalloc(c->defaults->n / 2 + 1, 1);
  }
  const yt_node *ks = yt_map_get(root, "kernels"), *models = yt_map_get(root, "models");
  if ((ks || !models) && (!ks || ks->kind != YT_SEQ || ks->n == 0)) {
    spec_err(c, ks ? ks : root,
             "a spec needs 'kernels:' (a non-empty list of kernel entries) or 'models:'%s%s", "", "");
    return;
  }
  for (size_t i = 0; ks && i < ks->n; i++) spec_entry(c, ks->items[i]);
  if (models) { /* presets become ordinary entries, checked the same way */
    yt_node **derived = NULL;
    size_t nd = 0;
    c->errors += model_expand(c->file, models, &derived, &nd);
    for (size_t i = 0; i < nd && !c->errors; i++) {
      c->needs = model_entry_needs(derived[i]);
      spec_entry(c, derived[i]);
    }
    c->needs = 0;
    model_free(derived, nd);
  }
  for (size_t i = 0; c->defaults && c->errors == 0 && i + 1 < c->defaults->n; i += 2)
    if (!c->defaults_used[i / 2])
      diag_warn(c->file, c->defaults->items[i]->line, c->defaults->items[i]->col,
                "defaults key '%s' is used by no kernel", c->defaults->items[i]->value);
}

int spec_load_buffer(const char *name, const char *data, size_t len, const char *targets,
                     spec_set *set) {
  yt_doc doc;
  if (yt_load_buffer(name, data, len, &doc) < 0) return 1;
  spec_ctx c = {.file = name, .targets_override = targets, .set = set};
  spec_top(&c, doc.root);
  free(c.defaults_used);
  yt_free(&doc);
  return c.errors;
}

int spec_load(const char *path, const char *targets, spec_set *set) {
  char *data;
  size_t len;
  if (fs_read_stream(path, YT_MAX_BYTES, &data, &len) < 0) {
    if (errno == EFBIG) diag_error(path, 0, 0, "spec is larger than %u bytes", YT_MAX_BYTES);
    else diag_error(path, 0, 0, "cannot read spec: %s", strerror(errno));
    return 1;
  }
  int rc = spec_load_buffer(path, data, len, targets, set);
  free(data);
  return rc;
}

int spec_targets_ok(const char *list) {
  size_t tn;
  const tgt_info *all = tgt_all(&tn);
  hk_buf allowed;
  buf_init(&allowed);
  for (size_t i = 0; i < tn; i++) buf_printf(&allowed, "%s%s", i ? ", " : "", all[i].name);
  char *copy = xstrdup(list);
  int errors = 0, n = 0;
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
    if (!tgt_find(t)) {
      diag_error(NULL, 0, 0, "--target: unknown target '%s'; allowed: %s", t, allowed.s);
      errors++;
    }
  if (n == 0) {
    diag_error(NULL, 0, 0, "--target: empty list; allowed: %s", allowed.s);
    errors++;
  }
  free(copy);
  buf_free(&allowed);
  return errors;
}

/* Sorted by (name, target), duplicates sit side by side. */
static int spec_cmp_inst(const void *a, const void *b) {
  const op_inst *x = *(const op_inst *const *)a, *y = *(const op_inst *const *)b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->target, y->target);
}

int spec_check_unique(const spec_set *set) {
  const op_inst **v = xcalloc(set->n + 1, sizeof *v);
  for (size_t i = 0; i < set->n; i++) v[i] = &set->v[i];
  qsort(v, set->n, sizeof *v, spec_cmp_inst);
  int errors = 0;
  for (size_t i = 1; i < set->n; i++) {
    const op_inst *a = v[i], *b = v[i - 1];
    if (spec_cmp_inst(&v[i], &v[i - 1])) continue;
    diag_error(a->file, a->line, a->col,
               "kernel '%s' for %s is also produced at %s:%d; give one entry a different 'name'",
               a->name, a->target, b->file, b->line);
    errors++;
  }
  free(v);
  return errors;
}

void spec_set_free(spec_set *set) {
  for (size_t i = 0; i < set->n; i++) op_inst_free(&set->v[i]);
  free(set->v);
  set->v = NULL;
  set->n = set->cap = 0;
}
