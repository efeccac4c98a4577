/* hkrt_cat.h: catalogue internals shared by catalog.c (manifest, selection)
   and kernarg.c (argument checks, packing, grid, launch). */
#ifndef HKRT_CAT_H
#define HKRT_CAT_H

#include <pthread.h>

#include "hkrt_int.h"
#include "hkrt_json.h"

#define HKRT_MAX_KERNARG 4096 /* bytes: the HIP and CUDA limit for one launch */
#define HKRT_MAX_ARGS 64

/* HKRT_KA_TMAP: a 128-byte tensor map the runtime builds from other
   arguments (never given by the caller). */
typedef enum { HKRT_KA_PTR, HKRT_KA_INT, HKRT_KA_FLOAT, HKRT_KA_TMAP } hkrt_ka_class;

/* A tensor map's recipe ("tmap" of the manifest argument): the pointer
   argument it covers, a tensor of rank 2..HKRT_TMAP_MAX_RANK given innermost
   first by the parameters or arguments naming each dimension's size (dims;
   dims[0] contiguous) and the element strides of dims 1.. (integer
   arguments), the box (elements per dimension) and the swizzle. */
typedef struct {
  const char *tensor;
  unsigned rank;
  const char *dims[HKRT_TMAP_MAX_RANK], *strides[HKRT_TMAP_MAX_RANK - 1];
  unsigned box[HKRT_TMAP_MAX_RANK], swizzle;
} hkrt_tmap_recipe;

/* One kernel argument of the manifest, its C type understood. */
typedef struct {
  const char *name, *type; /* strings live in the catalogue's JSON arena */
  unsigned offset, size;
  hkrt_ka_class cls;
  unsigned elem_align;     /* pointers: the address alignment the kernel needs (its element's, or "align") */
  int align_declared;      /* the manifest's "align" raised it (the kernel's 16-byte accesses) */
  long long lo, hi;        /* integers: the range of the C type */
  hkrt_tmap_recipe tmap;   /* HKRT_KA_TMAP */
} hkrt_karg;

typedef struct {
  const char *name, *value;
} hkrt_kv;

/* A launch rule of the manifest ("checks"): a formula over the kernel's
   integer parameters and arguments that must be non-zero, and why. */
typedef struct {
  const char *rule, *why;
} hkrt_rule;

struct hkrt_kernel {
  hkrt_catalog *cat;
  size_t index; /* in the manifest */
  int line, col;
  const char *name, *op, *target, *file;
  const char *sha256; /* of file, 64 hex digits; NULL when the manifest gives none (never loaded then) */
  hkrt_kv *params; /* baked */
  size_t nparams;
  const char **rt; /* runtime_params */
  size_t nrt;
  /* what selection knows of the op, from the manifest: parameters that only
     tune (a problem may leave them out) and the defaults a problem that
     leaves a parameter out means */
  const char **tuning;
  size_t ntuning;
  hkrt_kv *defaults;
  size_t ndefaults;
  hkrt_rule *checks;
  size_t nchecks;
  const char *cost; /* modelled time of a problem, a formula ("cost"); NULL if absent */
  hkrt_karg *args;
  size_t nargs;
  unsigned args_size;
  unsigned block[3];
  unsigned dynamic_lds; /* bytes of dynamic shared memory per launch ("dynamic_lds", 0 if absent) */
  const char *grid[3];
  long long grid_max[3]; /* blocks per axis the target allows ("grid_max") */
  pthread_mutex_t lock; /* guards mod and fn: modules load at the first launch */
  hkrt_module *mod;
  hkrt_func *fn;
};

/* One entry of the manifest's "tuned" list (hkgen tune): for the problem
   (name/value pairs) on op and target, the kernel measured or estimated
   fastest. */
typedef struct {
  const char *op, *target;
  hkrt_kv *problem;
  size_t nproblem;
  const hkrt_kernel *kernel;
} hkrt_tuned;

struct hkrt_catalog {
  hkrt_device *dev;
  hkrt_tuned *tuned;
  size_t ntuned;
  char *dir, *path; /* path: DIR/manifest.json, for messages */
  hkrt_json_doc *doc;
  hkrt_kernel *kernels;
  size_t n;
};

HKRT_LOCAL const hkrt_kv *hkrt_kernel_baked(const hkrt_kernel *k, const char *name);
HKRT_LOCAL int hkrt_kernel_is_runtime(const hkrt_kernel *k, const char *name);
HKRT_LOCAL const hkrt_karg *hkrt_kernel_karg(const hkrt_kernel *k, const char *name);
/* What needs a pointer argument's alignment, for messages: its type, or the kernel's wide accesses. */
HKRT_LOCAL const char *hkrt_karg_align_why(const hkrt_karg *a);
/* Full-string decimal integer; 0 on success. */
HKRT_LOCAL int hkrt_parse_ll(const char *s, long long *out);
/* Checks the problem against the kernel: 0 when it fits, else the number of
   mismatches, described in why (", "-separated). named: baked parameters the
   problem gives. target NULL: any AMD target. */
HKRT_LOCAL int hkrt_fit(const hkrt_kernel *k, const hkrt_problem *pb, const char *target,
                        int *named, char *why, size_t whylen);
HKRT_LOCAL hkrt_status hkrt_problem_check(const hkrt_problem *pb, const char *fn);
/* Grid formulas and launch rules are common/expr.h formulas; this name
   stands for the device's multiprocessor count, for grids sized to the
   machine. */
#define HKRT_DEVICE_UNITS "device_units"

#endif
