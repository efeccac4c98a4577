/* hkrt.c: the public API; it checks arguments and dispatches to a backend. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkrt_int.h"

struct hkrt_device {
  hkrt_backend backend;
  emu_device *emu;
};

struct hkrt_module {
  hkrt_device *dev;
  emu_module *emu;
  hkrt_func **funcs; /* owned: released with the module */
  size_t nfuncs;
};

struct hkrt_func {
  hkrt_module *mod;
  char name[128];
  void *entry;
  unsigned args_size;
};

static _Thread_local char hkrt_msg[1024];

hkrt_status hkrt_fail(hkrt_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(hkrt_msg, sizeof hkrt_msg, fmt, ap);
  va_end(ap);
  return status;
}

HKRT_API const char *hkrt_error(void) { return hkrt_msg; }

HKRT_API const char *hkrt_status_name(hkrt_status s) {
  static const char *const names[] = {"HKRT_OK", "HKRT_ERR_ARG", "HKRT_ERR_NOMEM", "HKRT_ERR_IO",
                                      "HKRT_ERR_NO_DRIVER", "HKRT_ERR_NO_DEVICE",
                                      "HKRT_ERR_NOT_FOUND", "HKRT_ERR_LAUNCH",
                                      "HKRT_ERR_KERNEL_FAULT"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "HKRT_ERR_UNKNOWN";
}

HKRT_API hkrt_status hkrt_device_open(hkrt_backend backend, const char *target, hkrt_device **out) {
  if (!out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_device_open: out is NULL");
  *out = NULL;
  if (backend != HKRT_BACKEND_EMU)
    return hkrt_fail(HKRT_ERR_NO_DRIVER, "hkrt_device_open: the %s backend is not built into this libhkrt yet",
                     backend == HKRT_BACKEND_HIP ? "HIP" : backend == HKRT_BACKEND_CUDA ? "CUDA" : "unknown");
  hkrt_device *d = calloc(1, sizeof *d);
  if (!d) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  d->backend = backend;
  hkrt_status st = emu_open(target, &d->emu);
  if (st != HKRT_OK) {
    free(d);
    return st;
  }
  *out = d;
  return HKRT_OK;
}

HKRT_API void hkrt_device_close(hkrt_device *dev) {
  if (!dev) return;
  emu_close(dev->emu);
  free(dev);
}

HKRT_API hkrt_status hkrt_alloc(hkrt_device *dev, size_t bytes, void **ptr) {
  if (!dev || !ptr) return hkrt_fail(HKRT_ERR_ARG, "hkrt_alloc: NULL argument");
  return emu_alloc(dev->emu, bytes, ptr);
}

HKRT_API hkrt_status hkrt_free(hkrt_device *dev, void *ptr) {
  if (!dev) return hkrt_fail(HKRT_ERR_ARG, "hkrt_free: NULL device");
  if (!ptr) return HKRT_OK;
  return emu_free(dev->emu, ptr);
}

/* The emulator's device memory is host memory: a copy is a checked memcpy. */
static hkrt_status hkrt_copy(hkrt_device *dev, void *dst, const void *src, size_t n,
                             const void *devp, const char *what) {
  if (!dev || !dst || !src) return hkrt_fail(HKRT_ERR_ARG, "%s: NULL argument", what);
  if (!n) return HKRT_OK;
  hkrt_status st = emu_check_range(dev->emu, devp, n);
  if (st != HKRT_OK) return hkrt_fail(st, "%s: %s", what, hkrt_error());
  memcpy(dst, src, n);
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_copy_to_device(hkrt_device *dev, void *dst, const void *src, size_t n) {
  return hkrt_copy(dev, dst, src, n, dst, "hkrt_copy_to_device");
}

HKRT_API hkrt_status hkrt_copy_to_host(hkrt_device *dev, void *dst, const void *src, size_t n) {
  return hkrt_copy(dev, dst, src, n, src, "hkrt_copy_to_host");
}

HKRT_API hkrt_status hkrt_module_load(hkrt_device *dev, const char *path, hkrt_module **out) {
  if (!dev || !path || !out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_module_load: NULL argument");
  hkrt_module *m = calloc(1, sizeof *m);
  if (!m) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  m->dev = dev;
  hkrt_status st = emu_module_load(dev->emu, path, &m->emu);
  if (st != HKRT_OK) {
    free(m);
    return st;
  }
  *out = m;
  return HKRT_OK;
}

HKRT_API void hkrt_module_unload(hkrt_module *mod) {
  if (!mod) return;
  for (size_t i = 0; i < mod->nfuncs; i++) free(mod->funcs[i]);
  free(mod->funcs);
  emu_module_unload(mod->emu);
  free(mod);
}

HKRT_API hkrt_status hkrt_module_function(hkrt_module *mod, const char *name, hkrt_func **out) {
  if (!mod || !name || !out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_module_function: NULL argument");
  for (size_t i = 0; i < mod->nfuncs; i++)
    if (!strcmp(mod->funcs[i]->name, name)) {
      *out = mod->funcs[i];
      return HKRT_OK;
    }
  hkrt_func f = {.mod = mod};
  if (strlen(name) >= sizeof f.name) return hkrt_fail(HKRT_ERR_ARG, "kernel name too long");
  snprintf(f.name, sizeof f.name, "%s", name);
  hkrt_status st = emu_function(mod->emu, name, &f.entry, &f.args_size);
  if (st != HKRT_OK) return st;
  hkrt_func **v = realloc(mod->funcs, (mod->nfuncs + 1) * sizeof *v);
  hkrt_func *p = malloc(sizeof *p);
  if (!v || !p) {
    free(p);
    if (v) mod->funcs = v;
    return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  }
  *p = f;
  v[mod->nfuncs++] = p;
  mod->funcs = v;
  *out = p;
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_launch(hkrt_func *fn, const unsigned grid[3], const unsigned block[3],
                                 const void *args, size_t args_size, void *stream) {
  (void)stream;
  if (!fn || !grid || !block || (!args && args_size))
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_launch: NULL argument");
  if (args_size != fn->args_size)
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_launch: kernel %s takes %u bytes of arguments, got %zu",
                     fn->name, fn->args_size, args_size);
  return emu_launch(fn->mod->dev->emu, fn->entry, fn->name, grid, block, args, args_size);
}

HKRT_API hkrt_status hkrt_emu_configure(hkrt_device *dev, unsigned long long seed, unsigned lds_limit) {
  if (!dev || dev->backend != HKRT_BACKEND_EMU)
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_emu_configure: not an emulator device");
  emu_configure(dev->emu, seed, lds_limit);
  return HKRT_OK;
}
