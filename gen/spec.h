/* spec.h: a YAML spec validated and expanded into kernel instances. */
#ifndef HK_SPEC_H
#define HK_SPEC_H

#include <stddef.h>

#include "op.h"

/* The fuzz build lowers it (tests/Makefile): a legal spec near 100000 kernels
   takes 7-13 s to expand under ASan, over libFuzzer's 10 s per input. */
#ifndef SPEC_MAX_KERNELS
#define SPEC_MAX_KERNELS 100000
#endif

typedef struct {
  op_inst *v;
  size_t n, cap;
} spec_set;

/* Reads path and appends its kernels to set. targets, when not NULL, is a
   comma-separated list that replaces every kernel's targets. Reports every
   problem with diag_error; returns the number of errors. */
int spec_load(const char *path, const char *targets, spec_set *set);
int spec_load_buffer(const char *name, const char *data, size_t len, const char *targets,
                     spec_set *set);
/* Checks a --target list; returns the number of errors (reported). */
int spec_targets_ok(const char *list);
/* Refuses two kernels with the same name and target; returns errors found. */
int spec_check_unique(const spec_set *set);
void spec_set_free(spec_set *set);
/* Names k again from what its spec said (k->base, k->varies,
   k->user_named) and its values now: after a build-time choice. */
void spec_name(op_inst *k);

#endif
