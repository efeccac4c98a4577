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

/* The two operands of f(a,b), after its '('. */
static int ex_pair(ex_state *e, const char *f, long long *a, long long *b) {
  *a = ex_or(e);
  if (!e->failed && !ex_eat(e, ",")) ex_fail(e, "expected ',' in %s(a,b)", f);
  if (!e->failed) *b = ex_or(e);
  if (!e->failed && !ex_eat(e, ")")) ex_fail(e, "expected ')' after %s(a,b)", f);
  return e->failed ? -1 : 0;
}

static long long ex_call(ex_state *e, const char *f) {
  long long a, b;
  if (ex_pair(e, f, &a, &b) < 0) return 0;
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
  static const char *const fns[] = {"cdiv", "min", "max"};
  for (int i = 0; i < 3; i++)
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
