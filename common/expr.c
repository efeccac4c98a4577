/* expr.c: recursive descent over the grammar in expr.h. */
#include "expr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const char *s;
  ex_lookup lookup;
  const void *ctx;
  char *err;
  size_t errlen;
  int depth, failed;
} ex_state;

static long long ex_fail(ex_state *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static long long ex_fail(ex_state *e, const char *fmt, ...) {
  if (!e->failed && e->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, e->errlen, fmt, ap);
    va_end(ap);
  }
  e->failed = 1;
  return 0;
}

static void ex_ws(ex_state *e) {
  while (*e->s == ' ') e->s++;
}

/* Consumes the operator op when it comes next (and is not the start of a
   longer one: '<' is not '<='). */
static int ex_eat(ex_state *e, const char *op) {
  ex_ws(e);
  size_t n = strlen(op);
  if (strncmp(e->s, op, n)) return 0;
  if (n == 1 && (op[0] == '<' || op[0] == '>' || op[0] == '!') && e->s[1] == '=') return 0;
  e->s += n;
  return 1;
}

static int ex_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int ex_is_digit(char c) { return c >= '0' && c <= '9'; }

static long long ex_or(ex_state *e);

static long long ex_number(ex_state *e) {
  long long v = 0;
  for (; ex_is_digit(*e->s); e->s++)
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *e->s - '0', &v))
      return ex_fail(e, "a number too large");
  if (ex_is_alpha(*e->s)) return ex_fail(e, "a number followed by '%c'", *e->s);
  return v;
}

/* The n operands of f(...), after its '(' (shape: its signature, for messages). */
static int ex_args(ex_state *e, const char *f, const char *shape, long long *v, int n) {
  for (int i = 0; i < n && !e->failed; i++) {
    v[i] = ex_or(e);
    if (!e->failed && !ex_eat(e, i + 1 < n ? "," : ")"))
      ex_fail(e, i + 1 < n ? "expected ',' in %s%s" : "expected ')' after %s%s", f, shape);
  }
  return e->failed ? -1 : 0;
}

/* floor(a / b) and S(n) = n (n + 1) / 2, in 128 bits (ex_ctiles' sums). */
static __int128 ex_floordiv(__int128 a, __int128 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static __int128 ex_tri(__int128 n) { return n * (n + 1) / 2; }

/* ctiles(rows, cols, R, C): the tiles of an R x C tiling of a rows x cols
   grid that hold a pair (r, c) with c <= r + cols - rows (the attention
   templates' bottom-right causal mask): a causal kernel's computed blocks.
   Closed forms when one tile side divides the other (row blocks of R,
   each seeing cdiv(its last row + 1 + cols - rows, C) column blocks; or
   column blocks, each seen by the row blocks from its first visible row),
   else a walk over the row blocks. */
static long long ex_ctiles(ex_state *e, long long rows, long long cols, long long R, long long C) {
  if (rows < 0 || cols < 0 || R <= 0 || C <= 0)
    return ex_fail(e, "ctiles(%lld,%lld,%lld,%lld): a negative size or a tile side that is not positive", rows, cols,
                   R, C);
  if (!rows || !cols) return 0;
  const __int128 nr = (rows + R - 1) / R, nc = (cols + C - 1) / C, d = (__int128)cols - rows;
  __int128 t = 0;
  if (R % C == 0) { /* row block m (1-based, not the last) sees cdiv(R m + d, C) if R m + d > 0 */
    __int128 m0 = d < 0 ? -d / R : 0;                 /* row blocks with no visible column */
    if (m0 > nr - 1) m0 = nr - 1;
    t = (R / C) * (ex_tri(nr - 1) - ex_tri(m0)) - ex_floordiv(-d, C) * (nr - 1 - m0) + nc;
  } else if (C % R == 0) { /* column block j is seen from row max(C j - d, 0) on */
    __int128 j0 = d >= 0 ? d / C + 1 : 0;              /* column blocks every row block sees */
    if (j0 > nc) j0 = nc;
    t = j0 * nr + (nc - j0) * (nr - ex_floordiv(-d, R)) - (C / R) * (ex_tri(nc - 1) - ex_tri(j0 - 1));
  } else {
    if (nr > (1 << 24)) return ex_fail(e, "ctiles(%lld,%lld,%lld,%lld): too many row blocks", rows, cols, R, C);
    for (__int128 m = 1; m <= nr; m++) {
      __int128 x = (m < nr ? R * m : rows) + d;
      x = x < 0 ? 0 : x > cols ? cols : x;
      t += (x + C - 1) / C;
    }
  }
  if (t > 9223372036854775807LL) return ex_fail(e, "ctiles(%lld,%lld,%lld,%lld) overflows", rows, cols, R, C);
  return (long long)t;
}

static long long ex_call(ex_state *e, const char *f) {
  long long v[4];
  if (!strcmp(f, "ctiles"))
    return ex_args(e, f, "(rows,cols,R,C)", v, 4) < 0 ? 0 : ex_ctiles(e, v[0], v[1], v[2], v[3]);
  if (ex_args(e, f, "(a,b)", v, 2) < 0) return 0;
  const long long a = v[0], b = v[1];
  if (!strcmp(f, "cdiv")) {
    if (b <= 0 || a < 0) return ex_fail(e, "cdiv(%lld,%lld) of a negative value or by zero", a, b);
    return a / b + (a % b != 0);
  }
  if (!strcmp(f, "max")) return a > b ? a : b;
  /* min caps a work count at the device's size; the blocks then index that
     work as a 32-bit int, so it must fit one as the grid itself must */
  if (a > 2147483647LL || b > 2147483647LL) return ex_fail(e, "min(%lld,%lld): a count over 2^31-1", a, b);
  return a < b ? a : b;
}

static long long ex_name(ex_state *e) {
  const char *n = e->s;
  while (ex_is_alpha(*e->s) || ex_is_digit(*e->s)) e->s++;
  size_t len = (size_t)(e->s - n);
  static const char *const fns[] = {"cdiv", "min", "max", "ctiles"};
  for (int i = 0; i < 4; i++)
    if (len == strlen(fns[i]) && !memcmp(n, fns[i], len) && ex_eat(e, "(")) return ex_call(e, fns[i]);
  long long v = 0;
  char note[160] = "";
  int found = e->lookup(e->ctx, n, len, &v, note, sizeof note);
  if (found == -2) return ex_fail(e, "'%.*s' has no value here: %s", (int)len, n, note);
  if (found < 0) return ex_fail(e, "'%.*s' is not an integer parameter or argument of the kernel", (int)len, n);
  return v;
}

static long long ex_unary(ex_state *e);

static long long ex_atom(ex_state *e) {
  ex_ws(e);
  char c = *e->s;
  if (ex_is_digit(c)) return ex_number(e);
  if (ex_is_alpha(c)) return ex_name(e);
  if (c == '(') {
    e->s++;
    long long v = ex_or(e);
    return ex_eat(e, ")") ? v : ex_fail(e, "expected ')'");
  }
  return c ? ex_fail(e, "unexpected '%c'", c) : ex_fail(e, "unexpected end of the formula");
}

static long long ex_unary(ex_state *e) {
  if (++e->depth > 32) return ex_fail(e, "nested too deeply");
  long long v;
  if (ex_eat(e, "-")) {
    v = ex_unary(e);
    if (v == -9223372036854775807LL - 1) v = ex_fail(e, "the negation overflows");
    else v = -v;
  } else if (ex_eat(e, "!")) {
    v = !ex_unary(e);
  } else {
    v = ex_atom(e);
  }
  e->depth--;
  return e->failed ? 0 : v;
}

static long long ex_divide(ex_state *e, long long a, long long b, int rem) {
  if (b <= 0 || a < 0)
    return ex_fail(e, "%lld %c %lld: a negative value or a divisor that is not positive", a, rem ? '%' : '/', b);
  return rem ? a % b : a / b;
}

static long long ex_prod(ex_state *e) {
  long long v = ex_unary(e);
  for (;;) {
    int op = ex_eat(e, "*") ? '*' : ex_eat(e, "/") ? '/' : ex_eat(e, "%") ? '%' : 0;
    if (!op || e->failed) return v;
    long long w = ex_unary(e);
    if (op == '*' && __builtin_mul_overflow(v, w, &v)) return ex_fail(e, "the product overflows");
    if (op != '*') v = ex_divide(e, v, w, op == '%');
  }
}

static long long ex_sum(ex_state *e) {
  long long v = ex_prod(e);
  for (;;) {
    int op = ex_eat(e, "+") ? '+' : ex_eat(e, "-") ? '-' : 0;
    if (!op || e->failed) return v;
    long long w = ex_prod(e);
    if (op == '+' ? __builtin_add_overflow(v, w, &v) : __builtin_sub_overflow(v, w, &v))
      return ex_fail(e, "the sum overflows");
  }
}

static long long ex_cmp(ex_state *e) {
  long long a = ex_sum(e);
  static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
  for (int i = 0; i < 6; i++) {
    if (!ex_eat(e, ops[i])) continue;
    long long b = ex_sum(e);
    switch (i) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a <= b;
    case 3: return a >= b;
    case 4: return a < b;
    default: return a > b;
    }
  }
  return a;
}

/* Both sides are always evaluated: a formula's errors do not hide behind
   short-circuiting. */
static long long ex_and(ex_state *e) {
  long long v = ex_cmp(e);
  while (!e->failed && ex_eat(e, "&&")) v = ex_cmp(e) && v;
  return v;
}

static long long ex_or(ex_state *e) {
  long long v = ex_and(e);
  while (!e->failed && ex_eat(e, "||")) v = ex_and(e) || v;
  return v;
}

int ex_eval(const char *expr, ex_lookup lookup, const void *ctx, long long *out, char *err, size_t errlen) {
  ex_state e = {expr, lookup, ctx, err, errlen, 0, 0};
  if (errlen) err[0] = 0;
  long long v = ex_or(&e);
  ex_ws(&e);
  if (!e.failed && *e.s) ex_fail(&e, "unexpected '%c'", *e.s);
  if (e.failed) return -1;
  *out = v;
  return 0;
}

void ex_names(const char *expr, void (*fn)(void *ctx, const char *name, size_t len), void *ctx) {
  for (const char *s = expr; *s;) {
    if (ex_is_digit(*s)) {
      while (ex_is_digit(*s) || ex_is_alpha(*s)) s++;
      continue;
    }
    if (!ex_is_alpha(*s)) {
      s++;
      continue;
    }
    const char *n = s;
    while (ex_is_alpha(*s) || ex_is_digit(*s)) s++;
    size_t len = (size_t)(s - n);
    const char *t = s;
    while (*t == ' ') t++;
    if (*t == '(') continue; /* a function */
    int seen = 0;
    for (const char *p = expr; p < n && !seen; p++) /* earlier whole-word use */
      seen = !strncmp(p, n, len) && (p == expr || !(ex_is_alpha(p[-1]) || ex_is_digit(p[-1]))) &&
             !(ex_is_alpha(p[len]) || ex_is_digit(p[len]));
    if (!seen) fn(ctx, n, len);
  }
}
