/* emu.c: the CPU emulator of CDNA workgroups.

   Each work-item of a workgroup is a fiber running the kernel as compiled for
   the host. A fiber runs until it reaches a workgroup barrier, a wave
   collective (MFMA) or the end. The scheduler runs the waves of a workgroup
   one after another in a seeded random order, so a kernel that reads LDS
   before the barrier that publishes it sees stale data and fails its check;
   within a wave, a collective runs once all 64 lanes have reached it. Global
   and LDS accesses are checked; the first bad one stops the launch.
   Workgroups run one at a time, by linear id or (hkrt_emu_shuffle, as
   `hkgen test` asks) in a seeded random order, so that workgroups that
   hand data to each other through memory are checked in more orders than
   one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_fiber.h"
#include "emu_stats.h"
#include "target.h"
#include "hk_emu_abi.h"
#include "hk_emu_fp8.h"
#include "hkrt_int.h"

#define EMU_STACK (256u << 10)
#define EMU_MAX_THREADS 1024
/* workgroups one launch may have: the emulator runs a few thousand small
   ones a second, so a larger grid would run for hours */
#define EMU_MAX_WORKGROUPS (1ull << 20)

typedef struct {
  char *p;
  size_t n;
} emu_block;

struct emu_device {
  char target[16];
  const tgt_info *tgt;
  int kpl;             /* k per lane of the 32x32 bf16 MFMA */
  unsigned fp8;        /* TGT_FP8_FNUZ / TGT_FP8_OCP: the fp8 formats its MFMA takes */
  unsigned lds_limit;
  int units;           /* compute units (emu_targets) */
  unsigned long long seed;
  int shuffle;         /* workgroups in a seeded random order (hkrt_emu_shuffle) */
  unsigned long long launches; /* a fresh order each launch, reproducible from the seed */
  emu_block *blocks;
  size_t nblocks, cap;
  emu_fiber *stacks; /* fiber stacks kept from launch to launch */
  int nstacks;
  /* one call at a time per device: allocations, copies and launches from
     several threads are serialised (a launch holds it while it runs) */
  pthread_mutex_t lock;
  int stats_on;      /* the modules' hkemu_api.stats_on points here */
  emu_stats *stats;  /* made by the first hkrt_emu_stats_enable */
};

struct emu_module {
  emu_device *dev;
  void *handle;
  int fd; /* the memory file it was loaded from: open while loaded, so that its
             /proc/self/fd name is unique (dlopen reuses a loaded name) */
};

typedef enum { TS_RUN, TS_BARRIER, TS_WAVE, TS_DONE } emu_tstate;

typedef struct {
  emu_fiber fiber;
  emu_tstate state;
} emu_thread;

/* The wave collectives: a lane that reaches one deposits its operands and
   waits (TS_WAVE) until all 64 lanes of its wave are there. */
typedef enum { EMU_COLL_MFMA = 1, EMU_COLL_SWAP, EMU_COLL_MFMA_F8, EMU_COLL_MFMA16, EMU_COLL_TR16 } emu_coll;

typedef struct {
  int kpl;
  unsigned char kind[64]; /* emu_coll each lane is waiting in */
  unsigned short a[64][8], b[64][8];
  float c[64][16], d[64][16];
  unsigned xv[64], xr[64]; /* swap_halves: deposited and returned words; tr16: xv the offsets */
  unsigned short tr[64][4]; /* tr16: the lanes' results */
  int f8a[64], f8b[64];     /* fp8 MFMA: the formats each lane asked for */
} emu_wave;

typedef struct {
  emu_device *dev;
  const char *name;
  void (*entry)(const void *);
  const void *args;
  unsigned grid[3], bid[3];
  int nthreads, nwaves, cur;
  emu_thread *th;
  emu_wave *waves;
  emu_fiber sched;
  unsigned char *lds;
  uint64_t rng;
  const emu_block *last; /* the block the last global access hit */
  int fault;
  char msg[768];
} emu_run;

static _Thread_local emu_run *emu_cur;

static int hkemu_thread_id(void);
static int hkemu_block_id(int axis);
static void hkemu_barrier(void);
static unsigned char *hkemu_lds(unsigned bytes, unsigned *size);
static void hkemu_fault_lds(unsigned off, unsigned n, unsigned size, int write);
static void hkemu_check_global(const void *p, size_t n, int write);
static void hkemu_mfma_32x32_bf16(int kpl, const unsigned short *a, const unsigned short *b,
                                  const float *c, float *d);
static unsigned hkemu_swap_halves_b32(unsigned v);
static void hkemu_mfma_32x32_f8(int fa, int fb, const unsigned char *a, const unsigned char *b,
                                const float *c, float *d);
static void hkemu_note(int kind, unsigned long long addr, unsigned bytes, const char *file, int line);
static int hkemu_grid_dim(int axis);
static void hkemu_fault_kernel(const char *what);
static void hkemu_mfma_16x16_bf16(int kpl, const unsigned short *a, const unsigned short *b,
                                  const float *c, float *d);
static void hkemu_lds_read_tr16_b64(unsigned off, unsigned short *out);

/* The emulator's model of a target comes from the target table: its MFMA
   layout (k per lane), its LDS limit, and the compute units of its largest
   part (what a grid sized to the machine sees). */
hkrt_status emu_open(const char *target, emu_device **out) {
  const tgt_info *t = tgt_find(target);
  if (!t || !t->emu_arch) {
    char list[128] = "";
    size_t n, used = 0;
    const tgt_info *all = tgt_all(&n);
    for (size_t i = 0; i < n; i++)
      if (all[i].emu_arch && used + 1 < sizeof list)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", all[i].name);
    return hkrt_fail(HKRT_ERR_ARG, "emulator: unknown target '%s' (%s)", target ? target : "(null)", list);
  }
  emu_device *d = calloc(1, sizeof *d);
  if (!d) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  snprintf(d->target, sizeof d->target, "%s", t->name);
  d->tgt = t;
  d->kpl = t->emu_kpl;
  d->fp8 = t->features & (TGT_FP8_FNUZ | TGT_FP8_OCP);
  d->lds_limit = t->lds_bytes;
  d->units = tgt_largest_part(t)->units;
  d->seed = 1;
  pthread_mutex_init(&d->lock, NULL);
  *out = d;
  return HKRT_OK;
}

void emu_close(emu_device *d) {
  if (!d) return;
  for (int i = 0; i < d->nstacks; i++) emu_fiber_free(&d->stacks[i]);
  free(d->stacks);
  for (size_t i = 0; i < d->nblocks; i++) free(d->blocks[i].p);
  free(d->blocks);
  es_free(d->stats);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

void emu_configure(emu_device *d, unsigned long long seed, unsigned lds_limit) {
  d->seed = seed;
  if (lds_limit) d->lds_limit = lds_limit;
}

hkrt_status emu_stats_enable(emu_device *d, int on) {
  pthread_mutex_lock(&d->lock);
  hkrt_status st = HKRT_OK;
  if (on && !d->tgt->mem)
    st = hkrt_fail(HKRT_ERR_ARG, "emulator: the target table has no LDS or cache-line rules for %s", d->target);
  else if (on && !d->stats && !(d->stats = es_new(d->tgt)))
    st = hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  if (st == HKRT_OK && on) es_reset(d->stats);
  if (st == HKRT_OK) d->stats_on = on != 0;
  pthread_mutex_unlock(&d->lock);
  return st;
}

void emu_stats_get(emu_device *d, hkrt_emu_stats *out) {
  pthread_mutex_lock(&d->lock);
  if (d->stats) es_get(d->stats, out);
  else memset(out, 0, sizeof *out);
  pthread_mutex_unlock(&d->lock);
}

void emu_stats_reset(emu_device *d) {
  pthread_mutex_lock(&d->lock);
  if (d->stats) es_reset(d->stats);
  pthread_mutex_unlock(&d->lock);
}

void emu_shuffle(emu_device *d, int shuffled) { d->shuffle = shuffled != 0; }

hkrt_status emu_alloc(emu_device *d, size_t bytes, void **ptr) {
  if (!bytes) return hkrt_fail(HKRT_ERR_ARG, "hkrt_alloc: zero bytes");
  if (bytes > (SIZE_MAX >> 1)) /* the rounding below must not wrap */
    return hkrt_fail(HKRT_ERR_NOMEM, "emulator: cannot allocate %zu bytes", bytes);
  if (d->nblocks == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 16;
    emu_block *b = realloc(d->blocks, cap * sizeof *b);
    if (!b) return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
    d->blocks = b;
    d->cap = cap;
  }
  /* a 256-byte gap after every block: a read just past one block never lands
     in the next one, so it is always reported */
  char *p = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!p) return hkrt_fail(HKRT_ERR_NOMEM, "emulator: cannot allocate %zu bytes", bytes);
  memset(p, 0xff, bytes); /* fresh device memory holds garbage, not zeros */
  d->blocks[d->nblocks].p = p;
  d->blocks[d->nblocks].n = bytes;
  d->nblocks++;
  *ptr = p;
  return HKRT_OK;
}

hkrt_status emu_free(emu_device *d, void *ptr) {
  for (size_t i = 0; i < d->nblocks; i++)
    if (d->blocks[i].p == ptr) {
      free(ptr);
      d->blocks[i] = d->blocks[--d->nblocks];
      return HKRT_OK;
    }
  return hkrt_fail(HKRT_ERR_ARG, "hkrt_free: %p was not allocated by this device", ptr);
}

/* The block holding [p, p + n), compared as offsets so that no length,
   however large, wraps. */
static const emu_block *emu_find(const emu_device *d, const void *p, size_t n) {
  uintptr_t c = (uintptr_t)p;
  for (size_t i = 0; i < d->nblocks; i++) {
    uintptr_t b = (uintptr_t)d->blocks[i].p;
    if (c >= b && c - b <= d->blocks[i].n && n <= d->blocks[i].n - (c - b)) return &d->blocks[i];
  }
  return NULL;
}

hkrt_status emu_check_range(emu_device *d, const void *p, size_t n) {
  if (emu_find(d, p, n)) return HKRT_OK;
  return hkrt_fail(HKRT_ERR_ARG, "%zu bytes at %p are not inside one hkrt_alloc block", n, p);
}

/* have: the size of the module's hkemu_api; fields appended after a module
   was built are left alone (the module never calls them). */
static void emu_bind(hkemu_api_t *api, size_t have, emu_device *d) {
  api->thread_id = hkemu_thread_id;
  api->block_id = hkemu_block_id;
  api->barrier = hkemu_barrier;
  api->lds = hkemu_lds;
  api->fault_lds = hkemu_fault_lds;
  api->check_global = hkemu_check_global;
  api->mfma_32x32_bf16 = hkemu_mfma_32x32_bf16;
  if (have >= offsetof(hkemu_api_t, swap_halves_b32) + sizeof api->swap_halves_b32)
    api->swap_halves_b32 = hkemu_swap_halves_b32;
  if (have >= offsetof(hkemu_api_t, mfma_32x32_f8) + sizeof api->mfma_32x32_f8)
    api->mfma_32x32_f8 = hkemu_mfma_32x32_f8;
  if (have >= offsetof(hkemu_api_t, note) + sizeof api->note) {
    api->stats_on = &d->stats_on;
    api->note = hkemu_note;
  }
  if (have >= offsetof(hkemu_api_t, fault_kernel) + sizeof api->fault_kernel) {
    api->grid_dim = hkemu_grid_dim;
    api->fault_kernel = hkemu_fault_kernel;
  }
  if (have >= offsetof(hkemu_api_t, mfma_16x16_bf16) + sizeof api->mfma_16x16_bf16)
    api->mfma_16x16_bf16 = hkemu_mfma_16x16_bf16;
  if (have >= offsetof(hkemu_api_t, lds_read_tr16_b64) + sizeof api->lds_read_tr16_b64)
    api->lds_read_tr16_b64 = hkemu_lds_read_tr16_b64;
}

/* dlopen of the very bytes given (verified by the caller): through an
   anonymous memory file, so that nothing can swap the file on disk between
   the check and the load. *fdp stays open while the module is loaded. */
static void *emu_dlopen_bytes(const void *data, size_t len, int *fdp, char *why, size_t n) {
  int fd = memfd_create("hkgen-emu", MFD_CLOEXEC);
  if (fd < 0) {
    snprintf(why, n, "memfd_create: %s", strerror(errno));
    return NULL;
  }
  size_t put = 0;
  while (put < len) {
    ssize_t w = write(fd, (const char *)data + put, len - put);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    put += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  void *h = put == len ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) {
    snprintf(why, n, "%s", put == len ? dlerror() : "cannot write the memory file");
    close(fd);
    fd = -1;
  }
  *fdp = fd;
  return h;
}

hkrt_status emu_module_load(emu_device *d, const void *data, size_t len, const char *path, emu_module **out) {
  char why[512];
  int fd = -1;
  void *h = emu_dlopen_bytes(data, len, &fd, why, sizeof why);
  if (!h) return hkrt_fail(HKRT_ERR_IO, "emulator: cannot load %s: %s", path, why);
  hkemu_api_t *api = dlsym(h, "hkemu_api");
  const unsigned *version = dlsym(h, "hkemu_abi_version");
  if (!api || !version || *version != HKEMU_ABI_VERSION) {
    dlclose(h);
    close(fd);
    return hkrt_fail(HKRT_ERR_IO, "emulator: %s is not an emulated hkgen kernel of ABI version %d",
                     path, HKEMU_ABI_VERSION);
  }
  size_t have = sizeof *api;
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (dladdr1(api, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) have = sym->st_size;
  emu_bind(api, have, d);
  emu_module *m = calloc(1, sizeof *m);
  if (!m) {
    dlclose(h);
    close(fd);
    return hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
  }
  m->dev = d;
  m->handle = h;
  m->fd = fd;
  *out = m;
  return HKRT_OK;
}

void emu_module_unload(emu_module *m) {
  if (!m) return;
  dlclose(m->handle);
  close(m->fd);
  free(m);
}

hkrt_status emu_function(emu_module *m, const char *name, void **entry, unsigned *args_size) {
  char sym[256];
  snprintf(sym, sizeof sym, "%s__hkemu", name);
  void *e = dlsym(m->handle, sym);
  snprintf(sym, sizeof sym, "%s__hkemu_args", name);
  const unsigned *sz = dlsym(m->handle, sym);
  if (!e || !sz) return hkrt_fail(HKRT_ERR_NOT_FOUND, "emulator: module has no kernel '%s'", name);
  *entry = e;
  *args_size = *sz;
  return HKRT_OK;
}

/* ---- inside a launch ------------------------------------------------------- */

/* Stops the launch from inside a kernel: the fiber is never resumed. */
static void emu_fault(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void emu_fault(const char *fmt, ...) {
  emu_run *r = emu_cur;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(r->msg, sizeof r->msg, "kernel %s, workgroup (%u,%u,%u), thread %d (wave %d, lane %d): %s",
           r->name, r->bid[0], r->bid[1], r->bid[2], r->cur, r->cur / 64, r->cur % 64, what);
  r->fault = 1;
  r->th[r->cur].state = TS_DONE;
  emu_fiber_switch(&r->th[r->cur].fiber, &r->sched);
  abort(); /* not reached */
}

static void emu_yield(emu_tstate s) {
  emu_run *r = emu_cur;
  r->th[r->cur].state = s;
  emu_fiber_switch(&r->th[r->cur].fiber, &r->sched);
}

static int hkemu_thread_id(void) { return emu_cur->cur; }
static int hkemu_block_id(int axis) { return (int)emu_cur->bid[axis]; }
static void hkemu_barrier(void) { emu_yield(TS_BARRIER); }
static int hkemu_grid_dim(int axis) { return (int)emu_cur->grid[axis]; }
static void hkemu_fault_kernel(const char *what) { emu_fault("%s", what); }

static unsigned char *hkemu_lds(unsigned bytes, unsigned *size) {
  emu_run *r = emu_cur;
  if (bytes > r->dev->lds_limit)
    emu_fault("requests %u bytes of LDS; the %s limit is %u", bytes, r->dev->target,
              r->dev->lds_limit);
  *size = bytes;
  return r->lds;
}

static void hkemu_fault_lds(unsigned off, unsigned n, unsigned size, int write) {
  emu_fault("LDS %s of %u bytes at offset %u (0x%x) is out of bounds or misaligned (LDS size %u)",
            write ? "write" : "read", n, off, off, size);
}

static void hkemu_check_global(const void *p, size_t n, int write) {
  emu_run *r = emu_cur;
  const char *c = p;
  if (r->last && c >= r->last->p && c + n <= r->last->p + r->last->n) return;
  const emu_block *b = emu_find(r->dev, p, n);
  if (!b)
    emu_fault("global %s of %zu bytes at address %p is outside every buffer",
              write ? "write" : "read", n, p);
  r->last = b;
}

/* One lane's part of a wave collective MFMA of `kind': its operands (abytes
   each) and nacc accumulator floats staged for the wave, the result copied
   back once the whole wave has arrived (emu_yield). */
static void emu_mfma_stage(emu_coll kind, const void *a, const void *b, size_t abytes, const float *c,
                           float *d, int nacc) {
  emu_run *r = emu_cur;
  int w = r->cur / 64, l = r->cur % 64;
  emu_wave *wv = &r->waves[w];
  wv->kind[l] = kind;
  memcpy(wv->a[l], a, abytes);
  memcpy(wv->b[l], b, abytes);
  memcpy(wv->c[l], c, (size_t)nacc * sizeof(float));
  emu_yield(TS_WAVE);
  memcpy(d, emu_cur->waves[w].d[l], (size_t)nacc * sizeof(float));
}

/* The bf16 forms take their target's k per lane (kpl), whatever the shape. */
static void emu_mfma_bf16(emu_coll kind, int kpl, const unsigned short *a, const unsigned short *b,
                          const float *c, float *d, int nacc) {
  emu_run *r = emu_cur;
  if (kpl != r->dev->kpl)
    emu_fault("MFMA with %d k per lane on %s, which takes %d", kpl, r->dev->target, r->dev->kpl);
  r->waves[r->cur / 64].kpl = kpl;
  emu_mfma_stage(kind, a, b, (size_t)kpl * 2, c, d, nacc);
}

static void hkemu_mfma_32x32_bf16(int kpl, const unsigned short *a, const unsigned short *b,
                           const float *c, float *d) {
  emu_mfma_bf16(EMU_COLL_MFMA, kpl, a, b, c, d, 16);
}

/* The fp8 MFMA takes the formats of its target only: FNUZ on gfx942, OCP on
   gfx950 (hk_emu.h refuses the others at compile time; this catches a module
   built for another target). */
static void hkemu_mfma_32x32_f8(int fa, int fb, const unsigned char *a, const unsigned char *b,
                                const float *c, float *d) {
  emu_run *r = emu_cur;
  for (int i = 0; i < 2; i++) {
    int f = i ? fb : fa;
    unsigned need = hkemu_fp8_fnuz(f) ? TGT_FP8_FNUZ : TGT_FP8_OCP;
    if (f < 0 || f > 3 || !(r->dev->fp8 & need))
      emu_fault("fp8 MFMA with its %s operand in %s on %s, which %s", i ? "B" : "A", hkemu_fp8_name(f),
                r->dev->target,
                r->dev->fp8 & TGT_FP8_FNUZ ? "has FNUZ fp8 only"
                : r->dev->fp8 & TGT_FP8_OCP ? "has OCP fp8 only" : "has no fp8");
  }
  emu_wave *wv = &r->waves[r->cur / 64];
  wv->f8a[r->cur % 64] = fa;
  wv->f8b[r->cur % 64] = fb;
  emu_mfma_stage(EMU_COLL_MFMA_F8, a, b, 8, c, d, 16);
}

/* The 16x16 form: the same k per lane as the 32x32 one on every target. */
static void hkemu_mfma_16x16_bf16(int kpl, const unsigned short *a, const unsigned short *b,
                                  const float *c, float *d) {
  emu_mfma_bf16(EMU_COLL_MFMA16, kpl, a, b, c, d, 4);
}

/* Cross-lane exchange: each lane gets the word of lane l ^ 32. */
static unsigned hkemu_swap_halves_b32(unsigned v) {
  emu_run *r = emu_cur;
  int w = r->cur / 64, l = r->cur % 64;
  r->waves[w].kind[l] = EMU_COLL_SWAP;
  r->waves[w].xv[l] = v;
  emu_yield(TS_WAVE);
  return emu_cur->waves[w].xr[l];
}

/* LDS transposing read (gfx950 ds_read_b64_tr_b16): the lane's offset (in
   bounds and 8-byte aligned: the module checked) staged for the wave, its 4
   elements back once all 64 lanes are there (the instruction wants EXEC full). */
static void hkemu_lds_read_tr16_b64(unsigned off, unsigned short *out) {
  emu_run *r = emu_cur;
  int w = r->cur / 64, l = r->cur % 64;
  r->waves[w].kind[l] = EMU_COLL_TR16;
  r->waves[w].xv[l] = off;
  emu_yield(TS_WAVE);
  memcpy(out, emu_cur->waves[w].tr[l], sizeof emu_cur->waves[w].tr[l]);
}

/* The wave's part: within each group of 16 lanes, a 4 x 4 transpose of
   (lane, element) blocks: lane 16g + i, element j <- lane 16g + 4j + i / 4,
   element i % 4. */
static void emu_tr16_wave(const unsigned char *lds, emu_wave *wv) {
  for (int l = 0; l < 64; l++)
    for (int j = 0; j < 4; j++) {
      int src = (l & ~15) + 4 * j + (l & 15) / 4;
      memcpy(&wv->tr[l][j], lds + wv->xv[src] + 2 * (l % 4), 2);
    }
}

/* Statistics are on (the module checked): the access of the lane running. */
static void hkemu_note(int kind, unsigned long long addr, unsigned bytes, const char *file, int line) {
  emu_run *r = emu_cur;
  es_note(r->dev->stats, r->cur % 64, kind, addr, bytes, file, line);
}

/* ---- the scheduler ----------------------------------------------------------- */

static uint64_t emu_rand(emu_run *r) { /* splitmix64 */
  uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void emu_fiber_main(void) {
  emu_run *r = emu_cur;
  r->entry(r->args);
  r = emu_cur;
  r->th[r->cur].state = TS_DONE;
  emu_fiber_switch(&r->th[r->cur].fiber, &r->sched);
  abort(); /* a finished fiber is never resumed */
}

static void emu_set_fault(emu_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emu_set_fault(emu_run *r, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(r->msg, sizeof r->msg, "kernel %s, workgroup (%u,%u,%u): %s", r->name, r->bid[0],
           r->bid[1], r->bid[2], what);
  r->fault = 1;
}

/* Runs wave w until every lane waits at a barrier or has finished; MFMA
   collectives run when all lanes of the wave have reached them. */
static void emu_run_wave(emu_run *r, int w) {
  int lo = w * 64, hi = lo + 64 < r->nthreads ? lo + 64 : r->nthreads;
  for (;;) {
    for (int t = lo; t < hi && !r->fault; t++) {
      if (r->th[t].state != TS_RUN) continue;
      r->cur = t;
      emu_fiber_switch(&r->sched, &r->th[t].fiber);
    }
    if (r->dev->stats_on) { /* every lane waits or is done: one round's accesses */
      if (r->fault) es_discard(r->dev->stats);
      else es_flush(r->dev->stats, hi - lo);
    }
    if (r->fault) return;
    int at_wave = 0;
    for (int t = lo; t < hi; t++) at_wave += r->th[t].state == TS_WAVE;
    if (!at_wave) return;
    emu_wave *wv = &r->waves[w];
    int kind = 0, mixed = 0;
    for (int t = lo; t < hi; t++)
      if (r->th[t].state == TS_WAVE) {
        if (kind && wv->kind[t - lo] != kind) mixed = 1;
        kind = wv->kind[t - lo];
      }
    const char *what = kind == EMU_COLL_SWAP   ? "lane exchange (swap_halves)"
                       : kind == EMU_COLL_TR16 ? "LDS transposing read"
                                               : "MFMA";
    if (mixed) {
      emu_set_fault(r, "lanes of wave %d wait in different wave collectives (MFMA, lane "
                       "exchange or LDS transposing read: divergent control flow)", w);
      return;
    }
    if (at_wave != 64) {
      emu_set_fault(r, "%s reached by %d of the 64 lanes of wave %d (divergent or partial wave)",
                    what, at_wave, w);
      return;
    }
    if (kind == EMU_COLL_MFMA_F8)
      for (int l = 1; l < 64; l++)
        if (wv->f8a[l] != wv->f8a[0] || wv->f8b[l] != wv->f8b[0]) {
          emu_set_fault(r, "lanes of wave %d run fp8 MFMAs of different formats (lane 0: %s x %s, "
                           "lane %d: %s x %s)", w, hkemu_fp8_name(wv->f8a[0]), hkemu_fp8_name(wv->f8b[0]), l,
                        hkemu_fp8_name(wv->f8a[l]), hkemu_fp8_name(wv->f8b[l]));
          return;
        }
    if (kind == EMU_COLL_SWAP)
      for (int l = 0; l < 64; l++) wv->xr[l] = wv->xv[l ^ 32];
    else if (kind == EMU_COLL_TR16)
      emu_tr16_wave(r->lds, wv);
    else if (kind == EMU_COLL_MFMA_F8)
      hkemu_mfma_wave_32x32_f8(wv->f8a[0], wv->f8b[0], (const unsigned char(*)[16])wv->a,
                               (const unsigned char(*)[16])wv->b, (const float(*)[16])wv->c, wv->d);
    else if (kind == EMU_COLL_MFMA16)
      hkemu_mfma_wave_16x16_bf16(wv->kpl, (const unsigned short(*)[8])wv->a,
                                 (const unsigned short(*)[8])wv->b, (const float(*)[16])wv->c, wv->d);
    else
      hkemu_mfma_wave_32x32_bf16(wv->kpl, (const unsigned short(*)[8])wv->a,
                                 (const unsigned short(*)[8])wv->b, (const float(*)[16])wv->c, wv->d);
    for (int t = lo; t < hi; t++) r->th[t].state = TS_RUN;
  }
}

static void emu_run_workgroup(emu_run *r) {
  for (int t = 0; t < r->nthreads; t++) {
    emu_fiber_reset(&r->th[t].fiber, emu_fiber_main);
    r->th[t].state = TS_RUN;
  }
  memset(r->lds, 0xff, r->dev->lds_limit); /* LDS starts as garbage */
  int order[EMU_MAX_THREADS / 64];
  for (;;) {
    for (int i = 0; i < r->nwaves; i++) order[i] = i;
    for (int i = r->nwaves - 1; i > 0; i--) { /* a fresh wave order every phase */
      int j = (int)(emu_rand(r) % (uint64_t)(i + 1)), tmp = order[i];
      order[i] = order[j];
      order[j] = tmp;
    }
    for (int i = 0; i < r->nwaves && !r->fault; i++) emu_run_wave(r, order[i]);
    if (r->fault) return;
    int done = 0;
    for (int t = 0; t < r->nthreads; t++) done += r->th[t].state == TS_DONE;
    if (done == r->nthreads) return;
    for (int t = 0; t < r->nthreads; t++) /* everyone left is at the barrier */
      if (r->th[t].state == TS_BARRIER) r->th[t].state = TS_RUN;
  }
}

/* A permutation of the linear workgroup ids 0 .. n - 1 (n <= 2^20), drawn
   from the device's seed and its launch count (Fisher-Yates): each launch
   its own order, the same ones for the same seed. NULL when out of memory. */
static uint32_t *emu_order(emu_device *d, unsigned long long n) {
  uint32_t *o = malloc((size_t)n * sizeof *o);
  if (!o) return NULL;
  emu_run g = {.rng = d->seed ^ 0x9e3779b97f4a7c15ull * ++d->launches};
  for (unsigned long long i = 0; i < n; i++) o[i] = (uint32_t)i;
  for (unsigned long long i = n - 1; i > 0; i--) {
    unsigned long long j = emu_rand(&g) % (i + 1);
    uint32_t t = o[i];
    o[i] = o[j];
    o[j] = t;
  }
  return o;
}

hkrt_status emu_launch(emu_device *d, void *entry, const char *name, const unsigned grid[3],
                       const unsigned block[3], const void *args, size_t args_size) {
  (void)args_size;
  unsigned long long nthreads = (unsigned long long)block[0] * block[1] * block[2];
  if (block[1] != 1 || block[2] != 1 || nthreads == 0 || nthreads > EMU_MAX_THREADS)
    return hkrt_fail(HKRT_ERR_ARG, "emulator: block (%u,%u,%u): 1 to %d threads along x only",
                     block[0], block[1], block[2], EMU_MAX_THREADS);
  if (!grid[0] || !grid[1] || !grid[2])
    return hkrt_fail(HKRT_ERR_ARG, "emulator: empty grid (%u,%u,%u)", grid[0], grid[1], grid[2]);
  unsigned long long wgs = (unsigned long long)grid[0] * grid[1] * grid[2];
  if (wgs > EMU_MAX_WORKGROUPS)
    return hkrt_fail(HKRT_ERR_ARG, "emulator: kernel %s: a grid of %llu workgroups; the emulator runs at most %llu "
                     "per launch (a few thousand a second): emulate a smaller problem", name, wgs, EMU_MAX_WORKGROUPS);
  emu_run r;
  uint32_t *order = NULL;
  memset(&r, 0, sizeof r);
  r.dev = d;
  r.name = name;
  *(void **)&r.entry = entry;
  r.args = args;
  memcpy(r.grid, grid, sizeof r.grid);
  r.nthreads = (int)nthreads;
  r.nwaves = (r.nthreads + 63) / 64;
  r.th = calloc((size_t)r.nthreads, sizeof *r.th);
  r.waves = calloc((size_t)r.nwaves, sizeof *r.waves);
  r.lds = aligned_alloc(64, d->lds_limit);
  hkrt_status st = HKRT_OK;
  if (!r.th || !r.waves || !r.lds) {
    st = hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
    goto out;
  }
  if (d->nstacks < r.nthreads) { /* mapping stacks is costly: grow the pool once */
    emu_fiber *s = realloc(d->stacks, (size_t)r.nthreads * sizeof *s);
    if (!s) {
      st = hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
      goto out;
    }
    d->stacks = s;
    for (; d->nstacks < r.nthreads; d->nstacks++)
      if (emu_fiber_init(&d->stacks[d->nstacks], EMU_STACK, emu_fiber_main) < 0) {
        st = hkrt_fail(HKRT_ERR_NOMEM, "emulator: cannot map fiber stacks");
        goto out;
      }
  }
  for (int t = 0; t < r.nthreads; t++) r.th[t].fiber = d->stacks[t];
  if (d->shuffle && !(order = emu_order(d, wgs))) {
    st = hkrt_fail(HKRT_ERR_NOMEM, "out of memory");
    goto out;
  }
  emu_run *saved = emu_cur;
  emu_cur = &r;
  for (unsigned long long i = 0; i < wgs && !r.fault; i++) {
    uint64_t id = order ? order[i] : i; /* linear id: x fastest, then y, then z */
    r.bid[0] = (unsigned)(id % grid[0]);
    r.bid[1] = (unsigned)(id / grid[0] % grid[1]);
    r.bid[2] = (unsigned)(id / grid[0] / grid[1]);
    r.rng = d->seed ^ id * 0x2545f4914f6cdd1dull;
    emu_run_workgroup(&r);
  }
  emu_cur = saved;
  if (r.fault) st = hkrt_fail(HKRT_ERR_KERNEL_FAULT, "%s", r.msg);
out:
  free(order);
  free(r.th);
  free(r.waves);
  free(r.lds);
  return st;
}

/* ---- the backend table ------------------------------------------------------- */

static hkrt_status emu_ops_open(const char *target, void **dev) { return emu_open(target, (emu_device **)dev); }
static void emu_ops_close(void *dev) { emu_close(dev); }
static hkrt_status emu_ops_alloc(void *dev, size_t n, void **p) {
  emu_device *d = dev;
  pthread_mutex_lock(&d->lock);
  hkrt_status st = emu_alloc(d, n, p);
  pthread_mutex_unlock(&d->lock);
  return st;
}

static hkrt_status emu_ops_free(void *dev, void *p) {
  emu_device *d = dev;
  pthread_mutex_lock(&d->lock);
  hkrt_status st = emu_free(d, p);
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* Device memory is host memory: a copy is a memcpy into a checked block. */
static hkrt_status emu_ops_to_device(void *dev, void *dst, const void *src, size_t n) {
  emu_device *d = dev;
  pthread_mutex_lock(&d->lock);
  hkrt_status st = emu_check_range(d, dst, n);
  if (st == HKRT_OK) memcpy(dst, src, n);
  pthread_mutex_unlock(&d->lock);
  return st;
}

static hkrt_status emu_ops_to_host(void *dev, void *dst, const void *src, size_t n) {
  emu_device *d = dev;
  pthread_mutex_lock(&d->lock);
  hkrt_status st = emu_check_range(d, src, n);
  if (st == HKRT_OK) memcpy(dst, src, n);
  pthread_mutex_unlock(&d->lock);
  return st;
}

static hkrt_status emu_ops_module_load(void *dev, const void *data, size_t len, const char *name, void **mod) {
  return emu_module_load(dev, data, len, name, (emu_module **)mod);
}
static void emu_ops_module_unload(void *mod) { emu_module_unload(mod); }
static hkrt_status emu_ops_function(void *mod, const char *name, void **fn, unsigned *sz) {
  return emu_function(mod, name, fn, sz);
}
static hkrt_status emu_ops_launch(void *dev, void *fn, const char *name, const unsigned grid[3],
                                  const unsigned block[3], unsigned shared_bytes, const void *args,
                                  size_t size, void *stream) {
  (void)stream; /* the emulator runs synchronously */
  if (shared_bytes)
    return hkrt_fail(HKRT_ERR_LAUNCH, "emulator: kernel %s asks for %u bytes of dynamic LDS; the emulator has none",
                     name, shared_bytes);
  emu_device *d = dev;
  pthread_mutex_lock(&d->lock);
  hkrt_status st = emu_launch(d, fn, name, grid, block, args, size);
  pthread_mutex_unlock(&d->lock);
  return st;
}
static hkrt_status emu_ops_sync(void *dev) {
  (void)dev;
  return HKRT_OK;
}

long long emu_units(const emu_device *d) { return d->units; }

static hkrt_status emu_ops_units(void *dev, long long *out) {
  *out = emu_units(dev);
  return HKRT_OK;
}

const hkrt_backend_ops hkrt_emu_ops = {
    "emulator", emu_ops_open, emu_ops_close, emu_ops_alloc, emu_ops_free, emu_ops_to_device,
    emu_ops_to_host, emu_ops_module_load, emu_ops_module_unload, emu_ops_function, emu_ops_launch,
    emu_ops_sync, NULL, NULL, emu_ops_units, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL}; /* no device clock: no timing, no L2 flush */
