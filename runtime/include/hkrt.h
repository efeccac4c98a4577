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

/* Emulator settings: the seed of the wave order between barriers, and the
   LDS bytes a workgroup may allocate (default: the target's). */
hkrt_status hkrt_emu_configure(hkrt_device *dev, unsigned long long seed, unsigned lds_limit);

/* The message of the last failed call on this thread ("" when none). */
const char *hkrt_error(void);
const char *hkrt_status_name(hkrt_status s);

#ifdef __cplusplus
}
#endif

#endif
