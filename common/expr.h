/* expr.h: the one evaluator of integer formulas that gen/ and libhkrt share:
   grid sizes and launch checks ("cdiv(N,128)", "heads_q % heads_k == 0",
   "lda >= K"). 64-bit signed arithmetic; every overflow, division by zero
   and malformed formula is an error with a reason, never a wrong value.

   expr  := or;   or := and ('||' and)*;   and := cmp ('&&' cmp)*
   cmp   := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
   sum   := prod (('+' | '-') prod)*;   prod := unary (('*' | '/' | '%') unary)*
   unary := '-' unary | '!' unary | atom
   atom  := number | name | cdiv(e,e) | min(e,e) | max(e,e) | ctiles(e,e,e,e) | '(' expr ')'
   ctiles(rows, cols, R, C): the R x C tiles of a rows x cols grid that hold
   a pair the bottom-right causal mask keeps (a causal kernel's blocks).
   Comparisons and logic give 0 or 1. '/' and '%' need a positive divisor
   and a non-negative dividend (sizes, not signed quotients). */
#ifndef HK_EXPR_H
#define HK_EXPR_H

#include <stddef.h>

/* A name's value: 0 found; -1 not a name of this context; -2 a name known
   but with no value here (the lookup writes why into note). */
typedef int (*ex_lookup)(const void *ctx, const char *name, size_t len, long long *v, char *note,
                         size_t notelen);

/* Evaluates expr; 0 and *out on success, else -1 and a reason in err. */
int ex_eval(const char *expr, ex_lookup lookup, const void *ctx, long long *out, char *err, size_t errlen);

/* Calls fn for each distinct name expr uses (functions excluded), in order
   of first use: for messages that show the values a check saw. */
void ex_names(const char *expr, void (*fn)(void *ctx, const char *name, size_t len), void *ctx);

#endif
