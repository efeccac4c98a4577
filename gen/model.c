/* model.c: model presets -> per-rank kernel entries. */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"
#include "util.h"

static const char *const model_keys[] = {"name", "hidden", "heads_q", "heads_k", "head_dim",
                                         "ffn", "tp", "rope_theta", "causal", "target",
                                         "norm", "eps", "training", "serving", "dtype", "scale"};
#define MODEL_NKEYS (sizeof model_keys / sizeof model_keys[0])

typedef struct {
  const char *file;
  const yt_node *where;
  int errors;
} model_ctx;

static yt_node *model_node(yt_kind kind, const yt_node *at) {
  yt_node *n = xcalloc(1, sizeof *n);
  n->kind = kind;
  n->line = at->line;
  n->col = at->col;
  return n;
}

static void model_push(yt_node *parent, yt_node *child) {
  parent->items = xrealloc(parent->items, (parent->n + 1) * sizeof *parent->items);
  parent->items[parent->n++] = child;
}

static void model_set(yt_node *map, const char *key, const char *value) {
  yt_node *k = model_node(YT_SCALAR, map), *v = model_node(YT_SCALAR, map);
  k->value = xstrdup(key);
  v->value = xstrdup(value);
  model_push(map, k);
  model_push(map, v);
}

static void model_set_int(yt_node *map, const char *key, long value) {
  char num[32];
  snprintf(num, sizeof num, "%ld", value);
  model_set(map, key, num);
}

/* A copy of node (for `target`, which may be a list). */
static yt_node *model_copy(const yt_node *n) {
  yt_node *c = model_node(n->kind, n);
  if (n->value) c->value = xstrdup(n->value);
  for (size_t i = 0; i < n->n; i++) model_push(c, model_copy(n->items[i]));
  return c;
}

/* key: a copy of the user's value node, so that its errors name its line. */
static void model_set_at(yt_node *map, const char *key, const yt_node *value) {
  yt_node *k = model_node(YT_SCALAR, value);
  k->value = xstrdup(key);
  model_push(map, k);
  model_push(map, model_copy(value));
}

static long model_int(model_ctx *c, const yt_node *m, const char *key, long def) {
  const yt_node *v = yt_map_get(m, key);
  if (!v) {
    if (def >= 0) return def;
    diag_error(c->file, m->line, m->col, "model needs '%s' (a positive integer)", key);
    c->errors++;
    return 1;
  }
  char *end = NULL;
  errno = 0;
  long x = v->kind == YT_SCALAR ? strtol(v->value, &end, 10) : 0;
  if (v->kind != YT_SCALAR || errno || *end || x < 1 || x > (1L << 30)) {
    diag_error(c->file, v->line, v->col, "model '%s' must be a positive integer (got '%s')", key,
               v->kind == YT_SCALAR ? v->value : "?");
    c->errors++;
    return 1;
  }
  return x;
}

/* Heads per rank at tensor-parallel degree tp; KV heads are replicated when
   there are fewer than ranks (as vLLM and SGLang do). */
static int model_split(model_ctx *c, const yt_node *at, long hq, long hk, long ffn, long tp,
                       long *hq_r, long *hk_r) {
  int bad = 0;
  if (hq % tp) {
    diag_error(c->file, at->line, at->col,
               "%ld query heads cannot split evenly over tensor-parallel %ld (%ld %% %ld = %ld)", hq,
               tp, hq, tp, hq % tp);
    bad = 1;
  }
  if (hk % tp && tp % hk) {
    diag_error(c->file, at->line, at->col,
               "%ld KV heads cannot split over (or replicate across) tensor-parallel %ld", hk, tp);
    bad = 1;
  }
  if (ffn % tp) {
    diag_error(c->file, at->line, at->col, "ffn %ld cannot split evenly over tensor-parallel %ld", ffn, tp);
    bad = 1;
  }
  c->errors += bad;
  *hq_r = hq / tp;
  *hk_r = hk >= tp ? hk / tp : 1;
  return bad ? -1 : 0;
}

static yt_node *model_entry(const yt_node *at, const char *op, const char *name, const yt_node *target) {
  yt_node *e = model_node(YT_MAP, at);
  model_set(e, "op", op);
  model_set(e, "name", name);
  if (target) {
    yt_node *k = model_node(YT_SCALAR, target);
    k->value = xstrdup("target");
    model_push(e, k);
    model_push(e, model_copy(target));
  }
  return e;
}

static void model_add(yt_node ***out, size_t *n, yt_node *e) {
  *out = xrealloc(*out, (*n + 1) * sizeof **out);
  (*out)[(*n)++] = e;
}

/* The model's add + norm (hidden whole on every rank, so one entry for all
   tp): kind and eps are checked by the norm op's schema like a user's entry;
   training adds the backward and its reduction (the entry's phase a list). */
static void model_norm(const yt_node *m, const char *name, const yt_node *target, int training, long hidden,
                       yt_node ***out, size_t *n) {
  const yt_node *kind = yt_map_get(m, "norm"), *eps = yt_map_get(m, "eps");
  if (!kind || kind->kind != YT_SCALAR) return;
  char nm[96];
  snprintf(nm, sizeof nm, "%s_norm", name);
  yt_node *e = model_entry(m, "norm", nm, target);
  model_set(e, "kind", kind->value);
  model_set_int(e, "hidden", hidden);
  if (eps && eps->kind == YT_SCALAR) model_set(e, "eps", eps->value);
  if (training) {
    static const char *const phases[] = {"fwd", "bwd", "bwd_reduce"};
    yt_node *k = model_node(YT_SCALAR, e), *v = model_node(YT_SEQ, e);
    k->value = xstrdup("phase");
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
      yt_node *ph = model_node(YT_SCALAR, e);
      ph->value = xstrdup(phases[i]);
      model_push(v, ph);
    }
    model_push(e, k);
    model_push(e, v);
  }
  model_add(out, n, e);
}

/* `serving:` (a mapping): what the serving kernels of every degree add.
   window W: a query sees its W most recent keys, itself included
   (window_left = W - 1); sinks: a learned logit per head; softcap: the
   logit cap; block_size and kv_dtype: the paged KV cache's (the decode
   kernels'). Values other than window are checked by the ops' schemas. */
static const char *const model_serving_keys[] = {"window", "sinks", "softcap", "block_size", "kv_dtype"};
#define MODEL_NSERVING (sizeof model_serving_keys / sizeof model_serving_keys[0])

static int model_serving_ok(model_ctx *c, const yt_node *sv) {
  if (sv->kind != YT_MAP) {
    diag_error(c->file, sv->line, sv->col,
               "'serving' is a mapping (window, sinks, softcap, block_size, kv_dtype)");
    c->errors++;
    return 0;
  }
  for (size_t i = 0; i + 1 < sv->n; i += 2) {
    const yt_node *key = sv->items[i], *v = sv->items[i + 1];
    int known = 0;
    for (size_t j = 0; j < MODEL_NSERVING; j++) known |= !strcmp(key->value, model_serving_keys[j]);
    if (!known) {
      diag_error(c->file, key->line, key->col,
                 "unknown serving key '%s'; allowed: window, sinks, softcap, block_size, kv_dtype", key->value);
      c->errors++;
    } else if (v->kind != YT_SCALAR) {
      diag_error(c->file, v->line, v->col, "serving '%s' takes one value", key->value);
      c->errors++;
    }
  }
  const yt_node *w = yt_map_get(sv, "window");
  if (w && w->kind == YT_SCALAR) {
    char *end = NULL;
    errno = 0;
    long x = strtol(w->value, &end, 10);
    if (errno || *end || !*w->value || x < 1 || x > (1L << 24) + 1) {
      diag_error(c->file, w->line, w->col, "serving 'window' must be an integer from 1 to 16777217 (got '%s')",
                 w->value);
      c->errors++;
    }
  }
  return !c->errors;
}

/* The serving attention of one degree, with the model's sinks and cap: the
   varlen prefill (causal, packed sequences) `<base>_prefill` and the
   paged-KV decode `<base>_decode` (the cache's block_size and kv_dtype),
   and with a window `<base>_prefill_swa` and `<base>_decode_swa` too
   (models such as gpt-oss alternate windowed and full layers). */
static void model_serving(const yt_node *m, const yt_node *sv, const char *base, const yt_node *target, long d,
                          long hq_r, long hk_r, yt_node ***out, size_t *n) {
  const yt_node *w = yt_map_get(sv, "window"), *sinks = yt_map_get(sv, "sinks"), *cap = yt_map_get(sv, "softcap");
  const yt_node *bs = yt_map_get(sv, "block_size"), *kv = yt_map_get(sv, "kv_dtype");
  for (int dec = 0; dec <= 1; dec++)
    for (int swa = 0; swa <= (w != NULL); swa++) {
      char nm[96];
      snprintf(nm, sizeof nm, "%s_%s%s", base, dec ? "decode" : "prefill", swa ? "_swa" : "");
      yt_node *a = model_entry(m, dec ? "attn_decode" : "attn_fwd", nm, target);
      model_set_int(a, "head_dim", d);
      model_set_int(a, "heads_q", hq_r);
      model_set_int(a, "heads_k", hk_r);
      if (!dec) model_set(a, "causal", "true");
      if (!dec) model_set(a, "varlen", "true");
      if (dec && bs) model_set_at(a, "block_size", bs);
      if (dec && kv) model_set_at(a, "kv_dtype", kv);
      if (swa) model_set_int(a, "window_left", strtol(w->value, NULL, 10) - 1);
      if (sinks) model_set_at(a, "sinks", sinks);
      if (cap) model_set_at(a, "softcap", cap);
      model_add(out, n, a);
    }
}

/* Whether the model asks for backward kernels (`training: true`); a value
   other than true or false is an error. */
static int model_training(model_ctx *c, const yt_node *m) {
  const yt_node *v = yt_map_get(m, "training");
  if (!v) return 0;
  if (v->kind == YT_SCALAR && (!strcmp(v->value, "true") || !strcmp(v->value, "false")))
    return !strcmp(v->value, "true");
  diag_error(c->file, v->line, v->col, "model 'training' must be true or false (got '%s')",
             v->kind == YT_SCALAR ? v->value : "?");
  c->errors++;
  return 0;
}

/* attn_fwd, and attn_bwd when training, of one rank. */
static void model_attn(const yt_node *m, const char *base, const yt_node *target, int training, long d,
                       long hq_r, long hk_r, yt_node ***out, size_t *n) {
  const yt_node *causal = yt_map_get(m, "causal");
  for (int bwd = 0; bwd <= training; bwd++) {
    char nm[96];
    snprintf(nm, sizeof nm, "%s_attn%s", base, bwd ? "_bwd" : "");
    yt_node *a = model_entry(m, bwd ? "attn_bwd" : "attn_fwd", nm, target);
    model_set_int(a, "head_dim", d);
    model_set_int(a, "heads_q", hq_r);
    model_set_int(a, "heads_k", hk_r);
    model_set(a, "causal", causal && causal->kind == YT_SCALAR ? causal->value : "true");
    model_add(out, n, a);
  }
}

/* The projections' `dtype' (bf16, or fp8_e4m3 / fp8_e5m2: that format in
   each target's own encoding, as attn_decode's kv_dtype) and `scale' (the
   fp8 scale mode, checked by gemm's schema). 0, or -1 after an error. */
static int model_dtype(model_ctx *c, const yt_node *m, int *fp8) {
  const yt_node *dt = yt_map_get(m, "dtype"), *sc = yt_map_get(m, "scale");
  *fp8 = 0;
  if (dt && (dt->kind != YT_SCALAR || (strcmp(dt->value, "bf16") && strcmp(dt->value, "fp8_e4m3") &&
                                       strcmp(dt->value, "fp8_e5m2")))) {
    diag_error(c->file, dt->line, dt->col,
               "model 'dtype' (of the projections) must be bf16, fp8_e4m3 or fp8_e5m2 (each target's own "
               "fp8 encoding; got '%s')", dt->kind == YT_SCALAR ? dt->value : "?");
    c->errors++;
    return -1;
  }
  *fp8 = dt && strcmp(dt->value, "bf16");
  if (*fp8 && !sc) {
    diag_error(c->file, dt->line, dt->col, "model dtype %s needs 'scale': tensor, row or block", dt->value);
    c->errors++;
    return -1;
  }
  if (sc && !*fp8) {
    diag_error(c->file, sc->line, sc->col, "model 'scale' is for fp8 projections (dtype fp8_e4m3 or fp8_e5m2)");
    c->errors++;
    return -1;
  }
  return 0;
}

/* One projection GEMM, N x K, M (tokens) at run time. fp8: an entry per
   encoding, OCP (gfx950, sm_90a) and FNUZ (gfx942), each left out on the
   targets without it (model_entry_needs). */
static void model_gemm(const yt_node *m, const char *nm, const yt_node *target, long N, long K, int fp8,
                       yt_node ***out, size_t *n) {
  const yt_node *dt = yt_map_get(m, "dtype"), *sc = yt_map_get(m, "scale");
  for (int fnuz = 0; fnuz <= fp8; fnuz++) {
    yt_node *e = model_entry(m, "gemm", nm, target);
    model_set_int(e, "N", N);
    model_set_int(e, "K", K);
    if (fp8) {
      char v[32];
      snprintf(v, sizeof v, "%s%s", dt->value, fnuz ? "_fnuz" : "");
      model_set(e, "dtype", v);
      model_set_at(e, "scale", sc);
    }
    model_add(out, n, e);
  }
}

/* attn_fwd (the serving prefill: varlen) and attn_bwd at head dims other
   than 64 and 128, and attn_decode past head_dim 128, have no sm_90a kernel: a
   model's such kernels go to its AMD targets only (the spec reader drops
   the others, and the entry when none is left); fp8 projections go to the
   targets with their encoding. */
unsigned model_entry_needs(const yt_node *entry) {
  const yt_node *op = yt_map_get(entry, "op"), *d = yt_map_get(entry, "head_dim");
  if (!op || op->kind != YT_SCALAR) return 0;
  const yt_node *dt = yt_map_get(entry, "dtype");
  if (!strcmp(op->value, "gemm") && dt && dt->kind == YT_SCALAR && !strncmp(dt->value, "fp8_", 4)) {
    size_t l = strlen(dt->value);
    return l > 5 && !strcmp(dt->value + l - 5, "_fnuz") ? TGT_FP8_FNUZ : TGT_FP8_OCP;
  }
  if (!strcmp(op->value, "attn_bwd") || (!strcmp(op->value, "attn_fwd") && yt_map_get(entry, "varlen")))
    return d && d->kind == YT_SCALAR && strcmp(d->value, "64") && strcmp(d->value, "128") ? TGT_AMD : 0;
  if (!strcmp(op->value, "attn_decode"))
    return d && d->kind == YT_SCALAR && strtol(d->value, NULL, 10) > 128 ? TGT_AMD : 0;
  return 0;
}

static void model_one(model_ctx *c, const yt_node *m, yt_node ***out, size_t *n) {
  if (m->kind != YT_MAP) {
    diag_error(c->file, m->line, m->col, "each model is a mapping (name, hidden, heads_q, ...)");
    c->errors++;
    return;
  }
  for (size_t i = 0; i + 1 < m->n; i += 2) {
    int known = 0;
    for (size_t j = 0; j < MODEL_NKEYS; j++) known |= !strcmp(m->items[i]->value, model_keys[j]);
    if (known) continue;
    const char *near = str_closest(m->items[i]->value, model_keys, MODEL_NKEYS);
    diag_error(c->file, m->items[i]->line, m->items[i]->col, "unknown model key '%s'%s%s%s",
               m->items[i]->value, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    c->errors++;
  }
  const yt_node *name = yt_map_get(m, "name"), *tpn = yt_map_get(m, "tp");
  const yt_node *target = yt_map_get(m, "target");
  const yt_node *theta = yt_map_get(m, "rope_theta"), *serving = yt_map_get(m, "serving");
  if (!name || name->kind != YT_SCALAR || !str_is_c_identifier(name->value) || strlen(name->value) > 24) {
    diag_error(c->file, name ? name->line : m->line, name ? name->col : m->col,
               "model needs 'name', a C identifier of at most 24 characters");
    c->errors++;
    return;
  }
  long hidden = model_int(c, m, "hidden", -1), hq = model_int(c, m, "heads_q", -1);
  long hk = model_int(c, m, "heads_k", hq), d = model_int(c, m, "head_dim", -1);
  long ffn = model_int(c, m, "ffn", -1);
  int training = model_training(c, m);
  if (hq % hk) {
    diag_error(c->file, m->line, m->col, "heads_q (%ld) must be a multiple of heads_k (%ld)", hq, hk);
    c->errors++;
  }
  int serving_ok = serving && model_serving_ok(c, serving); /* once, not per degree */
  int fp8;
  if (model_dtype(c, m, &fp8) < 0) return;
  size_t ntp = tpn ? (tpn->kind == YT_SEQ ? tpn->n : 1) : 1;
  for (size_t t = 0; t < ntp; t++) {
    const yt_node *tv = !tpn ? NULL : tpn->kind == YT_SEQ ? tpn->items[t] : tpn;
    char *end = NULL;
    long tp = tv && tv->kind == YT_SCALAR ? strtol(tv->value, &end, 10) : 1;
    if (tv && (tv->kind != YT_SCALAR || *end || tp < 1 || tp > 1024)) {
      diag_error(c->file, tv->line, tv->col, "'tp' takes tensor-parallel degrees from 1 to 1024");
      c->errors++;
      continue;
    }
    long hq_r, hk_r;
    if (model_split(c, tv ? tv : m, hq, hk, ffn, tp, &hq_r, &hk_r) < 0 || c->errors) continue;
    char base[64], nm[96];
    snprintf(base, sizeof base, "%s_tp%ld", name->value, tp);
    struct { const char *suffix; long N, K; } gemms[] = {
        {"qkv", (hq_r + 2 * hk_r) * d, hidden}, {"o", hidden, hq_r * d},
        {"gate_up", 2 * ffn / tp, hidden},      {"down", hidden, ffn / tp}};
    for (size_t g = 0; g < 4; g++) {
      snprintf(nm, sizeof nm, "%s_%s", base, gemms[g].suffix);
      model_gemm(m, nm, target, gemms[g].N, gemms[g].K, fp8, out, n);
    }
    model_attn(m, base, target, training, d, hq_r, hk_r, out, n);
    snprintf(nm, sizeof nm, "%s_rope", base);
    yt_node *r = model_entry(m, "rope", nm, target);
    model_set_int(r, "head_dim", d);
    model_set_int(r, "heads_q", hq_r);
    model_set_int(r, "heads_k", hk_r);
    model_set(r, "table", "false");
    if (theta && theta->kind == YT_SCALAR) model_set(r, "theta", theta->value);
    model_add(out, n, r);
    if (serving_ok) model_serving(m, serving, base, target, d, hq_r, hk_r, out, n);
  }
  if (!c->errors) model_norm(m, name->value, target, training, hidden, out, n);
}

int model_expand(const char *file, const yt_node *models, yt_node ***out, size_t *n) {
  model_ctx c = {file, models, 0};
  if (models->kind == YT_SEQ)
    for (size_t i = 0; i < models->n; i++) model_one(&c, models->items[i], out, n);
  else
    model_one(&c, models, out, n);
  return c.errors;
}

static void model_node_free(yt_node *n) {
  for (size_t i = 0; i < n->n; i++) model_node_free(n->items[i]);
  free(n->items);
  free(n->value);
  free(n);
}

void model_free(yt_node **v, size_t n) {
  for (size_t i = 0; i < n; i++) model_node_free(v[i]);
  free(v);
}
