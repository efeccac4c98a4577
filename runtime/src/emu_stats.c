/* emu_stats.c: LDS bank conflicts and global cache-line traffic of emulated
   kernels, counted per call site by the target's rules (tgt_mem in
   common/target.h). Only built into a launch's path while statistics are on:
   the primitives' note is one branch otherwise. */
#include "emu_stats.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hk_emu_abi.h"

#define ES_MAX_SITES 1024
#define ES_HASH 2048 /* open addressing over the sites, at most half full */

typedef struct {
  int site;
  uint64_t mask;               /* lanes that took part */
  unsigned long long addr[64]; /* LDS byte offset or global address of each */
} es_inst;

typedef struct {
  hkrt_emu_site pub;
  const char *file; /* the module's string: the key, never read after insertion */
  unsigned count[64]; /* this round: accesses of each lane here */
  int *occ;           /* this round: the instruction of each occurrence */
  int nocc, capocc;
  int touched;
} es_site;

struct emu_stats {
  const tgt_info *t;
  es_site *sites;
  int nsites;
  int hash[ES_HASH]; /* site index + 1; 0: empty */
  es_inst *insts;    /* this round's instructions */
  int ninsts, capinsts;
  int *touched; /* sites with accesses this round */
  int ntouched;
  unsigned long long keys[64 * 16]; /* scratch: a pass's dwords, or lines */
  hkrt_emu_site *pub;               /* es_get's copy */
  unsigned long long lds_insts, lds_cycles, lds_ideal, g_insts, g_req, g_lines;
  unsigned long long dropped; /* accesses past ES_MAX_SITES sites or out of memory */
};

emu_stats *es_new(const tgt_info *t) {
  emu_stats *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->t = t;
  s->sites = calloc(ES_MAX_SITES, sizeof *s->sites);
  s->touched = calloc(ES_MAX_SITES, sizeof *s->touched);
  if (!s->sites || !s->touched) {
    es_free(s);
    return NULL;
  }
  return s;
}

void es_free(emu_stats *s) {
  if (!s) return;
  for (int i = 0; s->sites && i < s->nsites; i++) free(s->sites[i].occ);
  free(s->sites);
  free(s->touched);
  free(s->insts);
  free(s->pub);
  free(s);
}

static unsigned es_hash(const char *file, int line, int kind, unsigned bytes) {
  uint64_t h = (uint64_t)(uintptr_t)file * 0x9e3779b97f4a7c15ull;
  h ^= ((uint64_t)(unsigned)line << 8 | (uint64_t)kind << 4) * 0xbf58476d1ce4e5b9ull ^ bytes;
  return (unsigned)(h >> 40) % ES_HASH;
}

/* The site of (file, line, kind, bytes), added when new; -1 when full. */
static int es_site_of(emu_stats *s, const char *file, int line, int kind, unsigned bytes) {
  for (unsigned h = es_hash(file, line, kind, bytes);; h = (h + 1) % ES_HASH) {
    int i = s->hash[h] - 1;
    if (i < 0) break;
    const es_site *e = &s->sites[i];
    if (e->file == file && e->pub.line == line && (int)e->pub.kind == kind && e->pub.bytes == bytes) return i;
  }
  if (s->nsites == ES_MAX_SITES) return -1;
  es_site *e = &s->sites[s->nsites];
  memset(e, 0, sizeof *e);
  e->file = file;
  snprintf(e->pub.file, sizeof e->pub.file, "%s", file ? file : "?");
  e->pub.line = line;
  e->pub.kind = (hkrt_emu_access)kind;
  e->pub.bytes = bytes;
  unsigned h = es_hash(file, line, kind, bytes);
  while (s->hash[h]) h = (h + 1) % ES_HASH;
  s->hash[h] = ++s->nsites;
  return s->nsites - 1;
}

/* The instruction of lane's next access at site e, added when it is the
   first lane to get this far; NULL when out of memory. */
static es_inst *es_inst_of(emu_stats *s, int site, int lane) {
  es_site *e = &s->sites[site];
  unsigned k = e->count[lane];
  if (k == (unsigned)e->nocc) {
    if (s->ninsts == s->capinsts) {
      int cap = s->capinsts ? 2 * s->capinsts : 256;
      es_inst *v = realloc(s->insts, (size_t)cap * sizeof *v);
      if (!v) return NULL;
      s->insts = v;
      s->capinsts = cap;
    }
    if (e->nocc == e->capocc) {
      int cap = e->capocc ? 2 * e->capocc : 16;
      int *v = realloc(e->occ, (size_t)cap * sizeof *v);
      if (!v) return NULL;
      e->occ = v;
      e->capocc = cap;
    }
    s->insts[s->ninsts].site = site;
    s->insts[s->ninsts].mask = 0;
    e->occ[e->nocc++] = s->ninsts++;
  }
  e->count[lane]++;
  if (!e->touched) {
    e->touched = 1;
    s->touched[s->ntouched++] = site;
  }
  return &s->insts[e->occ[k]];
}

void es_note(emu_stats *s, int lane, int kind, unsigned long long addr, unsigned bytes, const char *file,
             int line) {
  int site = es_site_of(s, file, line, kind, bytes);
  es_inst *in = site < 0 ? NULL : es_inst_of(s, site, lane);
  if (!in) {
    s->dropped++;
    return;
  }
  in->mask |= 1ull << lane;
  in->addr[lane] = addr;
}

static int es_cmp(const void *a, const void *b) {
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return x < y ? -1 : x > y;
}

/* Bank cycles of the lanes of in that fall in pass p: the most distinct
   dwords any one bank must serve. */
static unsigned es_pass_cycles(emu_stats *s, const es_inst *in, const hkrt_emu_site *e, int p) {
  const tgt_mem *m = s->t->mem;
  int write = e->kind == HKRT_EMU_LDS_WRITE, n = 0;
  unsigned words = (e->bytes + (unsigned)m->bank_bytes - 1) / (unsigned)m->bank_bytes;
  for (int l = 0; l < 64; l++) {
    if (!(in->mask >> l & 1) || tgt_lds_pass(s->t, write, e->bytes, l) != p) continue;
    for (unsigned j = 0; j < words && n < 64 * 16; j++) {
      unsigned long long w = in->addr[l] / (unsigned)m->bank_bytes + j;
      s->keys[n++] = (w % (unsigned)m->banks) << 40 | w; /* by bank, then dword */
    }
  }
  qsort(s->keys, (size_t)n, sizeof s->keys[0], es_cmp);
  unsigned best = 0, run = 0;
  for (int i = 0; i < n; i++) {
    if (i && s->keys[i] == s->keys[i - 1]) continue; /* the same dword: broadcast */
    run = i && s->keys[i] >> 40 == s->keys[i - 1] >> 40 ? run + 1 : 1;
    if (run > best) best = run;
  }
  return best;
}

/* The lanes and offsets of pass p, for the report of the worst instance. */
static void es_keep_worst(emu_stats *s, const es_inst *in, hkrt_emu_site *e, int p, unsigned extra) {
  int write = e->kind == HKRT_EMU_LDS_WRITE;
  e->worst_extra = extra;
  e->worst_lanes = 0;
  for (int l = 0; l < 64 && e->worst_lanes < 16; l++)
    if (in->mask >> l & 1 && tgt_lds_pass(s->t, write, e->bytes, l) == p) {
      e->worst_lane[e->worst_lanes] = (unsigned char)l;
      e->worst_off[e->worst_lanes++] = (unsigned)in->addr[l];
    }
}

static void es_count_lds(emu_stats *s, const es_inst *in, hkrt_emu_site *e) {
  int write = e->kind == HKRT_EMU_LDS_WRITE, worst_p = -1;
  unsigned cycles = 0, ideal = 0, worst = 0;
  uint64_t seen = 0; /* passes with lanes (a pass index is below 64) */
  for (int l = 0; l < 64; l++)
    if (in->mask >> l & 1) seen |= 1ull << tgt_lds_pass(s->t, write, e->bytes, l);
  for (int p = 0; p < 64; p++) {
    if (!(seen >> p & 1)) continue;
    unsigned c = es_pass_cycles(s, in, e, p);
    cycles += c;
    ideal++;
    if (c > worst) {
      worst = c;
      worst_p = p;
    }
  }
  e->cycles += cycles;
  e->ideal += ideal;
  if (worst_p >= 0 && (cycles - ideal > e->worst_extra || !e->worst_lanes))
    es_keep_worst(s, in, e, worst_p, cycles - ideal);
  s->lds_insts++;
  s->lds_cycles += cycles;
  s->lds_ideal += ideal;
}

/* Requested bytes against the bytes of the distinct lines touched. */
static void es_count_global(emu_stats *s, const es_inst *in, hkrt_emu_site *e) {
  unsigned long long line = (unsigned long long)s->t->mem->line_bytes, req = 0;
  int n = 0;
  for (int l = 0; l < 64; l++) {
    if (!(in->mask >> l & 1)) continue;
    req += e->bytes;
    for (unsigned long long a = in->addr[l] / line; a <= (in->addr[l] + e->bytes - 1) / line && n < 64 * 16; a++)
      s->keys[n++] = a;
  }
  qsort(s->keys, (size_t)n, sizeof s->keys[0], es_cmp);
  unsigned long long lines = 0;
  for (int i = 0; i < n; i++) lines += !i || s->keys[i] != s->keys[i - 1];
  e->req_bytes += req;
  e->line_bytes += lines * line;
  s->g_insts++;
  s->g_req += req;
  s->g_lines += lines * line;
}

static void es_clear_round(emu_stats *s) {
  for (int i = 0; i < s->ntouched; i++) {
    es_site *e = &s->sites[s->touched[i]];
    memset(e->count, 0, sizeof e->count);
    e->nocc = 0;
    e->touched = 0;
  }
  s->ntouched = 0;
  s->ninsts = 0;
}

void es_flush(emu_stats *s, int lanes) {
  uint64_t all = lanes >= 64 ? ~0ull : (1ull << lanes) - 1;
  for (int i = 0; i < s->ninsts; i++) {
    const es_inst *in = &s->insts[i];
    hkrt_emu_site *e = &s->sites[in->site].pub;
    e->insts++;
    e->partial += in->mask != all;
    if (e->kind == HKRT_EMU_LDS_READ || e->kind == HKRT_EMU_LDS_WRITE) es_count_lds(s, in, e);
    else es_count_global(s, in, e);
  }
  es_clear_round(s);
}

void es_discard(emu_stats *s) { es_clear_round(s); }

void es_reset(emu_stats *s) {
  es_clear_round(s);
  for (int i = 0; i < s->nsites; i++) free(s->sites[i].occ);
  s->nsites = 0;
  memset(s->hash, 0, sizeof s->hash);
  s->lds_insts = s->lds_cycles = s->lds_ideal = s->g_insts = s->g_req = s->g_lines = s->dropped = 0;
}

void es_get(emu_stats *s, hkrt_emu_stats *out) {
  const tgt_mem *m = s->t->mem;
  memset(out, 0, sizeof *out);
  out->banks = m->banks;
  out->bank_bytes = m->bank_bytes;
  out->line_bytes = m->line_bytes;
  out->lds_insts = s->lds_insts;
  out->lds_cycles = s->lds_cycles;
  out->lds_ideal = s->lds_ideal;
  out->global_insts = s->g_insts;
  out->global_req_bytes = s->g_req;
  out->global_line_bytes = s->g_lines;
  out->dropped = s->dropped;
  hkrt_emu_site *v = s->nsites ? realloc(s->pub, (size_t)s->nsites * sizeof *v) : s->pub;
  if (!v) return; /* out of memory: the totals, without sites */
  s->pub = v;
  for (int i = 0; i < s->nsites; i++) v[i] = s->sites[i].pub;
  out->nsites = s->nsites;
  out->sites = v;
}
