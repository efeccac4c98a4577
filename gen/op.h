/* op.h: the op registry. One descriptor per op (op_gemm.c, op_rope.c, ...)
   holds its parameter schema, constraints, naming, kernel-argument layout,
   block size and grid formula; its skeleton lives in templates/<op>.hip.m4. */
#ifndef HK_OP_H
#define HK_OP_H

#include <stddef.h>

#define OP_MAX_PARAMS 24
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
  op_tmap tmap;   /* ctype "hk_tmap" only */
} op_arg;

struct op_desc;
struct et_ctx; /* emutest.h: one emulated kernel under test */

/* One kernel to generate: an op, a target and one value per parameter. */
typedef struct op_inst {
  const struct op_desc *op;
  const char *target;             /* static string from the target table */
  char *vals[OP_MAX_PARAMS];      /* text; OP_ANY when a run-time argument */
  char name[96];                  /* kernel symbol */
  const char *file;               /* spec it came from, for messages */
  int line, col;
} op_inst;

typedef struct op_desc {
  const char *name;
  const char *doc;
  const char *skeleton; /* templates/<skeleton> */
  const op_param *params;
  int nparams;
  /* Constraints across parameters: write a message and return -1 when the
     values cannot form a kernel. */
  int (*check)(const op_inst *k, char *msg, size_t n);
  /* Kernel arguments in order; returns their count. */
  int (*args)(const op_inst *k, op_arg *out);
  int (*block)(const op_inst *k);
  /* Grid size per axis as a formula over parameter names (text). */
  void (*grid)(const op_inst *k, char out[3][96]);
  /* `hkgen test`: default problem sizes (one value per parameter index; baked
     parameters keep their value), and one emulated run against an fp64
     reference, giving the relative L2 error. */
  int (*emu_shapes)(const op_inst *k, long out[][OP_MAX_PARAMS], int max);
  int (*emu_run)(const op_inst *k, const long *shape, struct et_ctx *c, double *err);
  /* Optional: the bytes of dynamic shared memory (LDS) kernel k allocates at
     launch on its target, on top of its static LDS; NULL or 0: none. The
     manifest records it ("dynamic_lds"), the runtime passes it at launch and
     the skeleton reads it as hkm_dynamic_lds. */
  int (*dynamic_lds)(const op_inst *k);
  /* Optional: the default of parameter `param' on k's target when the spec
     leaves it out (NULL: the schema's def). Tuning parameters only: the
     kernel must compute the same result whatever the value. */
  const char *(*target_default)(const op_inst *k, const char *param);
} op_desc;

/* k->op->dynamic_lds(k), or 0 when the op has none. */
static inline int op_dynamic_lds(const op_inst *k) {
  return k->op->dynamic_lds ? k->op->dynamic_lds(k) : 0;
}

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
/* Fills shape[0..OP_MAX_PARAMS) with each parameter's baked value (0 for
   enums, `any` and unused slots). */
void op_shape_baked(const op_inst *k, long *shape);

#endif
