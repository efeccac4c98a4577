/* estimate.h: a performance estimate of an AMD kernel on a part (MI300X,
   MI325X, MI350X, MI355X) from its code object, without the hardware
   (`hkgen inspect --estimate`; docs/MODEL.md says the model, its assumptions,
   its three fitted constants and how well it matches published results).

   The code gives the work of one wave: its hot loop's instructions times the
   loop's trips plus the rest of the kernel once. The problem gives the
   workgroups and the op's work (op_work, from the op's descriptor or, for a
   foreign object, from --shape). A bound model turns both into a time:
   per CU, generations of resident workgroups, each as long as its busiest
   resource (MFMA pipe, VALU, LDS) or one wave's latency-bound path, whichever
   is longest; then L2 and HBM bounds over the whole grid, and a launch cost. */
#ifndef HK_ESTIMATE_H
#define HK_ESTIMATE_H

#include <stddef.h>

#include "op.h"
#include "target.h"

/* One kernel launch to estimate. */
typedef struct {
  const tgt_info *t;
  const tgt_part *part;
  const char *kernel; /* symbol in the disassembly */
  int block;          /* threads per workgroup */
  int waves_simd;     /* occupancy from registers and LDS (tgt_occupancy) */
  double blocks;      /* workgroups in the grid */
  op_work work;
} es_launch;

typedef struct {
  double seconds;
  double rate;        /* TFLOP/s when the work has matrix FLOPs, else TB/s */
  int rate_is_tbs;
  const char *limiter;
  double trips;       /* hot-loop iterations per workgroup used */
  double share[4];    /* of the dominant generation: MFMA, VALU, LDS, latency (0..1 of its time) */
} es_result;

/* Estimates l from disassembly dis. -1 with a message (a kernel without a
   loop when trips are expected, work that does not fit the code, a part
   without the figures) and no number. */
int es_estimate(const char *dis, const es_launch *l, es_result *r, char *msg, size_t n);
/* The estimate of kernel k (an op_inst with its plan) whose code object is
   at obj, for problem shape (one value per parameter) on part: the work
   from the op's descriptor, the grid from its plan, the occupancy from the
   object (inspect_est.c). -1 with a message. */
int ie_kernel_estimate(const char *obj, const op_inst *k, const long *shape, const tgt_part *part, es_launch *l,
                       es_result *r, char *msg, size_t n);
/* Every kernel of catalogue dir as an op_inst with its plan, in manifest
   order, and the path of each one's code object (malloc'd). -1 with a
   message when the manifest cannot be read or names an op or target this
   hkgen lacks. */
int ie_catalogue_read(const char *dir, op_inst **kernels, char ***objs, size_t *n);
/* The estimate of l's kernel as a formula of its problem (common/expr.h),
   for the manifest's "cost" that hkrt_select ranks kernels by: the model of
   es_estimate with the problem's workgroups (blocks, the product of the
   grid's formulas), matrix FLOPs and compulsory bytes given as formulas
   (the op's work_formula), and device_units for the part's CUs; its value
   is picoseconds on l->part (l->blocks and l->work are not read). The hot
   loop's trips scale with the matrix FLOPs where it has matrix
   instructions, else with the compulsory bytes (as es_trips with the work's
   trips 0); a kernel with matrix instructions outside its hot loop only
   has none. -1 with a message (out empty). */
int es_cost_formula(const char *dis, const es_launch *l, const char *blocks, const char *mma_flops,
                    const char *bytes, char *out, size_t n, char *msg, size_t mn);
/* The part the estimate models for target t (the build-time tile choice,
   the cost formula): the one of t that parts names (a comma-separated list
   of part names, hkgen's --part; NULL or "" for none), else t's largest
   (tgt_largest_part). */
const tgt_part *es_part_of(const tgt_info *t, const char *parts);
/* 0 when each name in parts is an AMD part the estimate has figures for,
   at most one per target; else -1 with a message naming the allowed ones. */
int es_parts_check(const char *parts, char *msg, size_t n);
/* One line: "12.3 us  1015 TFLOP/s  MFMA pipe". */
void es_format(const es_result *r, char *out, size_t n);

#endif
