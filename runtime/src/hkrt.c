/* hkrt.c: the public API. It checks arguments and calls the device's
   backend table (emulator, CUDA or HIP). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hkrt_int.h"

struct hkrt_device {
  const hkrt_backend_ops *ops;
  hkrt_backend backend;
  void *impl;
  char target[16]; /* "" when unknown (HIP) */
  void *flush_buf;     /* hkrt_flush_l2's buffer, flush_bytes long */
  size_t flush_bytes;
  unsigned flush_count;
};

struct hkrt_event {
  hkrt_device *dev;
  void *impl;
};

struct hkrt_module {
  hkrt_device *dev;
  void *impl;
  hkrt_func **funcs; /* owned: released with the module */
  size_t nfuncs;
};

struct hkrt_func {
  hkrt_module *mod;
  char name[128];
  void *impl;
  unsigned args_size; /* 0: unknown to the backend (GPU objects) */
  unsigned shared_allowed; /* dynamic shared bytes the backend allows (allow_shared) */
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

static const hkrt_backend_ops *hkrt_ops_for(hkrt_backend b) {
  switch (b) {
  case HKRT_BACKEND_EMU: return &hkrt_emu_ops;
  case HKRT_BACKEND_CUDA: return &hkrt_cuda_ops;
  case HKRT_BACKEND_HIP: return &hkrt_hip_ops;
  }
  return NULL;
}

HKRT_API hkrt_status hkrt_device_open(hkrt_backend backend, const char *target, hkrt_device **out) {
  if (!out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_device_open: out is NULL");
  *out = NULL;
  const hkrt_backend_ops *ops = hkrt_ops_for(backend);
  if (!ops) return hkrt_fail(HKRT_ERR_ARG, "hkrt_device_open: unknown backend %d", (int)backend);
  hkrt_device *d = calloc(1, sizeof *d);
  if (!d) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  d->ops = ops;
  d->backend = backend;
  hkrt_status st = ops->open(target, &d->impl);
  if (st != HKRT_OK) {
    free(d);
    return st;
  }
  if (backend == HKRT_BACKEND_EMU) snprintf(d->target, sizeof d->target, "%s", target);
  else if (ops->arch && (st = ops->arch(d->impl, d->target, sizeof d->target)) != HKRT_OK) {
    ops->close(d->impl);
    free(d);
    return st;
  }
  *out = d;
  return HKRT_OK;
}

HKRT_API const char *hkrt_device_target(const hkrt_device *dev) {
  return dev && dev->target[0] ? dev->target : NULL;
}

hkrt_backend hkrt_device_backend(const hkrt_device *dev) { return dev->backend; }

HKRT_API void hkrt_device_close(hkrt_device *dev) {
  if (!dev) return;
  if (dev->flush_buf) dev->ops->free(dev->impl, dev->flush_buf);
  dev->ops->close(dev->impl);
  free(dev);
}

HKRT_API hkrt_status hkrt_alloc(hkrt_device *dev, size_t bytes, void **ptr) {
  if (!dev || !ptr) return hkrt_fail(HKRT_ERR_ARG, "hkrt_alloc: NULL argument");
  if (!bytes) return hkrt_fail(HKRT_ERR_ARG, "hkrt_alloc: zero bytes");
  return dev->ops->alloc(dev->impl, bytes, ptr);
}

HKRT_API hkrt_status hkrt_free(hkrt_device *dev, void *ptr) {
  if (!dev) return hkrt_fail(HKRT_ERR_ARG, "hkrt_free: NULL device");
  if (!ptr) return HKRT_OK;
  return dev->ops->free(dev->impl, ptr);
}

HKRT_API hkrt_status hkrt_copy_to_device(hkrt_device *dev, void *dst, const void *src, size_t n) {
  if (!dev || !dst || !src) return hkrt_fail(HKRT_ERR_ARG, "hkrt_copy_to_device: NULL argument");
  return n ? dev->ops->to_device(dev->impl, dst, src, n) : HKRT_OK;
}

HKRT_API hkrt_status hkrt_copy_to_host(hkrt_device *dev, void *dst, const void *src, size_t n) {
  if (!dev || !dst || !src) return hkrt_fail(HKRT_ERR_ARG, "hkrt_copy_to_host: NULL argument");
  return n ? dev->ops->to_host(dev->impl, dst, src, n) : HKRT_OK;
}

HKRT_API hkrt_status hkrt_synchronize(hkrt_device *dev) {
  if (!dev) return hkrt_fail(HKRT_ERR_ARG, "hkrt_synchronize: NULL device");
  return dev->ops->synchronize(dev->impl);
}

static hkrt_status hkrt_no_clock(const hkrt_device *dev, const char *fn) {
  return hkrt_fail(HKRT_ERR_ARG, "%s: the %s backend has no device clock (timing needs a GPU: CUDA or HIP)", fn,
                   dev->ops->name);
}

HKRT_API hkrt_status hkrt_event_create(hkrt_device *dev, hkrt_event **out) {
  if (!dev || !out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_event_create: NULL argument");
  *out = NULL;
  if (!dev->ops->event_create) return hkrt_no_clock(dev, "hkrt_event_create");
  hkrt_event *e = calloc(1, sizeof *e);
  if (!e) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  e->dev = dev;
  hkrt_status st = dev->ops->event_create(dev->impl, &e->impl);
  if (st != HKRT_OK) {
    free(e);
    return st;
  }
  *out = e;
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_event_record(hkrt_event *ev, void *stream) {
  if (!ev) return hkrt_fail(HKRT_ERR_ARG, "hkrt_event_record: NULL event");
  return ev->dev->ops->event_record(ev->dev->impl, ev->impl, stream);
}

HKRT_API hkrt_status hkrt_event_elapsed(hkrt_event *start, hkrt_event *end, double *ms) {
  if (!start || !end || !ms) return hkrt_fail(HKRT_ERR_ARG, "hkrt_event_elapsed: NULL argument");
  if (start->dev != end->dev) return hkrt_fail(HKRT_ERR_ARG, "hkrt_event_elapsed: events of two devices");
  float f = 0;
  hkrt_status st = start->dev->ops->event_elapsed(start->dev->impl, start->impl, end->impl, &f);
  *ms = f;
  return st;
}

HKRT_API void hkrt_event_destroy(hkrt_event *ev) {
  if (!ev) return;
  ev->dev->ops->event_destroy(ev->dev->impl, ev->impl);
  free(ev);
}

/* Twice the L2: whatever the replacement policy, the benchmark's own lines
   are gone after it. */
HKRT_API hkrt_status hkrt_flush_l2(hkrt_device *dev, void *stream, size_t *bytes) {
  if (!dev) return hkrt_fail(HKRT_ERR_ARG, "hkrt_flush_l2: NULL device");
  if (!dev->ops->fill || !dev->ops->l2_bytes) return hkrt_no_clock(dev, "hkrt_flush_l2");
  if (!dev->flush_buf) {
    size_t l2 = 0;
    hkrt_status st = dev->ops->l2_bytes(dev->impl, &l2);
    if (st != HKRT_OK) return st;
    if (!l2) return hkrt_fail(HKRT_ERR_ARG, "hkrt_flush_l2: the %s device reports no L2 size", dev->ops->name);
    if ((st = dev->ops->alloc(dev->impl, 2 * l2, &dev->flush_buf)) != HKRT_OK) return st;
    dev->flush_bytes = 2 * l2;
  }
  if (bytes) *bytes = dev->flush_bytes;
  /* a new value each time: every line is written, never left as it was */
  return dev->ops->fill(dev->impl, dev->flush_buf, (unsigned char)(++dev->flush_count), dev->flush_bytes, stream);
}

/* Code objects are read whole (never mapped: a file truncated while loaded
   would be SIGBUS, not an error). */
#define HKRT_MAX_OBJECT (1u << 30)

hkrt_status hkrt_read_fd(int fd, const char *what, size_t max, unsigned char **data, size_t *len) {
  struct stat st;
  *data = NULL;
  *len = 0;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return hkrt_fail(HKRT_ERR_IO, "%s: not a regular file", what);
  }
  if ((unsigned long long)st.st_size > max) {
    close(fd);
    return hkrt_fail(HKRT_ERR_IO, "%s: the file is over %zu bytes", what, max);
  }
  size_t n = (size_t)st.st_size, got = 0;
  unsigned char *buf = malloc(n ? n : 1);
  while (buf && got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!buf || got != n) {
    free(buf);
    return hkrt_fail(buf ? HKRT_ERR_IO : HKRT_ERR_NOMEM, "%s: cannot read it whole", what);
  }
  *data = buf;
  *len = n;
  return HKRT_OK;
}

hkrt_status hkrt_module_load_bytes(hkrt_device *dev, const void *data, size_t len, const char *name,
                                   hkrt_module **out) {
  hkrt_module *m = calloc(1, sizeof *m);
  if (!m) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  m->dev = dev;
  hkrt_status st = dev->ops->module_load(dev->impl, data, len, name, &m->impl);
  if (st != HKRT_OK) {
    free(m);
    return st;
  }
  *out = m;
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_module_load(hkrt_device *dev, const char *path, hkrt_module **out) {
  if (!dev || !path || !out) return hkrt_fail(HKRT_ERR_ARG, "hkrt_module_load: NULL argument");
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return hkrt_fail(HKRT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  unsigned char *data;
  size_t len;
  hkrt_status st = hkrt_read_fd(fd, path, HKRT_MAX_OBJECT, &data, &len);
  if (!st) st = hkrt_module_load_bytes(dev, data, len, path, out);
  free(data);
  return st;
}

HKRT_API void hkrt_module_unload(hkrt_module *mod) {
  if (!mod) return;
  for (size_t i = 0; i < mod->nfuncs; i++) free(mod->funcs[i]);
  free(mod->funcs);
  mod->dev->ops->module_unload(mod->impl);
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
  hkrt_status st = mod->dev->ops->function(mod->impl, name, &f.impl, &f.args_size);
  if (st != HKRT_OK) return st;
  hkrt_func **v = realloc(mod->funcs, (mod->nfuncs + 1) * sizeof *v);
  if (v) mod->funcs = v;
  hkrt_func *p = v ? malloc(sizeof *p) : NULL;
  if (!p) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  *p = f;
  v[mod->nfuncs++] = p;
  *out = p;
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_launch(hkrt_func *fn, const unsigned grid[3], const unsigned block[3],
                                 const void *args, size_t args_size, void *stream) {
  return hkrt_launch_ex(fn, grid, block, 0, args, args_size, stream);
}

HKRT_API hkrt_status hkrt_launch_ex(hkrt_func *fn, const unsigned grid[3], const unsigned block[3],
                                    unsigned shared_bytes, const void *args, size_t args_size,
                                    void *stream) {
  if (!fn || !grid || !block || (!args && args_size))
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_launch: NULL argument");
  if (fn->args_size && args_size != fn->args_size)
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_launch: kernel %s takes %u bytes of arguments, got %zu",
                     fn->name, fn->args_size, args_size);
  for (int i = 0; i < 3; i++)
    if (!grid[i] || !block[i])
      return hkrt_fail(HKRT_ERR_ARG, "hkrt_launch: kernel %s: empty grid or block", fn->name);
  hkrt_device *d = fn->mod->dev;
  if (shared_bytes > __atomic_load_n(&fn->shared_allowed, __ATOMIC_ACQUIRE)) {
    /* several threads may raise it at once: the attribute is idempotent */
    if (d->ops->allow_shared) {
      hkrt_status st = d->ops->allow_shared(d->impl, fn->impl, fn->name, shared_bytes);
      if (st != HKRT_OK) return st;
    }
    __atomic_store_n(&fn->shared_allowed, shared_bytes, __ATOMIC_RELEASE);
  }
  return d->ops->launch(d->impl, fn->impl, fn->name, grid, block, shared_bytes, args, args_size, stream);
}

hkrt_status hkrt_device_tensor_map(hkrt_device *dev, const char *who, void *out, const hkrt_tmap_req *r) {
  if (!dev->ops->tensor_map)
    return hkrt_fail(HKRT_ERR_ARG, "%s takes a tensor map (Hopper bulk copies), which the %s backend cannot build",
                     who, dev->ops->name);
  return dev->ops->tensor_map(dev->impl, out, r);
}

hkrt_status hkrt_device_tensor_map_address(hkrt_device *dev, void *map, const void *ptr) {
  if (!dev->ops->tensor_map_address)
    return hkrt_fail(HKRT_ERR_ARG, "the %s backend cannot change a tensor map's address: pack the arguments again",
                     dev->ops->name);
  return dev->ops->tensor_map_address(dev->impl, map, ptr);
}

/* $HKRT_UNITS, when set, stands in for the multiprocessor count in grid
   formulas: a persistent kernel then runs with a few blocks that each walk
   many tiles (tests/device/attn_bench.py), a schedule a full device rarely
   gives. It must be a whole number from 1 to 2^20. */
static hkrt_status hkrt_units_override(int *set, long long *out) {
  const char *env = getenv("HKRT_UNITS");
  *set = env != NULL;
  if (!env) return HKRT_OK;
  char *end;
  errno = 0;
  long long n = strtoll(env, &end, 10);
  if (errno || end == env || *end || n < 1 || n > (1 << 20))
    return hkrt_fail(HKRT_ERR_ARG, "HKRT_UNITS='%.40s': expected a whole number from 1 to 1048576", env);
  *out = n;
  return HKRT_OK;
}

hkrt_status hkrt_device_units(hkrt_device *dev, long long *out) {
  int set;
  hkrt_status st = hkrt_units_override(&set, out);
  if (st != HKRT_OK || set) return st;
  if (!dev->ops->units)
    return hkrt_fail(HKRT_ERR_ARG, "the %s backend cannot tell the device's multiprocessor count", dev->ops->name);
  return dev->ops->units(dev->impl, out);
}

HKRT_API hkrt_status hkrt_emu_shuffle(hkrt_device *dev, int shuffled) {
  if (!dev || dev->backend != HKRT_BACKEND_EMU)
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_emu_shuffle: not an emulator device");
  emu_shuffle(dev->impl, shuffled);
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_emu_configure(hkrt_device *dev, unsigned long long seed, unsigned lds_limit) {
  if (!dev || dev->backend != HKRT_BACKEND_EMU)
    return hkrt_fail(HKRT_ERR_ARG, "hkrt_emu_configure: not an emulator device");
  emu_configure(dev->impl, seed, lds_limit);
  return HKRT_OK;
}

static hkrt_status hkrt_emu_dev(hkrt_device *dev, const char *fn) {
  if (!dev || dev->backend != HKRT_BACKEND_EMU) return hkrt_fail(HKRT_ERR_ARG, "%s: not an emulator device", fn);
  return HKRT_OK;
}

HKRT_API hkrt_status hkrt_emu_stats_enable(hkrt_device *dev, int on) {
  hkrt_status st = hkrt_emu_dev(dev, "hkrt_emu_stats_enable");
  return st != HKRT_OK ? st : emu_stats_enable(dev->impl, on);
}

HKRT_API hkrt_status hkrt_emu_stats_get(hkrt_device *dev, hkrt_emu_stats *out) {
  hkrt_status st = hkrt_emu_dev(dev, "hkrt_emu_stats_get");
  if (st == HKRT_OK && !out) st = hkrt_fail(HKRT_ERR_ARG, "hkrt_emu_stats_get: out is NULL");
  if (st == HKRT_OK) emu_stats_get(dev->impl, out);
  return st;
}

HKRT_API hkrt_status hkrt_emu_stats_reset(hkrt_device *dev) {
  hkrt_status st = hkrt_emu_dev(dev, "hkrt_emu_stats_reset");
  if (st == HKRT_OK) emu_stats_reset(dev->impl);
  return st;
}
