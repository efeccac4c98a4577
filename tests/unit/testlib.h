/* testlib.h: the few helpers the C unit tests share (a seeded PRNG, checks
   that count failures, temporary folders, running a command). */
#ifndef HK_TESTLIB_H
#define HK_TESTLIB_H

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

/* xorshift64*: reproducible from the printed seed. */
static uint64_t t_rng;
static inline uint64_t t_rand(void) {
  t_rng ^= t_rng >> 12;
  t_rng ^= t_rng << 25;
  t_rng ^= t_rng >> 27;
  return t_rng * 2685821657736338717ull;
}
static inline unsigned t_below(unsigned n) { return (unsigned)(t_rand() % n); }

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
