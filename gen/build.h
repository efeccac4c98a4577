/* build.h: spec kernels -> sources -> code objects -> catalogue. */
#ifndef HK_BUILD_H
#define HK_BUILD_H

#include "comgr.h"
#include "compile.h"
#include "spec.h"

typedef struct {
  const char *outdir;
  int jobs;
  int use_cache;
  int sources_only; /* hkgen gen */
  int quiet;
  int emulate; /* host objects for the CPU emulator instead of GPU code */
  int json;    /* machine-readable events on stdout */
  int costs;   /* AMD kernels get the estimate's cost formula (hkgen build) */
  const char *parts; /* --part: the parts estimated on (es_part_of); NULL: each target's largest */
} bd_options;

/* Builds every kernel of set; returns an exit status (HK_OK, HK_EFAIL). */
int bd_build(spec_set *set, const bd_options *o);

/* Tuning parameters the specs left to hkgen, chosen by the estimate where
   a kernel qualifies (choose.c); others stay as they are. */
void bd_choose(spec_set *set, int jobs, int quiet, const char *parts);
/* The same from the compile cache only, for hkgen explain: a kernel whose
   candidates are not all cached keeps its default, with k->choice saying
   which are missing. */
void bd_choose_cached(spec_set *set, const char *parts);

/* 0 when outdir is new, empty, or holds only what hkgen writes (target
   folders, manifests it wrote, its lock and shard marks); else an error
   naming the first foreign entry. */
int bd_check_outdir(const char *outdir);

/* Waves per SIMD a kernel can keep resident, from registers, LDS and block size. */
int bd_waves_per_simd(const char *target, const cg_kernel_meta *m, int block);

/* Whether the compiler laid out k's kernel arguments in the plan's size
   (op_args_size): 0, or -1 with the reason, naming the kernel and both
   sizes, in msg. */
int bd_check_kernargs(const op_inst *k, const cg_kernel_meta *m, char *msg, size_t n);

#endif
