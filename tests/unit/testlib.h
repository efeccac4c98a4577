/* testlib.h: the helpers the C tests share (tests/unit, tests/emu, tests/rt):
   checks that count failures, setup errors (t_die), seeded PRNGs, bf16
   conversions, temporary folders, reading and writing files. */
#ifndef HK_TESTLIB_H
#define HK_TESTLIB_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int t_failures, t_checks;

#define T_CHECK(cond, ...)                                              \
  do {                                                                  \
    t_checks++;                                                         \
    if (!(cond)) {                                                      \
      t_failures++;                                                     \
      if (t_failures <= 20) {                                           \
        fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__);                                   \
        fputc('\n', stderr);                                            \
      }                                                                 \
    }                                                                   \
  } while (0)

/* A failed check with its own message: "FAIL: message" for the first 30
   (tests/emu/mutant.sh looks for that prefix), counted in t_failures. */
__attribute__((format(printf, 1, 2))) static inline void t_fail(const char *fmt, ...) {
  va_list ap;
  if (++t_failures <= 30) {
    fputs("FAIL: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
  }
}

/* A setup error, not a failed check: "PROG: message" on stderr and exit
   status 2. PROG is t_prog; when t_die_note is set (T_DIE_NOTE(hkrt_error)
   in the libhkrt tests), " (hkrt_error: TEXT)" follows the message. */
static const char *t_prog = "test";
static const char *(*t_die_note)(void);
static const char *t_die_note_name;
#define T_DIE_NOTE(fn) (t_die_note = (fn), t_die_note_name = #fn)

__attribute__((format(printf, 1, 2), noreturn)) static inline void t_die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", t_prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (t_die_note) fprintf(stderr, " (%s: %s)", t_die_note_name, t_die_note());
  fputc('\n', stderr);
  exit(2);
}

/* xorshift64*: reproducible from the printed seed. */
static uint64_t t_rng;
static inline uint64_t t_rand(void) {
  t_rng ^= t_rng >> 12;
  t_rng ^= t_rng << 25;
  t_rng ^= t_rng >> 27;
  return t_rng * 2685821657736338717ull;
}
static inline unsigned t_below(unsigned n) { return (unsigned)(t_rand() % n); }

/* splitmix64 over a caller's state: each test keeps its own sequence. */
static inline uint64_t t_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform in [-1, 1), 52 bits of splitmix64. */
static inline double t_uniform(uint64_t *state) {
  return (double)(t_splitmix64(state) >> 11) * 0x1p-52 - 1.0;
}

/* bf16 from a double (through float, round to nearest even) and back. */
static inline unsigned short t_to_bf16(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
static inline double t_from_bf16(unsigned short b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* A fresh seed each run ($HKGEN_TEST_SEED repeats one), printed first. */
static inline void t_seed(const char *prog) {
  const char *env = getenv("HKGEN_TEST_SEED");
  uint64_t s = env && *env ? strtoull(env, NULL, 0)
                           : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() << 20;
  if (!s) s = 1;
  t_rng = s;
  printf("%s: seed %llu (rerun with HKGEN_TEST_SEED=%llu)\n", prog, (unsigned long long)s,
         (unsigned long long)s);
  fflush(stdout);
}

/* The bytes of s as a C string literal, for failure messages. */
static inline void t_print_c(FILE *f, const char *s, size_t n) {
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c >= 0x20 && c < 0x7f) fputc(c, f);
    else fprintf(f, "\\x%02x", c);
  }
  fputc('"', f);
}

static inline char *t_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  static char dir[512];
  snprintf(dir, sizeof dir, "%s/hkgen-unit.XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  return dir;
}

static inline int t_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Reads a whole file (NUL-terminated); NULL on failure. */
static inline char *t_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *p = malloc(cap);
  size_t r;
  while ((r = fread(p + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (n + 1 == cap) p = realloc(p, cap *= 2);
  }
  fclose(f);
  p[n] = 0;
  if (len) *len = n;
  return p;
}

static inline int t_done(const char *prog) {
  printf("%s: %d checks, %d failed\n", prog, t_checks, t_failures);
  return t_failures ? 1 : 0;
}

#endif
