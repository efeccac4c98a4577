/* gpu.c: the CUDA driver and HIP backends. Both libraries are opened with
   dlopen at the first hkrt_device_open, so libhkrt links no GPU library:
   without a driver or a device the open fails with a clear status. Kernels
   take one argument struct, packed by the caller: CUDA gets it as the one
   entry of kernelParams, HIP as the launch's `extra` buffer. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkrt_int.h"
#include "target.h"

/* The few driver types used, as the ABI defines them. */
typedef int gpu_res;
typedef unsigned long long gpu_ptr;

typedef struct {
  const char *api;               /* "CUDA" or "HIP" */
  const char *const *libs;       /* sonames to try */
  void *lib;
  int ok;
  gpu_res (*init)(unsigned);
  gpu_res (*count)(int *);
  gpu_res (*error_string)(gpu_res, const char **);
  gpu_res (*malloc_)(gpu_ptr *, size_t);
  gpu_res (*free_)(gpu_ptr);
  gpu_res (*h2d)(gpu_ptr, const void *, size_t);
  gpu_res (*d2h)(void *, gpu_ptr, size_t);
  gpu_res (*load)(void **, const void *);
  gpu_res (*unload)(void *);
  gpu_res (*getfn)(void **, void *, const char *);
  gpu_res (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    void *, void **, void **);
  gpu_res (*sync)(void);
  gpu_res (*func_set_attr)(void *, int, int); /* CUDA, optional: cuFuncSetAttribute */
  /* CUDA, optional: cuTensorMapEncodeTiled */
  gpu_res (*tmap_encode)(void *, int, unsigned, void *, const unsigned long long *,
                         const unsigned long long *, const unsigned *, const unsigned *, int, int, int, int);
  gpu_res (*attr)(int *, int, int); /* CUDA, optional: cuDeviceGetAttribute */
  gpu_res (*tmap_replace)(void *, void *); /* CUDA, optional: cuTensorMapReplaceAddress */
  /* CUDA only: a context to make current */
  gpu_res (*device_get)(int *, int);
  gpu_res (*ctx_retain)(void **, int);
  gpu_res (*ctx_set)(void *);
  /* HIP only */
  gpu_res (*memcpy_)(void *, const void *, size_t, int);
  gpu_res (*dev_attr)(int *, int, int); /* HIP, optional: hipDeviceGetAttribute (value, attribute, device) */
  /* optional, for timing (hkrt_event_*, hkrt_flush_l2): events and a byte fill */
  gpu_res (*ev_create)(void **, unsigned); /* cuEventCreate (HIP: hipEventCreateWithFlags) */
  gpu_res (*ev_record)(void *, void *);
  gpu_res (*ev_sync)(void *);
  gpu_res (*ev_elapsed)(float *, void *, void *);
  gpu_res (*ev_destroy)(void *);
  gpu_res (*fill_async)(gpu_ptr, unsigned, size_t, void *); /* cuMemsetD8Async; hipMemsetAsync (int value) */
  void *ctx;
  void *end_marker; /* CU_LAUNCH_PARAM_END is 0, HIP_LAUNCH_PARAM_END is 3 */
} gpu_api;

static const char *const gpu_cuda_libs[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const gpu_hip_libs[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                                           "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so", NULL};

static gpu_api gpu_cuda = {.api = "CUDA", .libs = gpu_cuda_libs, .end_marker = (void *)0};
static gpu_api gpu_hip = {.api = "HIP", .libs = gpu_hip_libs, .end_marker = (void *)3};
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;

static void *gpu_sym(gpu_api *g, const char *name, int *missing) {
  void *p = dlsym(g->lib, name);
  if (!p) *missing = 1;
  return p;
}

/* Timing entry points: optional (only hkgen bench needs them). CUDA 12.8
   renamed cuEventElapsedTime to _v2; older drivers have the first name. */
static void gpu_bind_timing(gpu_api *g, int cuda) {
  *(void **)&g->ev_create = dlsym(g->lib, cuda ? "cuEventCreate" : "hipEventCreateWithFlags");
  *(void **)&g->ev_record = dlsym(g->lib, cuda ? "cuEventRecord" : "hipEventRecord");
  *(void **)&g->ev_sync = dlsym(g->lib, cuda ? "cuEventSynchronize" : "hipEventSynchronize");
  *(void **)&g->ev_elapsed = dlsym(g->lib, cuda ? "cuEventElapsedTime_v2" : "hipEventElapsedTime");
  if (cuda && !g->ev_elapsed) *(void **)&g->ev_elapsed = dlsym(g->lib, "cuEventElapsedTime");
  *(void **)&g->ev_destroy = dlsym(g->lib, cuda ? "cuEventDestroy_v2" : "hipEventDestroy");
  *(void **)&g->fill_async = dlsym(g->lib, cuda ? "cuMemsetD8Async" : "hipMemsetAsync");
}

#define GPU_BIND(g, field, name) *(void **)&(g)->field = gpu_sym((g), (name), &missing)

static hkrt_status gpu_load_library(gpu_api *g) {
  if (g->ok) return HKRT_OK;
  for (int i = 0; g->libs[i] && !g->lib; i++) g->lib = dlopen(g->libs[i], RTLD_NOW | RTLD_LOCAL);
  if (!g->lib)
    return hkrt_fail(HKRT_ERR_NO_DRIVER, "%s backend: cannot load %s (%s): is the driver installed?",
                     g->api, g->libs[0], dlerror());
  int missing = 0, cuda = g == &gpu_cuda;
  GPU_BIND(g, init, cuda ? "cuInit" : "hipInit");
  GPU_BIND(g, count, cuda ? "cuDeviceGetCount" : "hipGetDeviceCount");
  GPU_BIND(g, malloc_, cuda ? "cuMemAlloc_v2" : "hipMalloc");
  GPU_BIND(g, free_, cuda ? "cuMemFree_v2" : "hipFree");
  GPU_BIND(g, load, cuda ? "cuModuleLoadData" : "hipModuleLoadData");
  GPU_BIND(g, unload, cuda ? "cuModuleUnload" : "hipModuleUnload");
  GPU_BIND(g, getfn, cuda ? "cuModuleGetFunction" : "hipModuleGetFunction");
  GPU_BIND(g, launch, cuda ? "cuLaunchKernel" : "hipModuleLaunchKernel");
  GPU_BIND(g, sync, cuda ? "cuCtxSynchronize" : "hipDeviceSynchronize");
  if (cuda) {
    GPU_BIND(g, h2d, "cuMemcpyHtoD_v2");
    GPU_BIND(g, d2h, "cuMemcpyDtoH_v2");
    GPU_BIND(g, device_get, "cuDeviceGet");
    GPU_BIND(g, ctx_retain, "cuDevicePrimaryCtxRetain");
    GPU_BIND(g, ctx_set, "cuCtxSetCurrent");
  } else {
    GPU_BIND(g, memcpy_, "hipMemcpy");
  }
  /* optional: messages only */
  *(void **)&g->error_string = dlsym(g->lib, cuda ? "cuGetErrorString" : "hipDrvGetErrorString");
  /* optional: only kernels with more than 48 KiB of dynamic shared memory need it */
  if (cuda) *(void **)&g->func_set_attr = dlsym(g->lib, "cuFuncSetAttribute");
  if (cuda) *(void **)&g->tmap_encode = dlsym(g->lib, "cuTensorMapEncodeTiled");
  if (cuda) *(void **)&g->tmap_replace = dlsym(g->lib, "cuTensorMapReplaceAddress");
  /* optional: grids sized to the machine (device_units) */
  if (cuda) *(void **)&g->attr = dlsym(g->lib, "cuDeviceGetAttribute");
  else *(void **)&g->dev_attr = dlsym(g->lib, "hipDeviceGetAttribute");
  gpu_bind_timing(g, cuda);
  if (missing) {
    dlclose(g->lib);
    g->lib = NULL;
    return hkrt_fail(HKRT_ERR_NO_DRIVER, "%s backend: the driver library lacks entry points hkrt needs", g->api);
  }
  g->ok = 1;
  return HKRT_OK;
}

static const char *gpu_err(gpu_api *g, gpu_res r) {
  const char *s = NULL;
  if (g->error_string) g->error_string(r, &s);
  return s ? s : "unknown error";
}

static hkrt_status gpu_check(gpu_api *g, gpu_res r, hkrt_status st, const char *what) {
  if (r == 0) return HKRT_OK;
  return hkrt_fail(st, "%s: %s failed: %s (%d)", g->api, what, gpu_err(g, r), r);
}

static hkrt_status gpu_open(gpu_api *g, void **dev) {
  pthread_mutex_lock(&gpu_lock);
  hkrt_status st = gpu_load_library(g);
  pthread_mutex_unlock(&gpu_lock);
  if (st != HKRT_OK) return st;
  gpu_res r = g->init(0);
  int n = 0;
  if (r == 0) r = g->count(&n);
  if (r != 0 || n == 0)
    return hkrt_fail(HKRT_ERR_NO_DEVICE, "%s backend: no device (%s)", g->api,
                     r ? gpu_err(g, r) : "0 devices");
  if (g == &gpu_cuda) {
    int d;
    if ((st = gpu_check(g, g->device_get(&d, 0), HKRT_ERR_NO_DEVICE, "cuDeviceGet"))) return st;
    if ((st = gpu_check(g, g->ctx_retain(&g->ctx, d), HKRT_ERR_NO_DEVICE, "cuDevicePrimaryCtxRetain")))
      return st;
    if ((st = gpu_check(g, g->ctx_set(g->ctx), HKRT_ERR_NO_DEVICE, "cuCtxSetCurrent"))) return st;
  }
  *dev = g;
  return HKRT_OK;
}

static hkrt_status gpu_current(gpu_api *g) {
  if (g == &gpu_cuda && g->ctx) return gpu_check(g, g->ctx_set(g->ctx), HKRT_ERR_LAUNCH, "cuCtxSetCurrent");
  return HKRT_OK;
}

static void gpu_close(void *dev) { (void)dev; /* the primary context stays for other users */ }

static hkrt_status gpu_alloc(void *dev, size_t bytes, void **ptr) {
  gpu_api *g = dev;
  gpu_ptr p = 0;
  gpu_current(g);
  hkrt_status st = gpu_check(g, g->malloc_(&p, bytes), HKRT_ERR_NOMEM, "allocation");
  *ptr = (void *)(size_t)p;
  return st;
}

static hkrt_status gpu_free(void *dev, void *ptr) {
  gpu_api *g = dev;
  return gpu_check(g, g->free_((gpu_ptr)(size_t)ptr), HKRT_ERR_ARG, "free");
}

static hkrt_status gpu_to_device(void *dev, void *dst, const void *src, size_t n) {
  gpu_api *g = dev;
  gpu_current(g);
  gpu_res r = g == &gpu_cuda ? g->h2d((gpu_ptr)(size_t)dst, src, n) : g->memcpy_(dst, src, n, 1);
  return gpu_check(g, r, HKRT_ERR_ARG, "copy to device");
}

static hkrt_status gpu_to_host(void *dev, void *dst, const void *src, size_t n) {
  gpu_api *g = dev;
  gpu_current(g);
  gpu_res r = g == &gpu_cuda ? g->d2h(dst, (gpu_ptr)(size_t)src, n) : g->memcpy_(dst, src, n, 2);
  return gpu_check(g, r, HKRT_ERR_ARG, "copy to host");
}

static hkrt_status gpu_module_load(void *dev, const void *data, size_t len, const char *name, void **mod) {
  gpu_api *g = dev;
  (void)len; /* the drivers read the ELF's own sizes */
  gpu_current(g);
  hkrt_status st = gpu_check(g, g->load(mod, data), HKRT_ERR_IO, "module load");
  if (st) {
    char why[512];
    snprintf(why, sizeof why, "%s", hkrt_error());
    return hkrt_fail(HKRT_ERR_IO, "%s (%s)", why, name);
  }
  return st;
}

static void gpu_module_unload_cuda(void *mod) { gpu_cuda.unload(mod); }
static void gpu_module_unload_hip(void *mod) { gpu_hip.unload(mod); }

static hkrt_status gpu_function(gpu_api *g, void *mod, const char *name, void **fn,
                                unsigned *args_size) {
  *args_size = 0; /* not recorded in the object: the manifest says */
  gpu_res r = g->getfn(fn, mod, name);
  if (r) return hkrt_fail(HKRT_ERR_NOT_FOUND, "%s: no kernel '%s' in module (%s)", g->api, name, gpu_err(g, r));
  return HKRT_OK;
}

static hkrt_status gpu_function_cuda(void *mod, const char *name, void **fn, unsigned *sz) {
  return gpu_function(&gpu_cuda, mod, name, fn, sz);
}

static hkrt_status gpu_function_hip(void *mod, const char *name, void **fn, unsigned *sz) {
  return gpu_function(&gpu_hip, mod, name, fn, sz);
}

/* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (cuda.h) */
#define GPU_CU_FUNC_MAX_DYNAMIC_SHARED 8

static hkrt_status gpu_allow_shared_cuda(void *dev, void *fn, const char *name, unsigned bytes) {
  gpu_api *g = dev;
  if (bytes <= 48 * 1024) return HKRT_OK; /* the default limit */
  if (!g->func_set_attr)
    return hkrt_fail(HKRT_ERR_LAUNCH, "CUDA: kernel %s needs %u bytes of dynamic shared memory and the driver "
                     "lacks cuFuncSetAttribute", name, bytes);
  gpu_current(g);
  gpu_res r = g->func_set_attr(fn, GPU_CU_FUNC_MAX_DYNAMIC_SHARED, (int)bytes);
  if (r)
    return hkrt_fail(HKRT_ERR_LAUNCH, "CUDA: kernel %s: cannot allow %u bytes of dynamic shared memory: %s (%d)",
                     name, bytes, gpu_err(g, r), r);
  return HKRT_OK;
}

static hkrt_status gpu_allow_shared_hip(void *dev, void *fn, const char *name, unsigned bytes) {
  (void)dev;
  (void)fn;
  if (bytes <= 64 * 1024) return HKRT_OK;
  return hkrt_fail(HKRT_ERR_LAUNCH, "HIP: kernel %s needs %u bytes of dynamic LDS; hkrt allows at most 65536 on HIP",
                   name, bytes);
}

static hkrt_status gpu_launch(void *dev, void *fn, const char *name, const unsigned grid[3],
                              const unsigned block[3], unsigned shared_bytes, const void *args,
                              size_t args_size, void *stream) {
  gpu_api *g = dev;
  size_t size = args_size;
  void *extra[] = {(void *)1, (void *)args, (void *)2, &size, g->end_marker};
  /* CUDA: the one struct parameter through kernelParams, so that the driver
     puts it where the kernel expects it (a struct aligned to 64 bytes, as
     one holding tensor maps is, does not start at the parameter space's
     first byte); HIP: the packed buffer */
  void *params[] = {(void *)args};
  int cuda = g == &gpu_cuda;
  gpu_current(g);
  gpu_res r = g->launch(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, stream,
                        cuda ? params : NULL, cuda ? NULL : extra);
  if (r) return hkrt_fail(HKRT_ERR_LAUNCH, "%s: launch of %s failed: %s (%d)", g->api, name, gpu_err(g, r), r);
  return HKRT_OK;
}

static hkrt_status gpu_sync(void *dev) {
  gpu_api *g = dev;
  gpu_current(g);
  return gpu_check(g, g->sync(), HKRT_ERR_LAUNCH, "synchronize");
}

/* cuda.h's enumerators, as the driver ABI fixes them */
enum {
  GPU_TMAP_UINT8 = 0,
  GPU_TMAP_BF16 = 9,
  GPU_TMAP_INTERLEAVE_NONE = 0,
  GPU_TMAP_L2_256B = 3,
  GPU_TMAP_OOB_ZERO = 0,
};

static int gpu_tmap_swizzle(unsigned bytes) {
  switch (bytes) {
  case 0: return 0;
  case 32: return 1;
  case 64: return 2;
  case 128: return 3;
  default: return -1;
  }
}

static hkrt_status gpu_tensor_map_cuda(void *dev, void *out, const hkrt_tmap_req *r) {
  gpu_api *g = dev;
  int sw = gpu_tmap_swizzle(r->swizzle);
  if (!g->tmap_encode)
    return hkrt_fail(HKRT_ERR_NO_DRIVER, "CUDA backend: the driver lacks cuTensorMapEncodeTiled (CUDA 12 or newer)");
  if (sw < 0) return hkrt_fail(HKRT_ERR_ARG, "tensor map: swizzle of %u bytes", r->swizzle);
  if (r->rank < 2 || r->rank > HKRT_TMAP_MAX_RANK)
    return hkrt_fail(HKRT_ERR_ARG, "tensor map: rank %u (allowed: 2 to %d)", r->rank, HKRT_TMAP_MAX_RANK);
  const unsigned elem[HKRT_TMAP_MAX_RANK] = {1, 1, 1, 1};
  if (r->elem_bytes != 1 && r->elem_bytes != 2)
    return hkrt_fail(HKRT_ERR_ARG, "tensor map: elements of %u bytes (allowed: 1, 2)", r->elem_bytes);
  gpu_res e = g->tmap_encode(out, r->elem_bytes == 1 ? GPU_TMAP_UINT8 : GPU_TMAP_BF16, r->rank, (void *)r->ptr, r->dims, r->strides, r->box, elem,
                             GPU_TMAP_INTERLEAVE_NONE, sw, GPU_TMAP_L2_256B, GPU_TMAP_OOB_ZERO);
  if (e) {
    char what[256];
    int n = snprintf(what, sizeof what, "dims");
    for (unsigned i = 0; i < r->rank; i++) n += snprintf(what + n, sizeof what - (size_t)n, " %llu", r->dims[i]);
    n += snprintf(what + n, sizeof what - (size_t)n, ", strides (bytes)");
    for (unsigned i = 0; i + 1 < r->rank; i++)
      n += snprintf(what + n, sizeof what - (size_t)n, " %llu", r->strides[i]);
    n += snprintf(what + n, sizeof what - (size_t)n, ", box");
    for (unsigned i = 0; i < r->rank; i++) n += snprintf(what + n, sizeof what - (size_t)n, " %u", r->box[i]);
    return hkrt_fail(HKRT_ERR_ARG, "CUDA backend: cuTensorMapEncodeTiled(%p, rank %u, %s) failed: %s", r->ptr,
                     r->rank, what, gpu_err(g, e));
  }
  return HKRT_OK;
}

/* A tensor map's global address replaced in place, the rest of it kept:
   a launch packed once can take a new pointer without re-encoding. */
static hkrt_status gpu_tensor_map_address_cuda(void *dev, void *map, const void *ptr) {
  gpu_api *g = dev;
  if (!g->tmap_replace)
    return hkrt_fail(HKRT_ERR_NO_DRIVER, "CUDA backend: the driver lacks cuTensorMapReplaceAddress (CUDA 12 or newer)");
  gpu_res e = g->tmap_replace(map, (void *)ptr);
  if (e)
    return hkrt_fail(HKRT_ERR_ARG, "CUDA backend: cuTensorMapReplaceAddress(%p) failed: %s (a tensor map's address "
                     "must be 16-byte aligned)", ptr, gpu_err(g, e));
  return HKRT_OK;
}

/* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT (cuda.h) */
#define GPU_CU_ATTR_MULTIPROCESSORS 16

static hkrt_status gpu_units_cuda(void *dev, long long *out) {
  gpu_api *g = dev;
  int n = 0, d = 0;
  if (!g->attr) return hkrt_fail(HKRT_ERR_NO_DRIVER, "CUDA backend: the driver lacks cuDeviceGetAttribute");
  hkrt_status st = gpu_check(g, g->device_get(&d, 0), HKRT_ERR_NO_DEVICE, "cuDeviceGet");
  if (!st) st = gpu_check(g, g->attr(&n, GPU_CU_ATTR_MULTIPROCESSORS, d), HKRT_ERR_NO_DEVICE, "cuDeviceGetAttribute");
  *out = n;
  return st;
}

/* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR (cuda.h) */
#define GPU_CU_ATTR_CC_MAJOR 75
#define GPU_CU_ATTR_CC_MINOR 76

/* The target table's name for the device's compute capability ("sm_90a"
   for 9.0), else sm_<major><minor>, which no catalogue kernel names. */
static hkrt_status gpu_arch_cuda(void *dev, char *out, size_t n) {
  gpu_api *g = dev;
  int major = 0, minor = 0, d = 0;
  if (!g->attr) return hkrt_fail(HKRT_ERR_NO_DRIVER, "CUDA backend: the driver lacks cuDeviceGetAttribute");
  hkrt_status st = gpu_check(g, g->device_get(&d, 0), HKRT_ERR_NO_DEVICE, "cuDeviceGet");
  if (!st) st = gpu_check(g, g->attr(&major, GPU_CU_ATTR_CC_MAJOR, d), HKRT_ERR_NO_DEVICE, "cuDeviceGetAttribute");
  if (!st) st = gpu_check(g, g->attr(&minor, GPU_CU_ATTR_CC_MINOR, d), HKRT_ERR_NO_DEVICE, "cuDeviceGetAttribute");
  if (st) return st;
  const tgt_info *t = tgt_from_cuda_cc(major * 10 + minor);
  if (t) snprintf(out, n, "%s", t->name);
  else snprintf(out, n, "sm_%d%d", major, minor);
  return HKRT_OK;
}

/* ---- timing: events and the L2 flush --------------------------------------- */

static hkrt_status gpu_timing_ok(gpu_api *g) {
  if (g->ev_create && g->ev_record && g->ev_sync && g->ev_elapsed && g->ev_destroy) return HKRT_OK;
  return hkrt_fail(HKRT_ERR_NO_DRIVER, "%s backend: the driver lacks the event entry points timing needs", g->api);
}

static hkrt_status gpu_event_create(void *dev, void **ev) {
  gpu_api *g = dev;
  hkrt_status st = gpu_timing_ok(g);
  if (st) return st;
  gpu_current(g);
  return gpu_check(g, g->ev_create(ev, 0), HKRT_ERR_LAUNCH, "event create"); /* flags 0: timing on */
}

static hkrt_status gpu_event_record(void *dev, void *ev, void *stream) {
  gpu_api *g = dev;
  gpu_current(g);
  return gpu_check(g, g->ev_record(ev, stream), HKRT_ERR_LAUNCH, "event record");
}

static hkrt_status gpu_event_elapsed(void *dev, void *start, void *end, float *ms) {
  gpu_api *g = dev;
  gpu_current(g);
  hkrt_status st = gpu_check(g, g->ev_sync(end), HKRT_ERR_LAUNCH, "event synchronize");
  return st ? st : gpu_check(g, g->ev_elapsed(ms, start, end), HKRT_ERR_LAUNCH, "event elapsed time");
}

static void gpu_event_destroy(void *dev, void *ev) {
  gpu_api *g = dev;
  g->ev_destroy(ev);
}

/* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (cuda.h); hipDeviceAttributeL2CacheSize
   (hip_runtime_api.h, HIP 5 and later) */
#define GPU_CU_ATTR_L2_BYTES 38
#define GPU_HIP_ATTR_L2_BYTES 19

static hkrt_status gpu_l2_bytes(void *dev, size_t *out) {
  gpu_api *g = dev;
  int n = 0, d = 0;
  hkrt_status st;
  if (g == &gpu_cuda) {
    if (!g->attr) return hkrt_fail(HKRT_ERR_NO_DRIVER, "CUDA backend: the driver lacks cuDeviceGetAttribute");
    st = gpu_check(g, g->device_get(&d, 0), HKRT_ERR_NO_DEVICE, "cuDeviceGet");
    if (!st) st = gpu_check(g, g->attr(&n, GPU_CU_ATTR_L2_BYTES, d), HKRT_ERR_NO_DEVICE, "cuDeviceGetAttribute");
  } else {
    if (!g->dev_attr) return hkrt_fail(HKRT_ERR_NO_DRIVER, "HIP backend: the runtime lacks hipDeviceGetAttribute");
    st = gpu_check(g, g->dev_attr(&n, GPU_HIP_ATTR_L2_BYTES, 0), HKRT_ERR_NO_DEVICE, "hipDeviceGetAttribute");
  }
  *out = n > 0 ? (size_t)n : 0;
  return st;
}

static hkrt_status gpu_fill(void *dev, void *ptr, unsigned char byte, size_t n, void *stream) {
  gpu_api *g = dev;
  if (!g->fill_async) return hkrt_fail(HKRT_ERR_NO_DRIVER, "%s backend: the driver lacks an asynchronous memset", g->api);
  gpu_current(g);
  return gpu_check(g, g->fill_async((gpu_ptr)(size_t)ptr, byte, n, stream), HKRT_ERR_LAUNCH, "memset");
}

static hkrt_status gpu_open_cuda(const char *target, void **dev) {
  (void)target;
  return gpu_open(&gpu_cuda, dev);
}

static hkrt_status gpu_open_hip(const char *target, void **dev) {
  (void)target;
  return gpu_open(&gpu_hip, dev);
}

const hkrt_backend_ops hkrt_cuda_ops = {
    "CUDA", gpu_open_cuda, gpu_close, gpu_alloc, gpu_free, gpu_to_device, gpu_to_host,
    gpu_module_load, gpu_module_unload_cuda, gpu_function_cuda, gpu_launch, gpu_sync,
    gpu_allow_shared_cuda, gpu_tensor_map_cuda, gpu_units_cuda, gpu_arch_cuda, gpu_tensor_map_address_cuda,
    gpu_event_create, gpu_event_record, gpu_event_elapsed, gpu_event_destroy, gpu_l2_bytes, gpu_fill};

const hkrt_backend_ops hkrt_hip_ops = {
    "HIP", gpu_open_hip, gpu_close, gpu_alloc, gpu_free, gpu_to_device, gpu_to_host,
    gpu_module_load, gpu_module_unload_hip, gpu_function_hip, gpu_launch, gpu_sync,
    gpu_allow_shared_hip, NULL, NULL, NULL, NULL,
    gpu_event_create, gpu_event_record, gpu_event_elapsed, gpu_event_destroy, gpu_l2_bytes, gpu_fill};
