/* comgr.h: AMD's code object manager, loaded with dlopen so hkgen runs (for
   clang-served targets) where comgr is missing, and picks up a newer comgr
   under /opt/rocm when one is there. */
#ifndef HK_COMGR_H
#define HK_COMGR_H

#include <stddef.h>

/* Loads comgr once. Returns 0 when it is usable. */
int cg_load(void);
/* e.g. "comgr 2.4 (/usr/lib/x86_64-linux-gnu/libamd_comgr.so.2)"; NULL when absent. */
const char *cg_identity(void);
/* Whether the loaded comgr lists amdgcn-amd-amdhsa--<target>. */
int cg_has_isa(const char *target);
/* Compiles self-contained HIP source to a code object, in process. On
   failure *log holds comgr's log (caller frees). */
int cg_compile(const char *target, const char *src, size_t srclen, const char *const *opts,
               size_t nopts, char **obj, size_t *objlen, char **log);

/* Resource figures of one kernel, read from the code object's metadata. */
typedef struct {
  char name[128];
  int vgpr, agpr, sgpr, vgpr_spill, sgpr_spill;
  int lds, scratch, kernarg_size, max_wg_size, wave_size;
  int mma_serialized; /* sm_90a: ptxas serialised the wgmma instructions (its C7520) */
  int maxnreg_ignored; /* sm_90a: ptxas dropped the setmaxnreg hand-over (its C7508) */
  /* Bytes of the explicit kernel arguments as the compiler laid them out
     (AMD: the end of the last non-hidden .args entry, whereas kernarg_size
     counts hidden arguments too; sm_90a: the cubin's parameter bank); -1
     when the object does not say. */
  int args_size;
} cg_kernel_meta;

/* Reads every kernel's metadata from an AMDGPU code object. Returns the
   number of kernels (up to max) or -1. */
int cg_read_meta(const void *obj, size_t len, cg_kernel_meta *out, int max);

#endif
