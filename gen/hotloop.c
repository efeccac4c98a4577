/* hotloop.c: the hot loop of an AMD kernel from llvm-objdump's output
   (hotloop.h says what counts as a loop and which one is hot). */
#include "hotloop.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

enum { HL_PLAIN, HL_COND, HL_JUMP, HL_END }; /* how control leaves an instruction */

typedef struct {
  unsigned long long addr, target;
  int kind, mfma;
  char mnem[48];
} hl_inst;

typedef struct {
  hl_inst *v;
  size_t n;
  int *blk;       /* block of each instruction */
  size_t nb;
  size_t *first;  /* first instruction of each block */
  int (*succ)[2]; /* successors, -1 when absent */
} hl_fn;

/* --- finding and running llvm-objdump ----------------------------------- */

static char hl_path[512];
static pthread_once_t hl_once = PTHREAD_ONCE_INIT;

static int hl_probe(const char *cand) {
  char *argv[] = {(char *)cand, "--version", NULL};
  hk_buf out;
  buf_init(&out);
  int ok = cc_run_argv(argv, &out) == 0 && strstr(out.s, "amdgcn"); /* it must know AMD GPUs */
  buf_free(&out);
  return ok;
}

/* The probe, once a process: builds disassemble on several threads. */
static void hl_find_objdump(void) {
  const char *env = getenv("HKGEN_OBJDUMP");
  const char *cands[] = {env && *env ? env : NULL, "/opt/rocm/llvm/bin/llvm-objdump",
                         "llvm-objdump-22", "llvm-objdump-21", "llvm-objdump-20", "llvm-objdump"};
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
    if (!cands[i] || (cands[i][0] == '/' && !fs_exists(cands[i]))) continue;
    if (hl_probe(cands[i])) {
      snprintf(hl_path, sizeof hl_path, "%s", cands[i]);
      return;
    }
    if (env && i == 0) return; /* an explicit choice that does not work */
  }
}

const char *hl_objdump(void) {
  pthread_once(&hl_once, hl_find_objdump);
  return hl_path[0] ? hl_path : NULL;
}

int hl_disassemble(const char *path, const char *target, hk_buf *out) {
  const char *tool = hl_objdump();
  if (!tool) return -1;
  char mcpu[64], *file = NULL;
  snprintf(mcpu, sizeof mcpu, "--mcpu=%s", target);
  /* a path that starts with '-' must not read as an option */
  if (path[0] == '-') {
    file = malloc(strlen(path) + 3);
    if (!file) return -1;
    sprintf(file, "./%s", path);
  }
  /* -t: the symbol table tells a function from a label of hand-written code */
  char *argv[] = {(char *)tool, "-d", "-t", "--no-show-raw-insn", mcpu, file ? file : (char *)path, NULL};
  int rc = cc_run_argv(argv, out);
  free(file);
  return rc == 0 ? 0 : -1;
}

/* --- parsing ------------------------------------------------------------- */

/* "0000000000001600 <name>:" for exactly this kernel. */
static int hl_is_header(const char *line, size_t len, const char *kernel) {
  size_t hex = strspn(line, "0123456789abcdef"), k = strlen(kernel);
  return hex > 0 && hex + 2 + k + 2 == len && line[hex] == ' ' && line[hex + 1] == '<' &&
         !strncmp(line + hex + 2, kernel, k) && !strncmp(line + hex + 2 + k, ">:", 2);
}

/* Whether the symbol table (llvm-objdump -t, before the disassembly) lists
   name[0..n) as a symbol that is no function ("0000000000004260 l       .text
   0000000000000000 label_03D8": no 'F' in the type column): a label of
   hand-written assembly, inside the function before it. */
static int hl_is_label(const char *dis, const char *name, size_t n) {
  const char *p = strstr(dis, "SYMBOL TABLE:\n");
  if (!p) return 0;
  for (p = strchr(p, '\n') + 1; *p && *p != '\n';) {
    size_t len = strcspn(p, "\n"), hex = strspn(p, "0123456789abcdef");
    if (hex > 0 && len > hex + 8 && len > n && p[len - n - 1] == ' ' && !strncmp(p + len - n, name, n))
      return p[hex + 7] != 'F';
    p += len + (p[len] == '\n');
  }
  return 0;
}

/* Whether a line after a kernel's header still belongs to it: an
   instruction, a blank line, or the header of a label (hand-written code
   names its branch targets with symbols, and llvm-objdump starts a new
   header at each); a function's header or any other text ends it. */
static int hl_in_body(const char *dis, const char *line, size_t len) {
  if (len == 0 || line[0] == '\t') return 1;
  size_t hex = strspn(line, "0123456789abcdef");
  if (hex == 0 || len < hex + 4 || line[hex] != ' ' || line[hex + 1] != '<' || strncmp(line + len - 2, ">:", 2))
    return 0;
  return hl_is_label(dis, line + hex + 2, len - hex - 4);
}

/* A branch's target from its simm16 operand (in words, from the next
   instruction). Hand-written code names it with a label ("s_branch
   label_03D8"); then the simm16 is read from the encoding that the address
   comment shows ("// 0000000055B8: BF82FB29", the low half of SOPP's word). */
static void hl_branch(hl_inst *in, const char *ops, const char *comment) {
  char *end;
  long v = strtol(ops, &end, 0);
  if (end == ops || (*end && !strchr(" \t", *end))) {
    const char *w = strstr(comment, ": ");
    v = w ? (long)(strtoul(w + 2, NULL, 16) & 0xffff) : 0;
  }
  in->target = in->addr + 4 + 4 * (long long)(short)(unsigned short)v;
}

/* "\tv_mfma_... ops  // 000000001A40: ..." -> in; 0 when the line is no instruction. */
static int hl_is_mma(const char *mnem, const tgt_info *t) {
  for (int i = 0; i < 3 && t->mma_prefix[i]; i++)
    if (!strncmp(mnem, t->mma_prefix[i], strlen(t->mma_prefix[i]))) return 1;
  return 0;
}

/* The first (last != 0: the last) "// " in line[0..len), or NULL:
   searched inside the line only (strstr on the rest of the disassembly
   costs its whole length a call under AddressSanitizer, which measures the
   string first). */
static const char *hl_comment(const char *line, size_t len, int last) {
  const char *c = NULL;
  for (size_t i = 0; i + 3 <= len && (last || !c); i++)
    if (!memcmp(line + i, "// ", 3)) c = line + i;
  return c;
}

static int hl_parse_line(const char *line, size_t len, const tgt_info *t, hl_inst *in) {
  if (line[0] != '\t') return 0;
  const char *c = hl_comment(line, len, 1);
  if (!c) return 0;
  char *end;
  in->addr = strtoull(c + 3, &end, 16);
  if (end == c + 3 || *end != ':') return 0;
  size_t m = strcspn(line + 1, " \t\n");
  if (m == 0 || m >= sizeof in->mnem) return 0;
  memcpy(in->mnem, line + 1, m);
  in->mnem[m] = 0;
  in->mfma = hl_is_mma(in->mnem, t);
  in->kind = HL_PLAIN;
  if (!strcmp(in->mnem, "s_branch")) in->kind = HL_JUMP;
  else if (!strncmp(in->mnem, "s_cbranch_", 10)) in->kind = HL_COND;
  else if (!strcmp(in->mnem, "s_endpgm") || !strcmp(in->mnem, "s_setpc_b64")) in->kind = HL_END;
  if (in->kind == HL_JUMP || in->kind == HL_COND) hl_branch(in, line + 1 + m + strspn(line + 1 + m, " \t"), c);
  return 1;
}

/* A line of the disassembly at *p (before end), copied NUL-terminated into
   buf (cut at HL_LINE - 1 bytes: no instruction is that long), and *p moved
   past it. The line parsers' string calls then read only the line
   (AddressSanitizer's strict string checks measure a string at each call,
   which on the whole disassembly made a kernel's scan quadratic). */
#define HL_LINE 1024
static size_t hl_next_line(const char **p, const char *end, char *buf) {
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  size_t len = nl ? (size_t)(nl - *p) : (size_t)(end - *p), n = len < HL_LINE - 1 ? len : HL_LINE - 1;
  memcpy(buf, *p, n);
  buf[n] = 0;
  *p += len + (nl != NULL);
  return n;
}

/* The instructions of kernel's function; -1 when it is not in dis. */
static int hl_parse(const char *dis, const char *kernel, const tgt_info *t, hl_fn *f) {
  const char *q = dis, *end = dis + strlen(dis);
  size_t cap = 0;
  int in_fn = 0;
  char p[HL_LINE];
  while (q < end) {
    size_t len = hl_next_line(&q, end, p);
    if (!in_fn) {
      in_fn = hl_is_header(p, len, kernel);
    } else {
      hl_inst in;
      if (!hl_in_body(dis, p, len)) break; /* the function's end */
      if (len && p[0] == '\t' && hl_parse_line(p, len, t, &in)) {
        if (f->n == cap) {
          cap = cap ? 2 * cap : 1024;
          hl_inst *v = realloc(f->v, cap * sizeof *v);
          if (!v) return -1;
          f->v = v;
        }
        f->v[f->n++] = in;
      }
    }
  }
  return in_fn ? 0 : -1;
}

/* --- control flow graph ---------------------------------------------------- */

/* Index of the instruction at addr, or -1. */
static long hl_at(const hl_fn *f, unsigned long long addr) {
  size_t lo = 0, hi = f->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (f->v[mid].addr < addr) lo = mid + 1;
    else hi = mid;
  }
  return lo < f->n && f->v[lo].addr == addr ? (long)lo : -1;
}

/* Basic blocks: a block starts at the entry, at a branch target and after a
   branch or an end. */
static int hl_blocks(hl_fn *f) {
  char *lead = calloc(f->n, 1);
  f->blk = malloc(f->n * sizeof *f->blk);
  f->first = malloc(f->n * sizeof *f->first);
  if (!lead || !f->blk || !f->first) {
    free(lead);
    return -1;
  }
  lead[0] = 1;
  for (size_t i = 0; i < f->n; i++) {
    if (f->v[i].kind == HL_PLAIN) continue;
    if (i + 1 < f->n) lead[i + 1] = 1;
    long t = f->v[i].kind == HL_END ? -1 : hl_at(f, f->v[i].target);
    if (t >= 0) lead[t] = 1;
  }
  f->nb = 0;
  for (size_t i = 0; i < f->n; i++) {
    if (lead[i]) f->first[f->nb++] = i;
    f->blk[i] = (int)f->nb - 1;
  }
  free(lead);
  return 0;
}

static int hl_edges(hl_fn *f) {
  f->succ = malloc(f->nb * sizeof *f->succ);
  if (!f->succ) return -1;
  for (size_t b = 0; b < f->nb; b++) {
    size_t last = b + 1 < f->nb ? f->first[b + 1] - 1 : f->n - 1;
    const hl_inst *in = &f->v[last];
    long t = in->kind == HL_COND || in->kind == HL_JUMP ? hl_at(f, in->target) : -1;
    int fall = in->kind == HL_PLAIN || in->kind == HL_COND;
    f->succ[b][0] = fall && b + 1 < f->nb ? (int)b + 1 : -1;
    f->succ[b][1] = t >= 0 ? f->blk[t] : -1;
  }
  return 0;
}

/* Whether block `to` is reachable from block `from` through blocks that lie
   between them in the address space. A jump back from an out-of-line block
   entered from before its target fails this; a loop entered in its middle
   (rotated, its condition at the bottom) passes. */
static int hl_reaches(const hl_fn *f, int from, int to, char *seen, int *stack) {
  memset(seen + from, 0, (size_t)(to - from + 1));
  int sp = 0;
  stack[sp++] = from;
  seen[from] = 1;
  while (sp) {
    int b = stack[--sp];
    if (b == to) return 1;
    for (int k = 0; k < 2; k++) {
      int s = f->succ[b][k];
      if (s < from || s > to || seen[s]) continue;
      seen[s] = 1;
      stack[sp++] = s;
    }
  }
  return 0;
}

/* --- loops ----------------------------------------------------------------- */

typedef struct {
  size_t head, last; /* instruction indices: the target and the last branch back to it */
} hl_range;

/* Backward branches on a cycle within their own range, one range per target. */
static size_t hl_loops(const hl_fn *f, hl_range *out, char *seen, int *stack) {
  size_t n = 0;
  for (size_t i = 0; i < f->n; i++) {
    const hl_inst *in = &f->v[i];
    if ((in->kind != HL_COND && in->kind != HL_JUMP) || in->target > in->addr) continue;
    long t = hl_at(f, in->target);
    if (t < 0 || !hl_reaches(f, f->blk[t], f->blk[i], seen, stack)) continue;
    size_t j = 0;
    while (j < n && out[j].head != (size_t)t) j++;
    if (j == n) out[n++].head = (size_t)t;
    out[j].last = i;
  }
  return n;
}

/* Innermost: no loop lies inside, leaving out loops without MFMAs inside
   one with them (a waterfall loop over a descriptor in the main loop). */
static int hl_innermost(const hl_range *l, const hl_loop *m, size_t n, size_t i) {
  for (size_t j = 0; j < n; j++)
    if (j != i && l[j].head >= l[i].head && l[j].last <= l[i].last && (m[j].mfma > 0 || m[i].mfma == 0)) return 0;
  return 1;
}

static void hl_measure(const hl_fn *f, const hl_range *l, hl_loop *r) {
  r->found = 1;
  r->insts = (int)(l->last - l->head + 1);
  r->mfma = 0;
  r->start = f->v[l->head].addr;
  r->end = f->v[l->last].addr;
  r->mnemonics[0] = 0;
  for (size_t i = l->head; i <= l->last; i++) {
    if (!f->v[i].mfma) continue;
    r->mfma++;
    const char *m = f->v[i].mnem, *s = r->mnemonics;
    size_t ml = strlen(m), have = strlen(s);
    int seen = 0;
    for (const char *p = s; (p = strstr(p, m)); p += ml)
      if ((p == s || p[-1] == ',') && (p[ml] == 0 || p[ml] == ',')) seen = 1;
    if (!seen && have + ml + 2 < sizeof r->mnemonics)
      snprintf(r->mnemonics + have, sizeof r->mnemonics - have, "%s%s", have ? "," : "", m);
  }
}

/* Most MFMAs, then fewest instructions, then the lowest address. */
static int hl_better(const hl_loop *a, const hl_loop *b) {
  if (!b->found) return 1;
  if (a->mfma != b->mfma) return a->mfma > b->mfma;
  if (a->insts != b->insts) return a->insts < b->insts;
  return a->start < b->start;
}

static void hl_free(hl_fn *f) {
  free(f->v);
  free(f->blk);
  free(f->first);
  free(f->succ);
}

int hl_find(const char *dis, const char *kernel, const tgt_info *t, hl_loop *r) {
  hl_fn f = {0};
  memset(r, 0, sizeof *r);
  int rc = hl_parse(dis, kernel, t, &f);
  if (rc == 0 && f.n > 0)
    rc = hl_blocks(&f) == 0 && hl_edges(&f) == 0 ? 0 : -1;
  hl_range *loops = rc == 0 && f.n ? malloc(f.n * sizeof *loops) : NULL;
  char *seen = loops ? malloc(f.nb) : NULL;
  int *stack = seen ? malloc(f.nb * sizeof *stack) : NULL;
  size_t n = stack ? hl_loops(&f, loops, seen, stack) : 0;
  free(seen);
  free(stack);
  hl_loop *m = n ? malloc(n * sizeof *m) : NULL;
  for (size_t i = 0; m && i < n; i++) hl_measure(&f, &loops[i], &m[i]);
  for (size_t i = 0; m && i < n; i++)
    if (hl_innermost(loops, m, n, i) && hl_better(&m[i], r)) *r = m[i];
  free(m);
  free(loops);
  hl_free(&f);
  return rc;
}

/* Whether a forward branch from a to b crosses the loop's first or last address. */
static int hl_crosses(const hl_loop *l, unsigned long long a, unsigned long long b) {
  return l->found && ((a < l->start && b > l->start) || (a <= l->end && b > l->end));
}

/* skips[i]: the forward branches that can jump over instruction i. */
static int *hl_skips(const hl_fn *f, const hl_loop *l) {
  int *d = calloc(f->n + 1, sizeof *d);
  if (!d) return NULL;
  for (size_t i = 0; i < f->n; i++) {
    const hl_inst *in = &f->v[i];
    /* s_cbranch_execz skips a block only when no lane is active: taken as never */
    if ((in->kind != HL_COND && in->kind != HL_JUMP) || in->target <= in->addr + 4 ||
        hl_crosses(l, in->addr, in->target) || !strcmp(in->mnem, "s_cbranch_execz"))
      continue;
    long t = hl_at(f, in->target);
    if (t < 0) continue;
    d[i + 1]++;
    d[t]--;
  }
  for (size_t i = 1; i <= f->n; i++) d[i] += d[i - 1];
  return d;
}

int hl_each(const char *dis, const char *kernel, const tgt_info *t, const hl_loop *l, hl_visit fn, void *ctx) {
  hl_fn f = {0};
  if (hl_parse(dis, kernel, t, &f) < 0) {
    hl_free(&f);
    return -1;
  }
  int *skips = hl_skips(&f, l);
  int in_fn = 0;
  size_t i = 0;
  char p[HL_LINE];
  for (const char *q = dis, *end = dis + strlen(dis); q < end && skips;) {
    size_t len = hl_next_line(&q, end, p);
    hl_inst in;
    if (!in_fn) {
      in_fn = hl_is_header(p, len, kernel);
    } else if (!hl_in_body(dis, p, len)) {
      break; /* the function's end */
    } else if (len && p[0] == '\t' && hl_parse_line(p, len, t, &in) && i < f.n) {
      const char *ops = p + 1 + strlen(in.mnem), *c = hl_comment(ops, (size_t)(p + len - ops), 0);
      size_t n = c ? (size_t)(c - ops) : (size_t)(p + len - ops);
      fn(ctx, in.mnem, ops, n, l->found && in.addr >= l->start && in.addr <= l->end, pow(0.5, skips[i++]));
    }
  }
  free(skips);
  hl_free(&f);
  return skips ? 0 : -1;
}
