/* unit_expr.c: common/expr.c, the one formula evaluator of gen/ and libhkrt:
   precedence, every operator against C's own arithmetic on random values,
   overflow and division errors, names, ctiles against its definition, and a
   formula that must not parse. */
#include "expr.h"
#include "testlib.h"

typedef struct {
  long long a, b, c;
} vars;

static int lookup(const void *ctx, const char *name, size_t len, long long *v, char *note, size_t n) {
  const vars *x = ctx;
  if (len == 1 && (name[0] == 'a' || name[0] == 'b' || name[0] == 'c')) {
    *v = name[0] == 'a' ? x->a : name[0] == 'b' ? x->b : x->c;
    return 0;
  }
  if (len == 12 && !strncmp(name, "device_units", 12)) {
    snprintf(note, n, "no device");
    return -2;
  }
  return -1;
}

static long long ev(const char *f, const vars *x, int *ok, char *err, size_t n) {
  long long v = -12345;
  *ok = ex_eval(f, lookup, x, &v, err, n) == 0;
  return v;
}

#define T_EQ(f, x, want)                                                                  \
  do {                                                                                    \
    char e_[160];                                                                         \
    int ok_;                                                                              \
    long long got_ = ev(f, x, &ok_, e_, sizeof e_);                                       \
    T_CHECK(ok_ && got_ == (want), "%s with a=%lld b=%lld c=%lld: got %lld (%s), want %lld", f, \
            (x)->a, (x)->b, (x)->c, got_, ok_ ? "ok" : e_, (long long)(want));             \
  } while (0)

#define T_ERR(f, x, part)                                                                        \
  do {                                                                                           \
    char e_[160];                                                                                \
    int ok_;                                                                                     \
    ev(f, x, &ok_, e_, sizeof e_);                                                               \
    T_CHECK(!ok_ && strstr(e_, part), "%s: want an error with '%s', got %s", f, part, ok_ ? "a value" : e_); \
  } while (0)

/* ctiles by its definition: every tile, every pair of it. */
static long long ctiles_brute(long long rows, long long cols, long long R, long long C) {
  long long n = 0;
  for (long long r0 = 0; r0 < rows; r0 += R)
    for (long long c0 = 0; c0 < cols; c0 += C) {
      long long last = r0 + R - 1 < rows - 1 ? r0 + R - 1 : rows - 1; /* the tile's lowest row sees most */
      n += c0 <= last + cols - rows;
    }
  return n;
}

/* ctiles against the brute force at random sizes and tile sides (each
   closed form: R a multiple of C, C of R, neither). */
static void check_ctiles(void) {
  static const long long sides[] = {16, 32, 64, 128, 256, 48, 96};
  char f[96];
  for (int i = 0; i < 3000; i++) {
    vars x = {(long long)t_below(1200), (long long)t_below(1200), 0};
    long long R = sides[t_below(i % 3 ? 5 : 7)], C = sides[t_below(i % 3 ? 5 : 7)];
    snprintf(f, sizeof f, "ctiles(a, b, %lld, %lld)", R, C);
    T_EQ(f, &x, ctiles_brute(x.a, x.b, R, C));
  }
  vars z = {0, 0, 0}, one = {1, 1, 1};
  T_EQ("ctiles(8192, 8192, 128, 128)", &z, 64 * 65 / 2);
  T_EQ("ctiles(a, 5, 1, 1)", &one, 5);                 /* one row: every key up to the last */
  T_ERR("ctiles(4, 4, 0, 1)", &z, "not positive");
  T_ERR("ctiles(4, -1, 1, 1)", &z, "negative size");
  T_ERR("ctiles(4, 4, 1)", &z, "expected ','");
  T_ERR("ctiles(5000000000, 5000000000, 1, 1)", &z, "overflows");
}

static void names_cb(void *ctx, const char *name, size_t len) {
  char *out = ctx;
  strncat(out, name, len);
  strcat(out, ";");
}

int main(void) {
  t_seed("unit_expr");
  vars z = {0, 0, 0};
  T_EQ("1 + 2 * 3", &z, 7);
  T_EQ("(1 + 2) * 3", &z, 9);
  T_EQ("10 - 4 - 3", &z, 3);
  T_EQ("17 / 5 * 5 + 17 % 5", &z, 17);
  T_EQ("-3 + 5", &z, 2);
  T_EQ("2 < 3 && 3 <= 3 && 4 > 3 && 3 >= 3 && 3 == 3 && 2 != 3", &z, 1);
  T_EQ("1 < 0 || 0", &z, 0);
  T_EQ("!0 + !7", &z, 1);
  T_EQ("cdiv(7, 2) * 10 + min(4, 9) + max(4, 9) * 100", &z, 944);
  T_EQ("cdiv(cdiv(4097,128),2)", &z, 17);
  for (int i = 0; i < 2000; i++) {
    vars x = {(long long)t_below(1u << 30), (long long)t_below(1u << 20) + 1, (long long)t_below(1000)};
    T_EQ("a % b == 0", &x, x.a % x.b == 0);
    T_EQ("a / b * b + a % b == a", &x, 1);
    T_EQ("cdiv(a, b)", &x, (x.a + x.b - 1) / x.b);
    T_EQ("a * c - b + c", &x, x.a * x.c - x.b + x.c);
    T_EQ("a >= b && c < b || a == 0", &x, (x.a >= x.b && x.c < x.b) || x.a == 0);
    T_EQ("min(a, b) + max(a, c)", &x, (x.a < x.b ? x.a : x.b) + (x.a > x.c ? x.a : x.c));
  }
  vars big = {4611686018427387904LL, 2, 0};
  T_ERR("a * b", &big, "the product overflows");
  T_ERR("a + a", &big, "the sum overflows");
  T_ERR("0 - a - a - a", &big, "the sum overflows");
  T_ERR("99999999999999999999", &z, "a number too large");
  T_ERR("a / c", &z, "divisor");
  T_ERR("a % c", &z, "divisor");
  T_ERR("cdiv(1, 0)", &z, "by zero");
  T_ERR("min(a, 1)", &big, "over 2^31-1");
  T_ERR("d + 1", &z, "'d' is not an integer parameter");
  T_ERR("device_units", &z, "has no value here: no device");
  T_ERR("(1 + 2", &z, "expected ')'");
  T_ERR("1 +", &z, "unexpected end");
  T_ERR("1 2", &z, "unexpected '2'");
  T_ERR("2a", &z, "a number followed by 'a'");
  T_ERR("min(1 2)", &z, "expected ','");
  T_ERR("1 = 2", &z, "unexpected '='");
  char deep[200] = "";
  for (int i = 0; i < 40; i++) strcat(deep, "-");
  strcat(deep, "1");
  T_ERR(deep, &z, "nested too deeply");
  check_ctiles();
  char seen[128] = "";
  ex_names("lda >= K && cdiv(K, 64) <= lda + K * x_1", names_cb, seen);
  T_CHECK(!strcmp(seen, "lda;K;x_1;"), "names: %s", seen);
  printf("unit_expr: %d checks, %d failed\n", t_checks, t_failures);
  return t_failures ? 1 : 0;
}
