/* hkrt.h: the hkgen runtime, one public header.
 *
 * A device is a backend instance: the CPU emulator of AMD CDNA waves (always
 * available), or a GPU through HIP or the CUDA driver (opened with dlopen, so
 * libhkrt links no GPU library). Modules are code objects (.hsaco, .cubin) or,
 * for the emulator, host shared objects built from the same generated source.
 * Every call returns an hkrt_status; hkrt_error() says what went wrong.
 */
#ifndef HKRT_H
#define HKRT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HKRT_OK = 0,
  HKRT_ERR_ARG,          /* a bad argument: null pointer, size, alignment */
  HKRT_ERR_NOMEM,        /* out of host or device memory */
  HKRT_ERR_IO,           /* a file could not be read */
  HKRT_ERR_NO_DRIVER,    /* the backend's library could not be loaded */
  HKRT_ERR_NO_DEVICE,    /* the driver loaded but found no device */
  HKRT_ERR_NOT_FOUND,    /* no such module, kernel or catalogue entry */
  HKRT_ERR_LAUNCH,       /* the backend refused the launch */
  HKRT_ERR_KERNEL_FAULT  /* the kernel did something illegal (emulator: out of
                            bounds, divergent wave operation, LDS over budget) */
} hkrt_status;

typedef enum { HKRT_BACKEND_EMU = 1, HKRT_BACKEND_HIP = 2, HKRT_BACKEND_CUDA = 3 } hkrt_backend;

typedef struct hkrt_device hkrt_device;
typedef struct hkrt_module hkrt_module;
typedef struct hkrt_func hkrt_func;

/* Opens a backend. target names the emulated ISA for HKRT_BACKEND_EMU
   ("gfx90a", "gfx942", "gfx950"); GPU backends ignore it. */
hkrt_status hkrt_device_open(hkrt_backend backend, const char *target, hkrt_device **out);
void hkrt_device_close(hkrt_device *dev);

/* Device memory. The emulator checks every kernel access against these blocks. */
hkrt_status hkrt_alloc(hkrt_device *dev, size_t bytes, void **ptr);
hkrt_status hkrt_free(hkrt_device *dev, void *ptr);
hkrt_status hkrt_copy_to_device(hkrt_device *dev, void *dst, const void *src, size_t bytes);
hkrt_status hkrt_copy_to_host(hkrt_device *dev, void *dst, const void *src, size_t bytes);

/* Waits for all work launched on the device. */
hkrt_status hkrt_synchronize(hkrt_device *dev);

hkrt_status hkrt_module_load(hkrt_device *dev, const char *path, hkrt_module **out);
void hkrt_module_unload(hkrt_module *mod);
hkrt_status hkrt_module_function(hkrt_module *mod, const char *name, hkrt_func **out);

/* Launches with kernel arguments packed as the manifest's kernarg layout
   (args_size bytes). stream is backend-specific; NULL for the default. */
hkrt_status hkrt_launch(hkrt_func *fn, const unsigned grid[3], const unsigned block[3],
                        const void *args, size_t args_size, void *stream);

/* hkrt_launch with shared_bytes of dynamic shared memory (LDS) per block
   (hkrt_launch: 0). CUDA: above 48 KiB, the function's
   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is raised first (once per
   size). HIP: at most 64 KiB. The emulator: 0 only. */
hkrt_status hkrt_launch_ex(hkrt_func *fn, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_bytes, const void *args, size_t args_size, void *stream);

/* Emulator settings: the seed of the wave order between barriers, and the
   LDS bytes a workgroup may allocate (default: the target's). */
hkrt_status hkrt_emu_configure(hkrt_device *dev, unsigned long long seed, unsigned lds_limit);
/* Emulator: run each launch's workgroups in an order drawn from the seed
   (shuffled != 0) rather than x fastest, then y, then z (the default). A
   kernel whose workgroups hand data to each other (a split counter, say)
   must give the same result in any order; `hkgen test` runs shuffled. */
hkrt_status hkrt_emu_shuffle(hkrt_device *dev, int shuffled);

/* Emulator statistics: what each wave-level LDS and global instruction of
   the kernels launched on dev would cost by the target's LDS bank and cache
   line rules (common/target.c). The n-th access of each lane at one call
   site between two synchronisation points (barrier, wave collective, end) is
   one instruction; lanes that do not reach it take no part. */
typedef enum { HKRT_EMU_LDS_READ, HKRT_EMU_LDS_WRITE, HKRT_EMU_GLOBAL_READ, HKRT_EMU_GLOBAL_WRITE } hkrt_emu_access;

typedef struct {
  char file[128];               /* the primitive's call site: template file and line */
  int line;
  hkrt_emu_access kind;
  unsigned bytes;               /* per lane */
  unsigned long long insts;     /* wave-level instructions */
  unsigned long long partial;   /* of which some lanes of the wave did not take part */
  unsigned long long cycles;    /* LDS: bank cycles, summed over passes (a pass: its busiest bank, 1 without lanes) */
  unsigned long long ideal;     /* LDS: the conflict-free count, one cycle per pass */
  unsigned long long req_bytes;  /* global: bytes the lanes asked for */
  unsigned long long line_bytes; /* global: bytes of the distinct cache lines each instruction touched */
  /* LDS: the instance with the most extra cycles, and the lanes and byte
     offsets of its worst pass (at most 16 shown) */
  unsigned worst_extra;
  int worst_lanes;
  unsigned char worst_lane[16];
  unsigned worst_off[16];
} hkrt_emu_site;

typedef struct {
  int banks, bank_bytes, line_bytes; /* the target's rules */
  unsigned long long lds_insts, lds_cycles, lds_ideal;
  unsigned long long global_insts, global_req_bytes, global_line_bytes;
  unsigned long long dropped; /* accesses not counted: past 1024 call sites, or out of memory */
  int nsites;
  const hkrt_emu_site *sites; /* owned by dev; valid until the next reset, enable or close */
} hkrt_emu_stats;

/* on != 0: count from now (and start from zero); 0: stop counting. */
hkrt_status hkrt_emu_stats_enable(hkrt_device *dev, int on);
/* The counts since enable or the last reset. */
hkrt_status hkrt_emu_stats_get(hkrt_device *dev, hkrt_emu_stats *out);
hkrt_status hkrt_emu_stats_reset(hkrt_device *dev);

/* Device-side timing, for benchmarks (`hkgen bench`): GPU backends only;
   the emulator has no device clock and fails with HKRT_ERR_ARG. An event
   is recorded on a stream (NULL: the default one); hkrt_event_elapsed
   waits for `end' and gives the milliseconds between the two records. */
typedef struct hkrt_event hkrt_event;
hkrt_status hkrt_event_create(hkrt_device *dev, hkrt_event **out);
hkrt_status hkrt_event_record(hkrt_event *ev, void *stream);
hkrt_status hkrt_event_elapsed(hkrt_event *start, hkrt_event *end, double *ms);
void hkrt_event_destroy(hkrt_event *ev);
/* Evicts the device's L2 before a timed run: writes a device buffer of
   twice the L2's bytes (from the device's properties; allocated at the
   first call, freed with the device) on stream. *bytes (may be NULL): the
   bytes written. GPU backends only; one thread at a time per device (the
   buffer is made at the first call). */
hkrt_status hkrt_flush_l2(hkrt_device *dev, void *stream, size_t *bytes);

/* The message of the last failed call on this thread ("" when none). */
const char *hkrt_error(void);
const char *hkrt_status_name(hkrt_status s);

/* ---- catalogues --------------------------------------------------------------
 * A catalogue is the folder `hkgen build` writes: DIR/manifest.json and the
 * code objects it names (host shared objects `<target>/<name>.emu.so` when
 * built with --emulate; the manifest then says "backend": "emulator", and only
 * an HKRT_BACKEND_EMU device opens it; other catalogues need a GPU device).
 * Kernels are chosen for a problem, their arguments checked and packed at
 * the manifest's offsets, the grid computed from its formula, and the module
 * loaded at the first launch. */

typedef struct hkrt_catalog hkrt_catalog;
typedef struct hkrt_kernel hkrt_kernel; /* owned by its catalogue */

/* The ISA a device runs, as hkgen's target table names it: the emulator's
   target; for CUDA, asked of the driver (compute capability 9.0 is
   "sm_90a"; one the table lacks reads "sm_<major><minor>"); NULL for HIP
   (not asked of the driver: name the target in the problem when a catalogue
   holds several AMD targets). */
const char *hkrt_device_target(const hkrt_device *dev);

/* Reads and validates DIR/manifest.json: every kernel needs name, op, target,
   params, runtime_params, file (relative, inside DIR), kernarg {size,
   args[{name, type, offset, size}]}, block and grid. Errors name the file,
   the kernel and what is wrong. The device must outlive the catalogue. */
hkrt_status hkrt_catalog_open(hkrt_device *dev, const char *dir, hkrt_catalog **out);
/* Unloads the modules the catalogue loaded; its kernels become invalid. */
void hkrt_catalog_close(hkrt_catalog *cat);
/* The kernel of that name for target (NULL: the device's). */
hkrt_status hkrt_catalog_find(hkrt_catalog *cat, const char *name, const char *target,
                              hkrt_kernel **out);

/* One parameter of a problem, as text: {"M", "4096"}, {"layout", "nt"}. */
typedef struct {
  const char *name;
  const char *value;
} hkrt_param;

typedef struct {
  const char *op;           /* "gemm", "rope", "attn_fwd" */
  const char *target;       /* NULL: the device's (any AMD target for HIP) */
  const hkrt_param *params; /* nparams name/value pairs, names distinct */
  size_t nparams;
} hkrt_problem;

/* Chooses the kernel for a problem. A kernel fits when
   - its op and target are the problem's;
   - every parameter it bakes equals the problem's value (numbers compare as
     numbers, other values as text), where a baked parameter the problem
     leaves out fits only if it is
       . a tuning parameter of the op, which does not change the result
         beyond rounding (gemm: tile_m, tile_n, split_k, persistent): the
         selection picks it, or
       . the op's default, written below (dtype=bf16 for gemm, rope, attn_fwd);
     any other baked parameter the problem leaves out (layout, style, causal,
     head_dim, a baked N...) makes the kernel not fit: hkrt never guesses what
     a problem means;
   - every other parameter the problem gives is one of its runtime_params.
   Run-time parameters the problem leaves out may be given at launch.
   Of the kernels that fit, the one `hkgen tune` recorded for this problem
   wins (the manifest's "tuned" list: the first entry of the problem's op
   and target whose every recorded parameter the problem gives with that
   value, or leaves out where the entry's kernel bakes that value, and whose
   kernel fits); else the one baking the most of the problem's own
   parameters, then the one baking the most parameters in all, then, where
   both have a cost model (the manifest's "cost", a formula of the
   problem's values and the device's multiprocessor count: sm_90a gemm,
   gen/op_gemm.c; AMD gemm, the estimate, gen/estimate.c), one whose cost the problem's values give before one
   without, then the lower modelled time (so the split-K and 64-row variants
   win the decode and short-K problems they are for), then the first in the
   manifest. When none fits: HKRT_ERR_NOT_FOUND, and
   hkrt_error() names up to 3 nearest kernels (fewest mismatches) and why each
   does not fit. */
hkrt_status hkrt_select(hkrt_catalog *cat, const hkrt_problem *problem, hkrt_kernel **out);

const char *hkrt_kernel_name(const hkrt_kernel *k);
const char *hkrt_kernel_target(const hkrt_kernel *k);
/* The bytes of dynamic shared memory each launch of k passes (the manifest's
   "dynamic_lds"; 0 when absent). */
unsigned hkrt_kernel_dynamic_lds(const hkrt_kernel *k);

/* One kernel argument by name: a device pointer, an integer or a float. */
typedef enum { HKRT_ARG_PTR = 1, HKRT_ARG_INT = 2, HKRT_ARG_FLOAT = 3 } hkrt_arg_kind;
typedef struct {
  const char *name;
  hkrt_arg_kind kind;
  union {
    const void *p;
    long long i;
    double f;
  } v;
} hkrt_arg;

/* Initialisers: hkrt_arg args[] = {HKRT_PTR("A", a), HKRT_INT("lda", 4096)}; */
#define HKRT_PTR(n, x) {(n), HKRT_ARG_PTR, {.p = (x)}}
#define HKRT_INT(n, x) {(n), HKRT_ARG_INT, {.i = (x)}}
#define HKRT_FLOAT(n, x) {(n), HKRT_ARG_FLOAT, {.f = (x)}}

/* Checks and packs a launch without launching: args_buf receives the
   manifest's kernarg bytes (*args_size of them, padding zeroed), grid and
   block the launch shape. Checks, each with its own message:
   - every kernel argument given exactly once, no name the kernel lacks (a
     baked parameter may be given if it agrees); run-time parameters come
     from the problem unless given here too, and then both must agree;
   - pointers: not NULL, aligned to their element (2 bytes for bf16, 4 for
     float and int, 8 for long and double); integers in range of their C type;
     an integer where a float is expected is converted, never the reverse;
   - the kernel's launch rules from the manifest ("checks", formulas the
     op's descriptor wrote: the ranges of run-time parameters, relations such
     as gemm's lda >= K or attention's heads_q % heads_k == 0), the message
     naming the rule, its reason and the values it saw;
   - every grid size from 1 to 2^31 - 1. */
hkrt_status hkrt_kernel_args(hkrt_kernel *k, const hkrt_problem *problem, const hkrt_arg *args,
                             size_t nargs, void *args_buf, size_t buf_size, size_t *args_size,
                             unsigned grid[3], unsigned block[3]);

/* The kernel's function for launches with arguments packed once
   (hkrt_kernel_args, then hkrt_launch_ex): its module is loaded at the first
   call, once, after its bytes were checked against the manifest's sha256
   (never loaded otherwise). Thread-safe. */
hkrt_status hkrt_kernel_function(hkrt_kernel *k, hkrt_func **fn);

/* Where pointer argument `name' lies in the bytes hkrt_kernel_args packs,
   and the alignment its element needs, for callers that pack once and then
   patch only pointers before each hkrt_launch_ex (hkrt.py's Kernel.bind).
   HKRT_ERR_NOT_FOUND: no such argument; HKRT_ERR_ARG: not a pointer, or
   one a tensor map also holds (sm_90a: the map must be built again). */
hkrt_status hkrt_kernel_pointer_slot(const hkrt_kernel *k, const char *name, size_t *offset, size_t *align);

/* Sets pointer argument `name' to ptr in bytes hkrt_kernel_args packed
   (args_size of them), checking NULL and alignment like hkrt_kernel_args,
   and gives every tensor map built from that argument the new address
   (CUDA: cuTensorMapReplaceAddress; the map's shape and strides stay): a
   launch packed once can then run on other tensors of the same shape. */
hkrt_status hkrt_kernel_set_pointer(const hkrt_kernel *k, void *args_buf, size_t args_size, const char *name,
                                    const void *ptr);

/* hkrt_kernel_args, then the launch through hkrt_launch. A kernel for another
   target than the device's (when the device knows it) is refused. The
   kernel's module is loaded at its first launch, once, whatever the number
   of threads (the emulator itself runs one launch per device at a time). */
hkrt_status hkrt_kernel_launch(hkrt_kernel *k, const hkrt_problem *problem, const hkrt_arg *args,
                               size_t nargs, void *stream);

#ifdef __cplusplus
}
#endif

#endif
