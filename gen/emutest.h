/* emutest.h: `hkgen test`, the emulated run of generated kernels against an
   fp64 reference. Ops use these helpers in their emu_run. */
#ifndef HK_EMUTEST_H
#define HK_EMUTEST_H

#include <stddef.h>
#include <stdint.h>

#include "hkrt.h"
#include "op.h"
#include "spec.h"

typedef struct et_ctx et_ctx;

/* Device memory from the emulator: poisoned (all bytes 0xff: bf16 and fp32 NaN). */
void *et_alloc(et_ctx *c, size_t bytes);
void et_upload(et_ctx *c, void *dev, const void *host, size_t bytes);
void et_download(et_ctx *c, void *host, const void *dev, size_t bytes);
/* 1 when the run is timed (hkgen bench, hkgen tune): the op then lays its
   tensors out packed (no random padding, no alternative strides) and runs
   every sequence at full length, the case the figures describe; 0 in
   hkgen test, which draws layouts at random. */
int et_dense(const et_ctx *c);
/* Uniform in [-1, 1), from the run's seeded generator. */
double et_uniform(et_ctx *c);
uint64_t et_rand(et_ctx *c);
unsigned short et_to_bf16(double x);       /* round to nearest even */
double et_from_bf16(unsigned short b);
int et_is_nan_bf16(unsigned short b);
/* Kernel arguments by name, at the offsets of the op's kernarg layout. */
void et_arg_ptr(et_ctx *c, const char *name, const void *p);
void et_arg_int(et_ctx *c, const char *name, long v);
void et_arg_float(et_ctx *c, const char *name, double v);
/* Default shapes for an op's emu_shapes: case c gives dims[d] the value
   cases[c * ndims + d] unless the kernel bakes it; duplicates, and cases keep
   rejects (keep may be NULL), are dropped. Returns the count. */
int et_shapes_from_cases(const op_inst *k, const char *const *dims, int ndims, const long *cases,
                         int ncases, int (*keep)(const op_inst *k, const long *shape),
                         long out[][OP_MAX_PARAMS], int max);
/* The three <tensor>_stride_b/_s/_h arguments of op_arg_strides. */
void et_arg_strides(et_ctx *c, const char *tensor, long sb, long ss, long sh);
/* Launches with the grid of the op's formula and its block size. Returns 0,
   or -1 with the emulator's message recorded for the report. */
int et_launch(et_ctx *c);
/* Relative L2 error of got against ref; NaN anywhere gives +inf. */
double et_rel_l2(const double *ref, const double *got, size_t n);
void et_note(et_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forgets the arguments given so far, for a second launch in one run. */
void et_args_clear(et_ctx *c);
/* The note recorded so far (a failed launch's message, say). */
void et_note_get(const et_ctx *c, char *out, size_t n);

typedef struct {
  const char *targets;   /* --target list, or NULL for the spec's */
  const char *shapes[16]; /* --shape NAME=V,NAME=V */
  int nshapes;
  unsigned long long seed;
  int keep;              /* keep the temporary folder */
  int jobs;              /* parallel compiles, and parallel emulated runs (one device each) */
  int device;            /* --device: run on the GPU present instead of the emulator */
  int stats;             /* --stats: LDS bank conflicts and cache-line traffic per run */
} et_options;

/* `hkgen bench` and `hkgen tune`: the op's emu_run prepares a problem's
   inputs as `hkgen test --device` does (fresh random data), but its first
   launch that libhkrt accepts is timed instead of checked: `warmup'
   launches, then `runs' launches each after an L2 flush, between device
   events. No reference is computed. */
#define ET_MAX_RUNS 1000
typedef struct {
  int warmup, runs;
  double ms[ET_MAX_RUNS]; /* each timed launch, in milliseconds */
  size_t flush_bytes;     /* written before each timed launch */
} et_timing;
/* Times kernel k (kern: its catalogue entry on GPU device dev) at shape;
   0 with t->ms filled, or -1 with a message. */
int et_time(hkrt_device *dev, hkrt_kernel *kern, const op_inst *k, const long *shape, unsigned long long seed,
            et_timing *t, char *msg, size_t n);
/* "M=4096 N=4096 K=4096": the integer parameters of shape. */
void et_shape_text(const op_inst *k, const long *shape, char *out, size_t n);
/* The GPU present (CUDA, then HIP) and its target (HIP: targets, when it
   names exactly one); NULL with a message naming `who' (and hint, which
   may be NULL) when there is none. */
hkrt_device *et_gpu_open(const char *who, const char *hint, const char *targets, const char **target);

/* Runs every kernel of set on the emulator; returns an exit status. */
int et_test(const spec_set *set, const et_options *o);

#endif
