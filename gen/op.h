/* op.h: the op registry. One descriptor per op (op_gemm.c, op_rope.c, ...)
   holds its parameter schema, constraints, naming, kernel-argument layout,
   block size and grid formula; its skeleton lives in templates/<op>.hip.m4. */
#ifndef HK_OP_H
#define HK_OP_H

#include <stddef.h>

#define OP_MAX_PARAMS 32
#define OP_MAX_ARGS 48
#define OP_ANY "any" /* the value of a parameter left to run time */

typedef enum { OP_INT, OP_ENUM, OP_BOOL, OP_FLOAT } op_ptype;

typedef struct {
  const char *name;
  op_ptype type;
  const char *const *choices; /* OP_ENUM: NULL-terminated allowed values */
  long min, max;              /* OP_INT: inclusive range */
  const char *def;            /* default as text; OP_ANY = run-time argument */
  int runtime_ok;             /* may be left to run time */
  const char *tag;            /* short prefix used in kernel names */
  const char *doc;
} op_param;

/* How the runtime builds a tensor-map argument (ctype "hk_tmap", 128 bytes,
   sm_90a bulk copies): the pointer argument it covers, a tensor of rank 2..4
   given innermost first by the parameters or arguments naming each
   dimension's size (dims; dims[0] is contiguous) and the element strides of
   dims 1.. (strides), the box copied at a time (elements per dimension), and
   the shared-memory swizzle in bytes. */
#define OP_TMAP_MAX_RANK 4
typedef struct {
  char tensor[16];
  int rank;
  char dims[OP_TMAP_MAX_RANK][16];
  char strides[OP_TMAP_MAX_RANK - 1][16];
  int box[OP_TMAP_MAX_RANK];
  int swizzle;
} op_tmap;

/* One kernel argument; offsets follow the C ABI of the generated struct. */
typedef struct {
  char name[32];
  char ctype[32]; /* as written in the kernel's argument struct */
  int size, align, offset;
  int ptr_align;  /* pointers: the address alignment the kernel needs, the manifest's "align" (0: its element's) */
  op_tmap tmap;   /* ctype "hk_tmap" only */
} op_arg;

struct op_desc;
struct et_ctx; /* emutest.h: one emulated kernel under test */
struct op_plan;

/* One kernel to generate: an op, a target and one value per parameter. */
typedef struct op_inst {
  const struct op_desc *op;
  const char *target;             /* static string from the target table */
  char *vals[OP_MAX_PARAMS];      /* text; OP_ANY when a run-time argument */
  char name[96];                  /* kernel symbol */
  const char *file;               /* spec it came from, for messages */
  int line, col;
  struct op_plan *plan;           /* resolved once, after validation (op_plan_resolve) */
  /* From the spec, for a choice made at build time (choose.c): the tuning
     parameters it left to hkgen (bit i: parameter i), and how the name was
     made (spec_name: base, the parameters that vary, named by the spec). */
  unsigned left;
  unsigned varies;
  int user_named;
  char base[64];
  struct op_choice *choice;       /* the choice made (NULL: none) */
} op_inst;

/* A tuning choice made at build time by the estimate (choose.c): the
   candidates' values of the parameters left to hkgen, their estimated
   times on part, and the one chosen. */
#define OP_MAX_CHOICES 27
typedef struct op_choice {
  const char *part;
  int params[4], nparams;           /* parameter indices */
  char vals[OP_MAX_CHOICES][4][16]; /* per candidate, per parameter */
  double us[OP_MAX_CHOICES];        /* estimated time; < 0: none (err says why) */
  char err[OP_MAX_CHOICES][96];
  int n, winner;                    /* winner: index, -1 when none could be estimated */
} op_choice;

#define OP_MAX_TUNABLES 24
#define OP_MAX_CHECKS 32
#define OP_FORMULA 128
#define OP_COST 1024

/* A value the descriptor decided for its template (stages, block sizes,
   whether a kernel is persistent or has a tensor map): the skeleton reads it
   as hkm_tune([NAME]) and the manifest records it under "tunables". */
typedef struct {
  char name[24];
  long value;
} op_tunable;

/* A launch rule over the kernel's integer parameters and arguments, checked
   by libhkrt before every launch ("lda >= K"), with the reason shown when
   it fails. */
typedef struct {
  char rule[OP_FORMULA];
  char why[96];
} op_check;

/* Everything about one kernel that the build, the manifest, the m4
   prologue, `hkgen test` and `hkgen explain` need, computed once by the op's
   descriptor: nothing downstream recomputes any of it. */
typedef struct op_plan {
  op_arg args[OP_MAX_ARGS];
  int nargs, args_size;
  int block;                  /* threads per block (x; y = z = 1) */
  char grid[3][OP_FORMULA];   /* per axis, a formula (common/expr.h) */
  int dynamic_lds;            /* bytes of dynamic shared memory per launch */
  op_tunable tun[OP_MAX_TUNABLES];
  int ntun;
  op_check checks[OP_MAX_CHECKS];
  int nchecks;
  /* Optional ("" for none): the kernel's modelled time for a problem, a
     formula over the op's parameters and device_units in arbitrary units
     (manifest "cost"); among kernels that fit a problem equally well,
     hkrt_select takes the lowest. */
  char cost[OP_COST];
} op_plan;

/* The work of one problem, for `hkgen inspect --estimate` (estimate.h):
   what the op computes and moves, whatever the code does. */
typedef struct {
  double flops;     /* useful floating-point operations (causal attention: the unmasked pairs) */
  double mma_flops; /* matrix-core FLOPs the kernel issues, masked and padded tiles included; 0: none */
  double bytes;     /* bytes the op must read and write in memory at least */
  double trips;     /* hot-loop iterations per workgroup on average; 0: derived from mma_flops or bytes */
} op_work;

typedef struct op_desc {
  const char *name;
  const char *doc;
  const char *skeleton; /* templates/<skeleton> */
  /* Optional: the skeleton of kernel k when a variant has its own file
     (gemm's fp8 kernels: gemm_fp8.hip.m4); NULL: .skeleton. The family's
     <name>.<family>.hip.m4 is looked for the same way. */
  const char *(*skeleton_of)(const struct op_inst *k);
  const op_param *params;
  int nparams;
  /* Parameters that tune a kernel without changing its result: a problem
     may leave them out and selection picks (NULL-terminated, or NULL). */
  const char *const *tuning;
  /* Parameters that switch on a feature (NULL-terminated, or NULL): at their
     default they are left out of the kernel's name, its source's banner and
     bindings, so that a feature added later leaves the kernels that do not
     use it as they were; a problem may leave them out (meaning the default). */
  const char *const *features;
  /* Other parameters a problem may leave out, meaning the schema's default
     (NULL-terminated, or NULL): gemm's dtype, bf16, from when it had no
     other value, so that problems written then still select. */
  const char *const *omissible;
  /* Constraints across parameters: write a message and return -1 when the
     values cannot form a kernel. */
  int (*check)(const op_inst *k, char *msg, size_t n);
  /* The kernel's plan: its tunables first (op_plan_tune), then arguments in
     order (op_arg_add on p->args), block, grid, dynamic LDS (the bytes the
     kernel allocates at launch on top of its static LDS, or 0) and the
     op's launch rules (op_plan_check). op_plan_resolve adds the schema's
     ranges of run-time parameters and the argument layout's size. */
  void (*plan)(const op_inst *k, op_plan *p);
  /* `hkgen test`: default problem sizes (one value per parameter index; baked
     parameters keep their value), and one emulated run against an fp64
     reference, giving the relative L2 error. */
  int (*emu_shapes)(const op_inst *k, long out[][OP_MAX_PARAMS], int max);
  int (*emu_run)(const op_inst *k, const long *shape, struct et_ctx *c, double *err);
  /* Optional: the default of parameter `param' on k's target when the spec
     leaves it out (NULL: the schema's def). Tuning parameters only: the
     kernel must compute the same result whatever the value. */
  const char *(*target_default)(const op_inst *k, const char *param);
  /* Optional: the work of problem `shape' (one value per parameter index,
     as emu_shapes gives them) for the estimate; -1 with a message when the
     shape cannot be estimated. */
  int (*work)(const op_inst *k, const long *shape, op_work *w, char *msg, size_t n);
  /* Optional: work's mma_flops and bytes as formulas of the problem's
     parameters (op_term), each under OP_FORMULA characters: an AMD kernel
     of an op that has them gets the estimate as its "cost" formula
     (estimate.h es_cost_formula), which hkrt_select ranks by. They must
     give work's values, with work's trips 0 (tests/pipeline/amd_select.sh
     and amd_mem_cost.sh compare the cost with inspect --estimate). Empty
     bytes: no closed form for this kernel (the kernel gets no cost). */
  void (*work_formula)(const op_inst *k, char *mma_flops, char *bytes);
  /* `hkgen bench` and `hkgen tune`: the problem timed when --shape leaves a
     run-time parameter out ("M=4096,N=4096,K=4096"; NULL: none). */
  const char *bench_shape;
} op_desc;

/* Resolves k->plan (once; a second call keeps the first). -1 with a
   message when the plan breaks a limit (too many arguments, a formula too
   long). */
int op_plan_resolve(op_inst *k, char *msg, size_t n);
/* Records tunable name = v for the template and the manifest. */
void op_plan_tune(op_plan *p, const char *name, long v);
/* A tunable recorded before (0 when absent). */
long op_tune(const op_plan *p, const char *name);
/* Adds a launch rule (a formula that must be non-zero) and its reason. */
void op_plan_check(op_plan *p, const char *rule, const char *why);
/* A formula into out (OP_FORMULA bytes); one that does not fit becomes a
   name no context knows, so that its evaluation fails loudly. */
void op_formula(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int op_is_tuning(const struct op_desc *op, const char *name);
int op_is_feature(const struct op_desc *op, const char *name);
int op_is_omissible(const struct op_desc *op, const char *name);
/* Parameter i of k is a feature at its default (op_desc.features). */
int op_feature_off(const op_inst *k, int i);

const op_desc *const *op_all(size_t *n);
const op_desc *op_find(const char *name);
int op_param_index(const op_desc *op, const char *name);
const op_param *op_param_find(const op_desc *op, const char *name);
/* Value text of a parameter; OP_ANY when left to run time. */
const char *op_val(const op_inst *k, const char *name);
int op_is_any(const op_inst *k, const char *name);
/* Integer value of a baked parameter (0 when it is a run-time argument). */
long op_int(const op_inst *k, const char *name);
/* The parameter as an expression: its value when baked, its name otherwise. */
const char *op_term(const op_inst *k, const char *name);
/* Validate one value against the schema; writes the reason on failure. */
int op_value_ok(const op_param *p, const char *v, char *msg, size_t n);
/* Appends an argument; computes its offset from the previous ones. */
void op_arg_add(op_arg *args, int *n, const char *ctype, const char *name);
/* Appends a tensor-map argument built by the runtime from recipe t. */
void op_arg_tmap(op_arg *args, int *n, const char *name, const op_tmap *t);
/* A recipe: `tensor', rank dims (innermost first), rank - 1 strides, rank
   box sizes, swizzle bytes. */
op_tmap op_tmap_make(const char *tensor, int rank, const char *const *dims, const char *const *strides,
                     const int *box, int swizzle);
/* <tensor>_stride_b, _s, _h (long, elements): batch, sequence and head strides. */
void op_arg_strides(op_arg *args, int *n, const char *tensor);
int op_args_size(const op_arg *args, int n);
/* The allowed values of a parameter as one line of text. */
void op_describe_allowed(const op_param *p, char *out, size_t n);
void op_inst_free(op_inst *k);
/* Evaluates a grid formula ("cdiv(N,128)", "batch*seq_len", "min(a,b)", "1")
   with the parameter values of shape. Returns -1 on a malformed formula or
   a name it cannot know here (device_units: the runtime's). */
int op_eval(const op_inst *k, const long *shape, const char *expr, long *out);
/* op_eval on a device of `units' compute units (device_units), as the
   estimate evaluates grids for a part. */
int op_eval_units(const op_inst *k, const long *shape, long units, const char *expr, long *out);
/* Fills shape[0..OP_MAX_PARAMS) with each parameter's baked value (0 for
   enums, `any` and unused slots). */
void op_shape_baked(const op_inst *k, long *shape);

#endif
