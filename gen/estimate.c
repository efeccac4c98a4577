/* estimate.c: the bound model of estimate.h. Instruction costs come from
   the target table (tgt_rates) and the part's figures (tgt_part); the three
   constants below are the only fitted numbers. */
#include "estimate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotloop.h"

/* The model's fitted constants (docs/MODEL.md): the fraction of the peak
   clock a busy part sustains, the clocks a wave waits at an s_waitcnt on
   global memory (vmcnt) with work in flight, and a launch's fixed cost.
   Fitted 2026-12-01 by `tools/calibrate.py OBJ_DIR --fit` (least squares of
   log(predicted / published)) on the fit half (17) of 34 HipKittens points
   on MI355X and MI325X: 0.72, 285 clocks, 4.5 us; the held-out half's
   median error 7.6%, worst point of all 34%, Spearman 0.998 (docs/MODEL.md).
   HKGEN_ESTIMATE_K="c,w,l" (several sets separated by ';' for the fit, one
   "fit" line per set on stderr) replaces them. */
typedef struct {
  double clock, mem_wait, launch_us;
} es_consts;
static const es_consts es_fit = {0.72, 285.0, 4.5};

/* Not fitted: the clocks a wave waits at an LDS or scalar-load wait
   (lgkmcnt) or a barrier, a round trip through the LDS pipe; and the issue
   cost of an LDS or memory instruction (one wave64 instruction, 4 clocks). */
#define ES_LGKM_WAIT 64.0
#define ES_MEM_ISSUE 4.0

/* One wave's instruction mix over a stretch of code. */
typedef struct {
  double mfma_clk, mfma_flops; /* MFMA pipe clocks and matrix FLOPs */
  double valu_clk;             /* VALU clocks, transcendentals included */
  double salu_clk;             /* scalar, branch and s_nop clocks */
  double lds_ops, lds_bytes;   /* LDS instructions and bytes (LDS DMA writes included) */
  double vm_ops, vm_bytes;     /* global loads, stores and atomics, bytes requested */
  double vm_waits, lgkm_waits, barriers;
} es_mix;

typedef struct {
  const tgt_info *t;
  es_mix loop, rest; /* weighted by the share of runs that reach each instruction */
  es_mix rest_all;   /* the rest unweighted: all of it run once */
  /* a wait costs only when something it waits for is in flight: pass 0
     notes whether the loop issues global (vm) and LDS/scalar (lgkm) work,
     in flight again at its head on every trip after the first */
  int pass, loop_vm, loop_lgkm, pend_vm, pend_lgkm, was_in_loop;
} es_scan;

/* a + k b, mix by mix */
static es_mix es_axpy(const es_mix *a, double k, const es_mix *b) {
  es_mix r;
  const double *pa = (const double *)a, *pb = (const double *)b;
  double *pr = (double *)&r;
  for (size_t i = 0; i < sizeof r / sizeof(double); i++) pr[i] = pa[i] + k * pb[i];
  return r;
}

/* --- classifying instructions -------------------------------------------- */

static int es_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* Bytes per lane of a memory mnemonic's width suffix (dwordx4, b128, u16...). */
static double es_width(const char *m) {
  static const struct {
    const char *tag;
    double bytes;
  } w[] = {{"dwordx4", 16}, {"dwordx3", 12}, {"dwordx2", 8}, {"dword", 4}, {"b128", 16}, {"b96", 12},
           {"b64", 8},      {"b32", 4},      {"short", 2},   {"u16", 2},  {"i16", 2},   {"b16", 2},
           {"byte", 1},     {"u8", 1},       {"i8", 1},      {"b8", 1}};
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
    if (strstr(m, w[i].tag)) return w[i].bytes;
  return 4;
}

/* MxNxK of an MFMA mnemonic ("v_mfma_f32_32x32x16_bf16", "v_mfma_f32_16x16x16bf16_1k"),
   its FLOPs per wave and the index of its input width in tgt_rates. */
static double es_mfma_flops(const char *m, int *width) {
  const char *p = m;
  char *end;
  long d[3] = {0, 0, 0};
  for (; *p; p++) /* the first "<digits>x" is the shape */
    if (p[0] >= '0' && p[0] <= '9' && (p == m || p[-1] == '_') && (strtol(p, &end, 10), *end == 'x')) break;
  for (int i = 0; i < 3 && *p; i++) {
    d[i] = strtol(p, &end, 10);
    p = end + (*end == 'x');
  }
  const char *in = p; /* the input type, after the shape: 8-bit, 16-bit or wider */
  *width = strstr(in, "f8") || strstr(in, "fp8") || strstr(in, "bf8") || strstr(in, "i8") ? 0
           : strstr(in, "16")                                                           ? 1
                                                                                        : 2;
  double blocks = d[0] == 4 && d[1] == 4 ? 16 : 1; /* 4x4 forms compute 16 blocks */
  return 2.0 * (double)d[0] * (double)d[1] * (double)d[2] * blocks;
}

static int es_is_trans(const char *m) {
  static const char *const tr[] = {"v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_"};
  for (size_t i = 0; i < sizeof tr / sizeof tr[0]; i++)
    if (es_prefix(m, tr[i])) return 1;
  return 0;
}

/* Whether word w occurs in ops[0..n). */
static int es_has(const char *ops, size_t n, const char *w) {
  size_t k = strlen(w);
  for (size_t i = 0; i + k <= n; i++)
    if (!strncmp(ops + i, w, k)) return 1;
  return 0;
}

static void es_wait(es_scan *s, es_mix *x, const char *ops, size_t n) {
  if (es_has(ops, n, "vmcnt") && s->pend_vm) {
    x->vm_waits++;
    s->pend_vm = 0;
    s->pend_lgkm &= !es_has(ops, n, "lgkmcnt");
  } else if (es_has(ops, n, "lgkmcnt") && s->pend_lgkm) {
    x->lgkm_waits++;
    s->pend_lgkm = 0;
  }
}

/* Pass 0: what the loop has in flight at its head. */
static void es_note(es_scan *s, const char *m, int in_loop) {
  if (!in_loop) return;
  if (es_prefix(m, "buffer_") || es_prefix(m, "global_") || es_prefix(m, "flat_")) s->loop_vm = 1;
  if (es_prefix(m, "ds_") || es_prefix(m, "s_load") || es_prefix(m, "s_buffer_load")) s->loop_lgkm = 1;
}

static void es_cost(es_scan *s, es_mix *x, const char *m, const char *ops, size_t n);

/* hl_visit: pass 0 notes the loop's work in flight; pass 1 adds each
   instruction's cost, weighted by its reach, to the loop's or the rest's mix. */
static void es_visit(void *ctx, const char *m, const char *ops, size_t n, int in_loop, double reach) {
  es_scan *s = ctx;
  if (s->pass == 0) {
    es_note(s, m, in_loop);
    return;
  }
  if (in_loop && !s->was_in_loop) { /* at the loop's head: work from before it is waited for once */
    s->rest.vm_waits += s->pend_vm && !s->loop_vm;
    s->rest.lgkm_waits += s->pend_lgkm && !s->loop_lgkm;
    s->pend_vm = s->loop_vm;
    s->pend_lgkm = s->loop_lgkm;
  }
  s->was_in_loop = in_loop;
  es_mix one;
  memset(&one, 0, sizeof one);
  es_cost(s, &one, m, ops, n);
  es_mix *to = in_loop ? &s->loop : &s->rest;
  *to = es_axpy(to, reach, &one);
  if (!in_loop) s->rest_all = es_axpy(&s->rest_all, 1, &one);
}

/* The cost of one instruction for one wave, into x; notes what is in flight. */
static void es_cost(es_scan *s, es_mix *x, const char *m, const char *ops, size_t n) {
  const tgt_rates *r = s->t->rates;
  if (es_prefix(m, "v_mfma") || es_prefix(m, "v_smfmac")) {
    int w;
    double f = es_mfma_flops(m, &w), clk = f / r->mma_flops_clk[w];
    x->mfma_flops += f;
    x->mfma_clk += clk < 8 ? 8 : clk; /* two passes at least */
  } else if (es_prefix(m, "v_")) {
    x->valu_clk += es_is_trans(m) ? r->trans_clk : r->valu_clk;
  } else if (es_prefix(m, "ds_")) {
    x->lds_ops++;
    s->pend_lgkm = 1;
    double lanes = strstr(m, "read2") || strstr(m, "write2") ? 128 : 64;
    x->lds_bytes += lanes * es_width(m);
  } else if (es_prefix(m, "buffer_") || es_prefix(m, "global_") || es_prefix(m, "flat_")) {
    double b = 64 * es_width(m);
    x->vm_ops++;
    x->vm_bytes += b;
    s->pend_vm = 1;
    if (es_has(ops, n, " lds")) x->lds_bytes += b; /* a direct load into LDS writes it too */
  } else if (!strcmp(m, "s_waitcnt")) {
    es_wait(s, x, ops, n);
  } else if (!strcmp(m, "s_barrier")) {
    x->barriers++;
  } else if (es_prefix(m, "s_load") || es_prefix(m, "s_buffer_load")) {
    s->pend_lgkm = 1;
    x->salu_clk += 1;
  } else if (!strcmp(m, "s_nop")) {
    x->salu_clk += 1 + strtol(ops, NULL, 0);
  } else {
    x->salu_clk += 1;
  }
}

/* --- the model --------------------------------------------------------------- */

/* Hot-loop trips per workgroup: the problem's, or its matrix work (then its
   bytes) per wave beyond what the rest of the kernel does, over the loop's.
   Matrix work with no matrix instruction in a loop (a loop the compiler
   unrolled whole, exits included) scales the rest of the kernel instead,
   all of it counted (*rest_scale on rest_all), which must then do a quarter
   to four times the problem's work. */
static int es_trips(const es_launch *l, const hl_loop *hl, const es_scan *s, int waves, double *trips,
                    double *rest_scale, char *msg, size_t n) {
  double per_wave = l->blocks * waves, need = l->work.mma_flops / per_wave;
  *trips = l->work.trips;
  *rest_scale = 1;
  if (l->work.mma_flops > 0 && s->loop.mfma_flops + s->rest.mfma_flops == 0) {
    snprintf(msg, n, "kernel %s has no matrix instructions, but the problem has matrix work", l->kernel);
    return -1;
  }
  if (l->work.mma_flops > 0 && s->loop.mfma_flops == 0) {
    *rest_scale = need / s->rest_all.mfma_flops;
    if (*rest_scale < 0.25 || *rest_scale > 4) {
      snprintf(msg, n, "kernel %s has no hot loop with matrix instructions, and its straight-line code does "
               "%.3g of the %.3g matrix FLOPs per wave the problem needs: no estimate", l->kernel,
               s->rest_all.mfma_flops, need);
      return -1;
    }
    if (*trips == 0) *trips = hl->found ? 1 : 0; /* a waterfall loop, or none */
    return 0;
  }
  if (*trips > 0 && !hl->found) {
    snprintf(msg, n, "kernel %s has no loop, but the problem gives %g trips", l->kernel, *trips);
    return -1;
  }
  if (*trips > 0 || !hl->found) return 0;
  if (s->loop.mfma_flops == 0 && s->loop.vm_bytes == 0) {
    *trips = 1; /* no matrix or memory work in it: a waterfall loop over a uniform value, run once */
    return 0;
  }
  if (l->work.mma_flops > 0)
    *trips = (need - s->rest.mfma_flops) / s->loop.mfma_flops;
  else if (l->work.bytes > 0)
    *trips = (l->work.bytes / per_wave - s->rest.vm_bytes) / s->loop.vm_bytes;
  else {
    snprintf(msg, n, "kernel %s: its hot loop's trip count cannot be told (no matrix work or bytes in the "
             "problem to scale it by; give trips=N)", l->kernel);
    return -1;
  }
  if (*trips < 0) *trips = 0;
  return 0;
}

/* One wave's path when nothing else competes: every instruction's issue
   and every wait's latency in a row. */
static double es_serial(const es_mix *w, double mem_wait) {
  return w->mfma_clk + w->valu_clk + w->salu_clk + ES_MEM_ISSUE * (w->lds_ops + w->vm_ops) +
         mem_wait * w->vm_waits + ES_LGKM_WAIT * (w->lgkm_waits + w->barriers);
}

typedef struct {
  double t[4]; /* MFMA, VALU, LDS, latency: clocks of one generation */
  double clk;
} es_gen;

/* A generation of k resident workgroups of `waves' waves on one CU. */
static es_gen es_generation(const es_mix *w, int k, int waves, const es_launch *l, double mem_wait) {
  es_gen g;
  double wps = ceil((double)k * waves / l->t->simds);
  g.t[0] = wps * w->mfma_clk;
  g.t[1] = wps * w->valu_clk;
  g.t[2] = (double)k * waves * w->lds_bytes / l->part->lds_bw;
  g.t[3] = es_serial(w, mem_wait);
  g.clk = 0;
  for (int i = 0; i < 4; i++) g.clk = g.t[i] > g.clk ? g.t[i] : g.clk;
  return g;
}

static const char *es_names[] = {"MFMA pipe", "VALU/transcendental", "LDS bandwidth", "latency"};

static void es_model(const es_launch *l, const es_mix *w, int waves, const es_consts *k, es_result *r) {
  const tgt_part *p = l->part;
  int bpc = l->waves_simd * l->t->simds / waves; /* workgroups resident per CU */
  if (bpc < 1) bpc = 1;
  double per_cu = ceil(l->blocks / p->units), full = floor(per_cu / bpc), rem = per_cu - full * bpc;
  es_gen g = es_generation(w, bpc, waves, l, k->mem_wait);
  double cu_clk = full * g.clk + (rem > 0 ? es_generation(w, (int)rem, waves, l, k->mem_wait).clk : 0);
  double ideal_clk = l->blocks / ((double)p->units * bpc) * g.clk;
  double l2_clk = l->blocks * waves * w->vm_bytes / ((double)p->xcds * p->l2_bw);
  double hz = p->clock_mhz * 1e6 * k->clock, launch = k->launch_us * 1e-6;
  double t_cu = cu_clk / hz, t_l2 = l2_clk / hz, t_hbm = l->work.bytes / (p->hbm_tbs * 1e12);
  double body = fmax(t_cu, fmax(t_l2, t_hbm));
  r->seconds = body + launch;
  int dom = 0;
  for (int i = 1; i < 4; i++) dom = g.t[i] > g.t[dom] ? i : dom;
  for (int i = 0; i < 4; i++) r->share[i] = g.clk > 0 ? g.t[i] / g.clk : 0;
  r->limiter = es_names[dom];
  if (t_l2 >= body) r->limiter = "L2 bandwidth";
  else if (t_hbm >= body) r->limiter = "HBM bandwidth";
  else if (cu_clk > 0 && (cu_clk - ideal_clk) / cu_clk > 0.25) r->limiter = "grid tail";
  if (launch > body) r->limiter = "launch";
  /* TFLOP/s for matrix work, TB/s for the rest (norms, RoPE: bandwidth is their measure) */
  r->rate_is_tbs = !(l->work.flops > 0 && l->work.mma_flops > 0);
  double work = r->rate_is_tbs ? l->work.bytes : l->work.flops;
  r->rate = work / r->seconds / 1e12;
}

/* HKGEN_ESTIMATE_K: "clock,mem_wait,launch_us[;...]"; the fitted set when unset. */
static int es_consts_from_env(es_consts *out, int max) {
  const char *e = getenv("HKGEN_ESTIMATE_K");
  if (!e || !*e) {
    out[0] = es_fit;
    return 1;
  }
  int n = 0;
  for (const char *p = e; *p && n < max;) {
    es_consts c;
    int used = 0;
    if (sscanf(p, "%lf,%lf,%lf%n", &c.clock, &c.mem_wait, &c.launch_us, &used) != 3 || c.clock <= 0) break;
    out[n++] = c;
    p += used;
    p += *p == ';';
  }
  return n;
}

/* The part's figures, the workgroup's waves and the code's mixes: what
   es_estimate and es_cost_formula share. -1 with a message. */
static int es_scan_kernel(const char *dis, const es_launch *l, int *waves, hl_loop *hl, es_scan *s, char *msg,
                          size_t n) {
  if (!l->t->rates || !l->part->lds_bw || !l->part->l2_bw) {
    snprintf(msg, n, "part %s has no figures for the estimate in the target table", l->part->name);
    return -1;
  }
  *waves = (l->block + l->t->wave_size - 1) / l->t->wave_size;
  if (l->waves_simd < 1 || l->blocks < 1 || *waves < 1) {
    snprintf(msg, n, "kernel %s: %s", l->kernel,
             l->blocks < 1 ? "the grid is empty" : *waves < 1 ? "a workgroup has no threads" : "no workgroup fits a CU");
    return -1;
  }
  memset(s, 0, sizeof *s);
  s->t = l->t;
  if (hl_find(dis, l->kernel, l->t, hl) < 0 || hl_each(dis, l->kernel, l->t, hl, es_visit, s) < 0 ||
      (s->pass = 1, hl_each(dis, l->kernel, l->t, hl, es_visit, s) < 0)) {
    snprintf(msg, n, "kernel %s is not in the disassembly", l->kernel);
    return -1;
  }
  return 0;
}

int es_estimate(const char *dis, const es_launch *l, es_result *r, char *msg, size_t n) {
  memset(r, 0, sizeof *r);
  int waves;
  hl_loop hl;
  es_scan s;
  if (es_scan_kernel(dis, l, &waves, &hl, &s, msg, n) < 0) return -1;
  double scale;
  if (es_trips(l, &hl, &s, waves, &r->trips, &scale, msg, n) < 0) return -1;
  es_mix none, rest;
  memset(&none, 0, sizeof none);
  rest = scale != 1 || s.loop.mfma_flops == 0 ? es_axpy(&none, scale, l->work.mma_flops > 0 && s.loop.mfma_flops == 0
                                                                          ? &s.rest_all : &s.rest)
                                              : s.rest;
  es_mix w = es_axpy(&rest, r->trips, &s.loop);
  /* HKGEN_ESTIMATE_DEBUG: one wave's hot-loop trip on stderr (clocks; LDS and
     memory instructions, waits and barriers as counted; docs/MODEL.md) */
  if (getenv("HKGEN_ESTIMATE_DEBUG"))
    fprintf(stderr, "loop %s: mfma %.0f valu %.0f salu %.0f lds %.1f vm %.1f vmw %.2f lgkmw %.2f bar %.1f serial %.0f; trips %.1f rest serial %.0f\n",
            l->kernel, s.loop.mfma_clk, s.loop.valu_clk, s.loop.salu_clk, s.loop.lds_ops, s.loop.vm_ops, s.loop.vm_waits,
            s.loop.lgkm_waits, s.loop.barriers, es_serial(&s.loop, es_fit.mem_wait), r->trips, es_serial(&rest, es_fit.mem_wait));
  es_consts k[512];
  int nk = es_consts_from_env(k, 512);
  if (nk < 1) {
    snprintf(msg, n, "HKGEN_ESTIMATE_K must be clock,mem_wait,launch_us[;...] with clock > 0");
    return -1;
  }
  for (int i = nk - 1; i >= 0; i--) { /* the first set's result is kept */
    double trips = r->trips;
    es_model(l, &w, waves, &k[i], r);
    r->trips = trips;
    if (nk > 1) fprintf(stderr, "fit %d %s %.6g\n", i, l->kernel, r->seconds);
  }
  return 0;
}

void es_format(const es_result *r, char *out, size_t n) {
  double us = r->seconds * 1e6;
  snprintf(out, n, "%.4g %s  %.4g %s  %s", us >= 1000 ? us / 1000 : us, us >= 1000 ? "ms" : "us", r->rate,
           r->rate_is_tbs ? "TB/s" : "TFLOP/s", r->limiter);
}

/* --- the model as a formula (the manifest's "cost") --------------------------
   es_model with the problem left to run time. Of a problem only the grid,
   the matrix FLOPs and the compulsory bytes enter the model, and every
   term is linear in the hot loop's trips: a generation of k resident
   workgroups lasts the longest of four lines a + b trips (MFMA pipe, VALU,
   LDS bandwidth, latency: es_generation of the rest and of one trip), the
   busiest CU runs cdiv(workgroups, CUs) of them in generations of the
   occupancy's workgroups, and the L2 term is again a + b trips per
   workgroup. The formula writes each coefficient in picoseconds on the
   part (its clock at the fitted sustained fraction), trips in 1/1024 of a
   trip, and the CUs as the device's (device_units, the part's under the
   emulator). Integer rounding moves a time by well under 0.1%. */

typedef struct {
  long long a, b; /* ps, and ps per trip */
} es_line;

/* a formula's text for line x with trips written as tq (1024ths of a trip) */
static void es_line_put(hk_buf *f, const es_line *x, const char *tq) {
  if (x->b) buf_printf(f, "(%lld+%lld*(%s)/1024)", x->a, x->b, tq);
  else buf_printf(f, "%lld", x->a);
}

/* max of lines v[0..n) that no other line bounds from above */
static void es_max_put(hk_buf *f, const es_line *v, int n, const char *tq) {
  es_line keep[8];
  int m = 0;
  for (int i = 0; i < n; i++) {
    int dominated = 0;
    for (int j = 0; j < n && !dominated; j++)
      dominated = j != i && v[j].a >= v[i].a && v[j].b >= v[i].b && (v[j].a != v[i].a || v[j].b != v[i].b || j < i);
    if (!dominated) keep[m++] = v[i];
  }
  for (int i = 0; i + 1 < m; i++) buf_puts(f, "max(");
  for (int i = 0; i < m; i++) {
    es_line_put(f, &keep[i], tq);
    if (i) buf_puts(f, ")");
    if (i + 1 < m) buf_puts(f, ",");
  }
}

/* A generation of k workgroups: its four lines, in ps. */
static void es_gen_put(hk_buf *f, const es_scan *s, int k, int waves, const es_launch *l, const es_consts *c,
                       double ps, const char *tq) {
  es_gen r = es_generation(&s->rest, k, waves, l, c->mem_wait), t = es_generation(&s->loop, k, waves, l, c->mem_wait);
  es_line v[4];
  for (int i = 0; i < 4; i++) v[i] = (es_line){llround(r.t[i] * ps), llround(t.t[i] * ps)};
  es_max_put(f, v, 4, tq);
}

int es_cost_formula(const char *dis, const es_launch *l, const char *blocks, const char *mma_flops,
                    const char *bytes, char *out, size_t n, char *msg, size_t mn) {
  int waves;
  hl_loop hl;
  es_scan s;
  es_consts k[512];
  out[0] = 0;
  if (es_scan_kernel(dis, l, &waves, &hl, &s, msg, mn) < 0) return -1;
  if (es_consts_from_env(k, 512) < 1) {
    snprintf(msg, mn, "HKGEN_ESTIMATE_K must be clock,mem_wait,launch_us[;...] with clock > 0");
    return -1;
  }
  const int mma = s.loop.mfma_flops > 0;
  if (!mma && s.rest_all.mfma_flops > 0) { /* es_trips' rest scaling has no linear form here */
    snprintf(msg, mn, "kernel %s has matrix instructions outside its hot loop only: no cost formula", l->kernel);
    return -1;
  }
  const tgt_part *p = l->part;
  const double ps = 1e6 / (p->clock_mhz * k[0].clock); /* picoseconds a clock */
  int bpc = l->waves_simd * l->t->simds / waves;       /* as es_model */
  if (bpc < 1) bpc = 1;
  char tq[3 * OP_FORMULA + 96], cus[OP_FORMULA + 32];
  /* es_trips, in 1024ths (a kernel of one trip a row, as norm's, is off by
     less than 0.1%): (the matrix FLOPs a wave needs, or without matrix
     work its compulsory bytes, less the rest's) over one trip's; no loop: 0
     trips; a loop without either: 1 */
  const double rest_w = mma ? s.rest.mfma_flops : s.rest.vm_bytes, loop_w = mma ? s.loop.mfma_flops : s.loop.vm_bytes;
  const long long rest4 = llround(rest_w * 4), loop4 = llround(loop_w * 4);
  const char *need = mma ? mma_flops : bytes;
  int w;
  if (!hl.found) w = snprintf(tq, sizeof tq, "0");
  else if (loop4 < 1) w = snprintf(tq, sizeof tq, "1024");
  else if (rest4) w = snprintf(tq, sizeof tq, "max(0,(%s)/((%s)*%d)*4-%lld)*1024/%lld", need, blocks, waves, rest4, loop4);
  else w = snprintf(tq, sizeof tq, "(%s)/((%s)*%d)*4096/%lld", need, blocks, waves, loop4);
  int w2 = snprintf(cus, sizeof cus, "cdiv(%s,device_units)", blocks);
  if (w < 0 || (size_t)w >= sizeof tq || w2 < 0 || (size_t)w2 >= sizeof cus) {
    snprintf(msg, mn, "kernel %s: its problem's formulas are too long for a cost formula", l->kernel);
    return -1;
  }
  hk_buf f;
  buf_init(&f);
  /* the CU's generations: full ones of bpc workgroups, then the remainder's */
  buf_puts(&f, "max(");
  if (bpc == 1) buf_printf(&f, "%s*", cus);
  else buf_printf(&f, "%s/%d*", cus, bpc);
  es_gen_put(&f, &s, bpc, waves, l, &k[0], ps, tq);
  for (int r = 1; r < bpc; r++) {
    buf_printf(&f, "+(%s%%%d==%d)*", cus, bpc, r);
    es_gen_put(&f, &s, r, waves, l, &k[0], ps, tq);
  }
  /* L2: every wave's requested bytes over the XCDs' bandwidth, in 1/16 ps */
  const double l2 = 16 * ps * waves / ((double)p->xcds * p->l2_bw);
  buf_printf(&f, ",max((%s)*", blocks);
  es_line_put(&f, &(es_line){llround(s.rest.vm_bytes * l2), llround(s.loop.vm_bytes * l2)}, tq);
  /* HBM: compulsory bytes at the part's bandwidth (1 TB/s is a byte a ps) */
  buf_printf(&f, "/16,(%s)*1000/%lld))+%lld", bytes, llround(p->hbm_tbs * 1000), llround(k[0].launch_us * 1e6));
  int ok = f.len < n;
  if (ok) memcpy(out, f.s, f.len + 1);
  else snprintf(msg, mn, "kernel %s: its cost formula would be %zu characters, over %zu", l->kernel, f.len, n - 1);
  buf_free(&f);
  return ok ? 0 : -1;
}

const tgt_part *es_part_of(const tgt_info *t, const char *parts) {
  for (const char *p = parts; p && *p;) {
    size_t len = strcspn(p, ",");
    for (int i = 0; i < t->nparts; i++)
      if (strlen(t->parts[i].name) == len && !strncmp(t->parts[i].name, p, len)) return &t->parts[i];
    p += len + (p[len] == ',');
  }
  return tgt_largest_part(t);
}

int es_parts_check(const char *parts, char *msg, size_t n) {
  const tgt_info *seen[16];
  int nseen = 0;
  for (const char *p = parts; p && *p;) {
    size_t len = strcspn(p, ",");
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(len < 31 ? len : 31), p);
    const tgt_info *t = NULL;
    const tgt_part *part = len < 31 ? tgt_part_find(name, &t) : NULL;
    if (!part || !tgt_is_amd(t) || !t->rates || !part->lds_bw) {
      char list[256] = "";
      size_t nt;
      const tgt_info *all = tgt_all(&nt);
      for (size_t i = 0; i < nt; i++)
        for (int j = 0; tgt_is_amd(&all[i]) && all[i].rates && j < all[i].nparts; j++)
          if (all[i].parts[j].lds_bw)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s (%s)", list[0] ? ", " : "",
                     all[i].parts[j].name, all[i].name);
      snprintf(msg, n, "--part: '%s' is not an AMD part the estimate models; allowed: %s", name, list);
      return -1;
    }
    for (int i = 0; i < nseen; i++)
      if (seen[i] == t) {
        snprintf(msg, n, "--part: two parts of %s; give one part per target", t->name);
        return -1;
      }
    if (nseen < 16) seen[nseen++] = t;
    p += len + (p[len] == ',');
  }
  return 0;
}
