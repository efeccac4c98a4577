/* hkrt_int.h: libhkrt internals shared by the API layer and the backends. */
#ifndef HKRT_INT_H
#define HKRT_INT_H

#include <stddef.h>

#include "hkrt.h"

#define HKRT_API __attribute__((visibility("default")))
#define HKRT_LOCAL __attribute__((visibility("hidden")))

/* Records a failure for hkrt_error() and returns status. */
HKRT_LOCAL hkrt_status hkrt_fail(hkrt_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The backend a device was opened with (catalog.c). */
HKRT_LOCAL hkrt_backend hkrt_device_backend(const hkrt_device *dev);

/* A tensor map request: a tensor of rank 2..HKRT_TMAP_MAX_RANK with elements
   of elem_bytes (2: bf16, 1: fp8 codes), dims[0] contiguous, dimension i >= 1
   strides[i - 1] bytes apart, copied in boxes of box[i] elements per
   dimension; swizzle in bytes (0, 32, 64, 128). */
#define HKRT_TMAP_MAX_RANK 4
typedef struct {
  const void *ptr;
  unsigned rank;
  unsigned long long dims[HKRT_TMAP_MAX_RANK], strides[HKRT_TMAP_MAX_RANK - 1];
  unsigned box[HKRT_TMAP_MAX_RANK];
  unsigned swizzle;
  unsigned elem_bytes;
} hkrt_tmap_req;

/* A backend: one file implements this table (emu.c via hkrt.c, gpu.c for
   CUDA and HIP). Device pointers travel as void *. */
typedef struct {
  const char *name;
  hkrt_status (*open)(const char *target, void **dev);
  void (*close)(void *dev);
  hkrt_status (*alloc)(void *dev, size_t bytes, void **ptr);
  hkrt_status (*free)(void *dev, void *ptr);
  hkrt_status (*to_device)(void *dev, void *dst, const void *src, size_t n);
  hkrt_status (*to_host)(void *dev, void *dst, const void *src, size_t n);
  /* Loads a code object from its bytes (already read and, for catalogue
     kernels, verified against the manifest's sha256); name is for messages. */
  hkrt_status (*module_load)(void *dev, const void *data, size_t len, const char *name, void **mod);
  void (*module_unload)(void *mod);
  /* args_size: the argument bytes the kernel takes, or 0 when unknown */
  hkrt_status (*function)(void *mod, const char *name, void **fn, unsigned *args_size);
  /* shared_bytes: dynamic shared memory per block (0: none) */
  hkrt_status (*launch)(void *dev, void *fn, const char *name, const unsigned grid[3],
                        const unsigned block[3], unsigned shared_bytes, const void *args,
                        size_t args_size, void *stream);
  hkrt_status (*synchronize)(void *dev);
  /* Allows launches of fn with up to `bytes` of dynamic shared memory (NULL:
     nothing to do). Called before the first launch that needs more. */
  hkrt_status (*allow_shared)(void *dev, void *fn, const char *name, unsigned bytes);
  /* Encodes a 128-byte tensor map for the copy engine (NULL: the backend has
     none; CUDA only). */
  hkrt_status (*tensor_map)(void *dev, void *out, const hkrt_tmap_req *r);
  /* The device's multiprocessors (compute units), for grids that size
     themselves to the machine (NULL: unknown to this backend). */
  hkrt_status (*units)(void *dev, long long *out);
  /* The ISA the device runs, as the target table names it (NULL: the
     backend cannot tell; then the problem or the catalogue must say). */
  hkrt_status (*arch)(void *dev, char *out, size_t n);
  /* Replaces the global address in an encoded tensor map (NULL: none). */
  hkrt_status (*tensor_map_address)(void *dev, void *map, const void *ptr);
  /* Device-side timing (NULL: no device clock, as on the emulator): events
     recorded on a stream, and the milliseconds between two (waiting for the
     second). */
  hkrt_status (*event_create)(void *dev, void **ev);
  hkrt_status (*event_record)(void *dev, void *ev, void *stream);
  hkrt_status (*event_elapsed)(void *dev, void *start, void *end, float *ms);
  void (*event_destroy)(void *dev, void *ev);
  /* For hkrt_flush_l2 (NULL: none): the device's L2 bytes, from its
     properties, and a byte fill of device memory on a stream. */
  hkrt_status (*l2_bytes)(void *dev, size_t *out);
  hkrt_status (*fill)(void *dev, void *ptr, unsigned char byte, size_t n, void *stream);
} hkrt_backend_ops;

/* dev's backend encodes r into out (128 bytes), or fails naming `who`. */
HKRT_LOCAL hkrt_status hkrt_device_tensor_map(hkrt_device *dev, const char *who, void *out,
                                              const hkrt_tmap_req *r);

/* dev's backend replaces the global address of the tensor map at map. */
HKRT_LOCAL hkrt_status hkrt_device_tensor_map_address(hkrt_device *dev, void *map, const void *ptr);

/* dev's multiprocessor count, or fails when its backend cannot tell. */
HKRT_LOCAL hkrt_status hkrt_device_units(hkrt_device *dev, long long *out);

/* A module from bytes in memory (what hkrt_module_load and the catalogue's
   verified loads share). */
HKRT_LOCAL hkrt_status hkrt_module_load_bytes(hkrt_device *dev, const void *data, size_t len, const char *name,
                                              hkrt_module **out);
/* Reads a regular file of at most max bytes whole; fd is open and is
   closed. what names it in messages. */
HKRT_LOCAL hkrt_status hkrt_read_fd(int fd, const char *what, size_t max, unsigned char **data, size_t *len);

HKRT_LOCAL extern const hkrt_backend_ops hkrt_emu_ops;
HKRT_LOCAL extern const hkrt_backend_ops hkrt_cuda_ops;
HKRT_LOCAL extern const hkrt_backend_ops hkrt_hip_ops;

/* The emulator backend (emu.c). */
typedef struct emu_device emu_device;
typedef struct emu_module emu_module;
HKRT_LOCAL hkrt_status emu_open(const char *target, emu_device **out);
HKRT_LOCAL void emu_close(emu_device *d);
HKRT_LOCAL hkrt_status emu_alloc(emu_device *d, size_t bytes, void **ptr);
HKRT_LOCAL hkrt_status emu_free(emu_device *d, void *ptr);
HKRT_LOCAL hkrt_status emu_check_range(emu_device *d, const void *p, size_t n);
HKRT_LOCAL hkrt_status emu_module_load(emu_device *d, const void *data, size_t len, const char *path,
                                       emu_module **out);
HKRT_LOCAL void emu_module_unload(emu_module *m);
HKRT_LOCAL hkrt_status emu_function(emu_module *m, const char *name, void **entry,
                                    unsigned *args_size);
HKRT_LOCAL hkrt_status emu_launch(emu_device *d, void *entry, const char *name,
                                  const unsigned grid[3], const unsigned block[3],
                                  const void *args, size_t args_size);
HKRT_LOCAL void emu_configure(emu_device *d, unsigned long long seed, unsigned lds_limit);
HKRT_LOCAL hkrt_status emu_stats_enable(emu_device *d, int on);
HKRT_LOCAL void emu_stats_get(emu_device *d, hkrt_emu_stats *out);
HKRT_LOCAL void emu_stats_reset(emu_device *d);
HKRT_LOCAL void emu_shuffle(emu_device *d, int shuffled);
/* The compute units of the emulated part (the largest of its target). */
HKRT_LOCAL long long emu_units(const emu_device *d);

/* MFMA semantics (emu_mfma.c): where lane `lane`, element `i` of an operand lives
   in the 32x32xK matrix: A (row, k), B (k, col), D (row, col). */
typedef enum { EMU_OPERAND_A, EMU_OPERAND_B, EMU_OPERAND_D } emu_operand;
HKRT_API void hkemu_mfma_layout(emu_operand which, int kpl, int lane, int i, int *row, int *col);
/* One 32x32xK bf16 MFMA for a whole wave: a[lane][kpl], b[lane][kpl], c/d[lane][16]. */
HKRT_API void hkemu_mfma_wave_32x32_bf16(int kpl, const unsigned short (*a)[8],
                                         const unsigned short (*b)[8], const float (*c)[16],
                                         float (*d)[16]);
/* One 32x32x16 fp8 MFMA for a whole wave: formats HKEMU_FP8_* of A and B,
   a[lane][0..7], b[lane][0..7] the codes, c/d[lane][16]. */
HKRT_API void hkemu_mfma_wave_32x32_f8(int fmt_a, int fmt_b, const unsigned char (*a)[16],
                                       const unsigned char (*b)[16], const float (*c)[16],
                                       float (*d)[16]);
/* The same for the 16x16xK MFMA (K = 4 * kpl): c/d use registers 0..3 of each lane. */
HKRT_API void hkemu_mfma16_layout(emu_operand which, int kpl, int lane, int i, int *row, int *col);
HKRT_API void hkemu_mfma_wave_16x16_bf16(int kpl, const unsigned short (*a)[8],
                                         const unsigned short (*b)[8], const float (*c)[16],
                                         float (*d)[16]);

#endif
