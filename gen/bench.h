/* bench.h: `hkgen bench` (time a catalogue's kernels on the GPU present)
   and what `hkgen tune` shares with it: problems given as --shape
   NAME=V,... and the timing of one kernel at one problem. */
#ifndef HK_BENCH_H
#define HK_BENCH_H

#include <stddef.h>

#include "emutest.h"
#include "op.h"

#define BN_MAX_PAIRS 32

/* One --shape: parameter names and their values as text, in order. */
typedef struct {
  char name[BN_MAX_PAIRS][32];
  char value[BN_MAX_PAIRS][64];
  int n;
  const char *text; /* as given, for messages */
} bn_problem;

/* Parses "NAME=V,..." (V an integer or a word); -1 with a message naming
   --shape and the bad pair. */
int bn_problem_parse(const char *text, bn_problem *pb);
/* The value pb gives for name, or NULL. */
const char *bn_problem_get(const bn_problem *pb, const char *name);
/* Fills shape for kernel k: its baked values, the op's bench_shape for its
   run-time ones, then pb's. 0 done; 1 when k bakes another value than pb
   gives, or pb names a parameter k's op lacks (why says which); -1 with a
   message (a value outside the parameter's range, a run-time parameter
   with no value). */
int bn_shape(const op_inst *k, const bn_problem *pb, long *shape, char *why, size_t n);

/* The work of k at shape (the op's `work' hook, as the estimate uses):
   *rate_tbs set when the figure to give is TB/s (no matrix FLOPs). -1 when
   the op does not describe its work. */
int bn_work(const op_inst *k, const long *shape, op_work *w, int *rate_tbs);
/* FLOP/s or bytes/s of w in TFLOP/s or TB/s for a time in microseconds. */
double bn_rate(const op_work *w, int rate_tbs, double us);

/* Median, min and max of t's runs in microseconds. */
void bn_stats(const et_timing *t, double *median, double *min, double *max);

#endif
