/* emu_launch.c: whole launches on libhkrt's emulator, through the public API
 * (hkrt.h), of the hand-written kernels in tests/emu/ (.hip files) built for the
 * host (tests/Makefile: build/emu/, .so files).
 *
 *   emu_launch barrier SO_DIR   test emu_barrier: barrier_with.so, barrier_without.so
 *   emu_launch oob SO_DIR       test emu_oob: fault_kernels.so
 *   emu_launch fp8 SO_DIR       test emu_fp8_launch: fp8_kernel_gfx942.so, fp8_kernel_gfx950.so
 *   emu_launch tr SO_DIR        test emu_tr_launch: tr_kernel_gfx950.so
 *
 * Exit status 0 when every check passes, 1 otherwise, 2 on a setup error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hk_emu_fp8.h"
#include "hkrt.h"
#include "../unit/testlib.h"


/* the shared counting check of the C tests (unit/testlib.h) */
#define CHECK T_CHECK
#define failures t_failures
#define checks t_checks

static hkrt_device *open_dev(const char *target) {
  hkrt_device *d = NULL;
  if (hkrt_device_open(HKRT_BACKEND_EMU, target, &d) != HKRT_OK) t_die("cannot open emulator %s", target);
  return d;
}

static hkrt_func *load_fn(hkrt_device *d, const char *dir, const char *so, const char *name,
                          hkrt_module **mod) {
  char path[4096];
  hkrt_func *fn = NULL;
  snprintf(path, sizeof path, "%s/%s", dir, so);
  if (hkrt_module_load(d, path, mod) != HKRT_OK) t_die("cannot load %s", path);
  if (hkrt_module_function(*mod, name, &fn) != HKRT_OK) t_die("%s has no kernel %s", path, name);
  return fn;
}

static void *dev_alloc(hkrt_device *d, size_t bytes) {
  void *p = NULL;
  if (hkrt_alloc(d, bytes, &p) != HKRT_OK) t_die("hkrt_alloc(%zu)", bytes);
  return p;
}

static void fill16(hkrt_device *d, void *dev, size_t n, uint16_t v) {
  uint16_t *h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) h[i] = v;
  if (hkrt_copy_to_device(d, dev, h, n * 2) != HKRT_OK) t_die("copy to device");
  free(h);
}

static void get16(hkrt_device *d, uint16_t *h, const void *dev, size_t n) {
  if (hkrt_copy_to_host(d, h, dev, n * 2) != HKRT_OK) t_die("copy to host");
}

/* ---- emu_barrier ------------------------------------------------------------
 * barrier_kernel.hip: thread t of workgroup g writes 0x5a000000 | g << 8 | t
 * to LDS word t; then reads word (t + 64) % 256 (same lane, next wave) and
 * stores its low 16 bits to out[g * 256 + t]. Right answer:
 * g << 8 | (t + 64) % 256. LDS starts as 0xff bytes in the emulator, so a
 * word read before it is written gives 0xffff.
 *
 * The assertions, for every seed below and every workgroup:
 *  - with the barrier: every output is the right answer;
 *  - without it: for each wave, all 64 lanes hold the right answer or all 64
 *    hold 0xffff (a wave runs alone until it ends or reaches a barrier, so it
 *    reads its neighbour's slot either entirely before or entirely after the
 *    neighbour wrote it), and the set of stale waves is neither empty nor all
 *    four. It cannot be empty whatever the order: "wave w ran after wave
 *    w+1 (mod 4)" cannot hold for all four waves around the cycle, so some
 *    wave always reads before its neighbour has written. The missing barrier
 *    is therefore caught for every seed, not by luck;
 *  - across the seeds and workgroups, at least two different stale sets are
 *    seen: the wave order really is shuffled (a fixed order would give one
 *    set), and it is a function of the seed: a second run with the same seed
 *    gives identical output.
 * The seeds are fixed, for reproducibility, and printed. */
static const unsigned long long barrier_seeds[] = {1ull, 2ull, 3ull, 42ull, 0x9e3779b97f4a7c15ull};
#define BARRIER_GROUPS 8u
#define POISON_OUT 0xdeadu

static void barrier_launch(hkrt_device *d, hkrt_func *fn, unsigned long long seed, void *out,
                           uint16_t *h) {
  unsigned grid[3] = {BARRIER_GROUPS, 1, 1}, block[3] = {256, 1, 1};
  void *args[1] = {out};
  fill16(d, out, BARRIER_GROUPS * 256, POISON_OUT);
  if (hkrt_emu_configure(d, seed, 0) != HKRT_OK) t_die("hkrt_emu_configure");
  hkrt_status st = hkrt_launch(fn, grid, block, args, sizeof args, NULL);
  CHECK(st == HKRT_OK, "launch with seed %llu: %s: %s", seed, hkrt_status_name(st), hkrt_error());
  get16(d, h, out, BARRIER_GROUPS * 256);
}

static int test_barrier(const char *dir) {
  hkrt_device *d = open_dev("gfx942");
  hkrt_module *mw = NULL, *mn = NULL;
  hkrt_func *with = load_fn(d, dir, "barrier_with.so", "barrier_exchange", &mw);
  hkrt_func *without = load_fn(d, dir, "barrier_without.so", "barrier_exchange", &mn);
  void *out = dev_alloc(d, BARRIER_GROUPS * 256 * 2);
  static uint16_t h[BARRIER_GROUPS * 256], again[BARRIER_GROUPS * 256];
  unsigned masks_seen = 0; /* bit m: stale-wave set m was seen */
  {
    /* dynamic shared memory reaches the backend's launch: the emulator has none */
    unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
    void *args[1] = {out};
    hkrt_status st = hkrt_launch_ex(with, grid, block, 4096, args, sizeof args, NULL);
    CHECK(st == HKRT_ERR_LAUNCH && strstr(hkrt_error(), "4096 bytes of dynamic LDS"),
          "launch with 4096 dynamic bytes: %s: %s", hkrt_status_name(st), hkrt_error());
  }
  size_t nseeds = sizeof barrier_seeds / sizeof barrier_seeds[0];
  printf("emu_barrier: %u workgroups x 4 waves, seeds", BARRIER_GROUPS);
  for (size_t s = 0; s < nseeds; s++) printf(" %llu", barrier_seeds[s]);
  printf("\n");
  for (size_t s = 0; s < nseeds; s++) {
    unsigned long long seed = barrier_seeds[s];
    barrier_launch(d, with, seed, out, h);
    int wrong = 0;
    for (unsigned g = 0; g < BARRIER_GROUPS; g++)
      for (unsigned t = 0; t < 256; t++)
        wrong += h[g * 256 + t] != (uint16_t)(g << 8 | (t + 64) % 256);
    CHECK(wrong == 0, "with the barrier, seed %llu: %d of %u outputs wrong", seed, wrong,
          BARRIER_GROUPS * 256);

    barrier_launch(d, without, seed, out, h);
    printf("  seed %-20llu without barrier, stale waves per workgroup:", seed);
    for (unsigned g = 0; g < BARRIER_GROUPS; g++) {
      unsigned mask = 0;
      for (unsigned w = 0; w < 4; w++) {
        int right = 0, stale = 0;
        for (unsigned l = 0; l < 64; l++) {
          unsigned t = w * 64 + l;
          uint16_t v = h[g * 256 + t];
          right += v == (uint16_t)(g << 8 | (t + 64) % 256);
          stale += v == 0xffffu;
        }
        CHECK(right == 64 || stale == 64,
              "without the barrier, seed %llu, workgroup %u, wave %u: %d right, %d stale "
              "(0xffff), %d other values: a wave must see all or none of its neighbour's writes",
              seed, g, w, right, stale, 64 - right - stale);
        if (stale == 64) mask |= 1u << w;
      }
      printf(" {");
      for (unsigned w = 0; w < 4; w++)
        if (mask >> w & 1) printf("%s%u", (mask & ((1u << w) - 1)) ? "," : "", w);
      printf("}");
      CHECK(mask != 0, "without the barrier, seed %llu, workgroup %u: no stale wave, which no "
            "wave order can give", seed, g);
      CHECK(mask != 15, "without the barrier, seed %llu, workgroup %u: all four waves stale, "
            "which no wave order can give", seed, g);
      masks_seen |= 1u << mask;
    }
    printf("\n");
    barrier_launch(d, without, seed, out, again);
    CHECK(!memcmp(h, again, sizeof h), "without the barrier, seed %llu: two runs differ: the "
          "wave order is not a function of the seed", seed);
  }
  int distinct = __builtin_popcount(masks_seen);
  printf("emu_barrier: %d distinct stale-wave sets over %zu seeds x %u workgroups\n", distinct,
         nseeds, BARRIER_GROUPS);
  CHECK(distinct >= 2, "the wave order never changed (%d distinct stale sets)", distinct);
  hkrt_free(d, out);
  hkrt_module_unload(mw);
  hkrt_module_unload(mn);
  hkrt_device_close(d);
  return 0;
}

/* ---- emu_oob ------------------------------------------------------------------ */

struct fault_args { /* struct hk_args of fault_kernels.hip */
  const void *in;
  void *out;
  int n, bad, wg, who;
};

/* Launches fn; with want_fault, checks HKRT_ERR_KERNEL_FAULT and that the
   message holds every string of need[] (NULL-terminated). */
static void fault_case(const char *what, hkrt_func *fn, unsigned groups, struct fault_args *a,
                       int want_fault, const char *const *need) {
  unsigned grid[3] = {groups, 1, 1}, block[3] = {256, 1, 1};
  hkrt_status st = hkrt_launch(fn, grid, block, a, sizeof *a, NULL);
  const char *msg = hkrt_error();
  if (!want_fault) {
    CHECK(st == HKRT_OK, "%s (control, legal): %s: %s", what, hkrt_status_name(st), msg);
    printf("  %-44s control: %s\n", what, hkrt_status_name(st));
    return;
  }
  printf("  %-44s fault:   %s: %s\n", what, hkrt_status_name(st), msg);
  CHECK(st == HKRT_ERR_KERNEL_FAULT, "%s: status %s, expected HKRT_ERR_KERNEL_FAULT (%s)", what,
        hkrt_status_name(st), msg);
  for (int i = 0; need[i]; i++)
    CHECK(strstr(msg, need[i]) != NULL, "%s: the message \"%s\" does not contain \"%s\"", what, msg,
          need[i]);
}

static int test_oob(const char *dir) {
  hkrt_device *d = open_dev("gfx942");
  hkrt_module *mod = NULL;
  hkrt_func *fg = load_fn(d, dir, "fault_kernels.so", "fault_global_read", &mod);
  hkrt_func *fl, *fs, *fm;
  if (hkrt_module_function(mod, "fault_lds_write", &fl) != HKRT_OK ||
      hkrt_module_function(mod, "fault_lds_size", &fs) != HKRT_OK ||
      hkrt_module_function(mod, "fault_mfma_divergent", &fm) != HKRT_OK)
    t_die("fault_kernels.so lacks a kernel");
  hkrt_emu_configure(d, 7, 0);
  printf("emu_oob: gfx942 emulator, seed 7\n");

  /* (a) global read one element past a 1000-element buffer. 2000 bytes: the
     emulator rounds blocks up to 256 bytes, so in + 1000 lies in the padding
     of the same block, not at the start of another buffer. */
  enum { N = 1000 };
  static uint16_t hin[N], hout[1024];
  for (int i = 0; i < N; i++) hin[i] = (uint16_t)(i * 37 + 11);
  void *in = dev_alloc(d, N * 2), *out = dev_alloc(d, 1024 * 2);
  if (hkrt_copy_to_device(d, in, hin, sizeof hin) != HKRT_OK) t_die("copy");
  struct fault_args a = {in, out, N, 0, 2, 77};
  fill16(d, out, N, POISON_OUT);
  fault_case("global read past the end (bad = 0)", fg, 4, &a, 0, NULL);
  get16(d, hout, out, N);
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += hout[i] != (i == 2 * 256 + 77 ? hin[N - 1] : hin[i]);
  CHECK(wrong == 0, "global read control: %d of %d outputs wrong", wrong, N);
  char addr[64];
  snprintf(addr, sizeof addr, "address %p ", (void *)((char *)in + N * 2));
  a.bad = 1;
  {
    const char *need[] = {"kernel fault_global_read", "workgroup (2,0,0)", "thread 77",
                          "wave 1, lane 13", "global read of 2 bytes", addr, NULL};
    fault_case("global read past the end (bad = 1)", fg, 4, &a, 1, need);
  }
  a.bad = 0; /* the device still works after a fault */
  fault_case("global read, again after the fault", fg, 4, &a, 0, NULL);

  /* (b) LDS write past the declared 4096 bytes, by thread 200 of workgroup 1. */
  struct fault_args b = {in, out, 1024, 0, 1, 200};
  fill16(d, out, 1024, POISON_OUT);
  fault_case("LDS write past 4096 bytes (bad = 0)", fl, 4, &b, 0, NULL);
  get16(d, hout, out, 1024);
  wrong = 0;
  for (int i = 0; i < 1024; i++) /* threads 200 and 255 of workgroup 1 share a word */
    if (i != 256 + 200 && i != 256 + 255) wrong += hout[i] != (uint16_t)(i % 256);
  CHECK(wrong == 0, "LDS write control: %d outputs wrong", wrong);
  b.bad = 1;
  {
    const char *need[] = {"kernel fault_lds_write", "workgroup (1,0,0)", "thread 200",
                          "wave 3, lane 8", "LDS write of 4 bytes at offset 4096",
                          "(LDS size 4096)", NULL};
    fault_case("LDS write past 4096 bytes (bad = 1)", fl, 4, &b, 1, need);
  }

  /* (c) 70000 bytes of LDS: over gfx942's 65536 (the device compiler refuses
     it too); legal on gfx950 (163840), the control. The first lane to run
     faults: lane 0 of whichever wave the seed runs first, in workgroup 0. */
  struct fault_args c = {in, out, 1024, 0, 0, 0};
  {
    const char *need[] = {"kernel fault_lds_size", "workgroup (0,0,0)", ", lane 0)",
                          "requests 70000 bytes of LDS", "the gfx942 limit is 65536", NULL};
    fault_case("70000 bytes of LDS on gfx942", fs, 2, &c, 1, need);
  }
  {
    hkrt_device *d950 = open_dev("gfx950");
    hkrt_module *m950 = NULL;
    hkrt_func *fs950 = load_fn(d950, dir, "fault_kernels.so", "fault_lds_size", &m950);
    void *out950 = dev_alloc(d950, 1024 * 2);
    struct fault_args c950 = {NULL, out950, 1024, 0, 0, 0};
    fill16(d950, out950, 1024, POISON_OUT);
    fault_case("70000 bytes of LDS on gfx950", fs950, 4, &c950, 0, NULL);
    get16(d950, hout, out950, 1024);
    wrong = 0;
    for (int i = 0; i < 1024; i++) wrong += hout[i] != (uint16_t)(i % 256);
    CHECK(wrong == 0, "LDS size control on gfx950: %d outputs wrong", wrong);
    hkrt_free(d950, out950);
    hkrt_module_unload(m950);
    hkrt_device_close(d950);
  }

  /* (d) MFMA reached by lanes 0..31 only of wave 2 (thread 130) of workgroup 1. */
  struct fault_args m = {in, out, 1024, 0, 1, 130};
  fill16(d, out, 1024, POISON_OUT);
  fault_case("MFMA in every lane (bad = 0)", fm, 4, &m, 0, NULL);
  get16(d, hout, out, 1024);
  wrong = 0;
  for (int i = 0; i < 1024; i++) wrong += hout[i] != 0x4100u; /* bf16 8.0: 8 products of 1 */
  CHECK(wrong == 0, "MFMA control: %d outputs are not 8.0", wrong);
  m.bad = 1;
  {
    const char *need[] = {"kernel fault_mfma_divergent", "workgroup (1,0,0)",
                          "MFMA reached by 32 of the 64 lanes of wave 2", NULL};
    fault_case("MFMA in half a wave (bad = 1)", fm, 4, &m, 1, need);
  }

  hkrt_free(d, in);
  hkrt_free(d, out);
  hkrt_module_unload(mod);
  hkrt_device_close(d);
  return 0;
}

/* ---- emu_fp8_launch -----------------------------------------------------------
 * fp8_kernel.hip: one wave runs one 32x32x16 fp8 MFMA (the target's E4M3 times
 * its E5M2) through hk_emu.h and libhkrt's wave collective; D is compared with
 * fp64 of the decoded codes (hk_emu_fp8.h, checked by emu_fp8). Fresh random
 * codes (finite, |value| <= 64) each run; D poisoned with NaN first. Then a
 * misaligned operand address must fault (hk_global_load_b64), and the gfx942
 * module on a gfx950 device must fault: its MFMA asks for FNUZ. */
static unsigned char fp8_code(uint64_t *rng, int fmt) {
  for (;;) {
    unsigned c = (unsigned)(t_uniform(rng) * 128.0 + 128.0) & 0xffu;
    float v = hkemu_fp8_decode(c, fmt);
    if (v == v && fabsf(v) <= 64.0f) return (unsigned char)c;
  }
}

static void fp8_run(const char *target, const char *dir, const char *so, int e4m3, int e5m2, uint64_t *rng) {
  hkrt_device *d = open_dev(target);
  hkrt_module *mod = NULL;
  hkrt_func *fn = load_fn(d, dir, so, "fp8_mfma_one", &mod);
  static unsigned char A[32 * 16], Bt[32 * 16]; /* Bt[col * 16 + k] = B[k][col] */
  static float D[32 * 32];
  for (int i = 0; i < 32 * 16; i++) {
    A[i] = fp8_code(rng, e4m3);
    Bt[i] = fp8_code(rng, e5m2);
  }
  for (int i = 0; i < 32 * 32; i++) D[i] = NAN;
  void *da = dev_alloc(d, sizeof A), *db = dev_alloc(d, sizeof Bt), *dd = dev_alloc(d, sizeof D);
  if (hkrt_copy_to_device(d, da, A, sizeof A) != HKRT_OK || hkrt_copy_to_device(d, db, Bt, sizeof Bt) != HKRT_OK ||
      hkrt_copy_to_device(d, dd, D, sizeof D) != HKRT_OK)
    t_die("copy to device");
  unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  void *args[3] = {da, db, dd};
  hkrt_status st = hkrt_launch(fn, grid, block, args, sizeof args, NULL);
  CHECK(st == HKRT_OK, "%s fp8 MFMA launch: %s: %s", target, hkrt_status_name(st), hkrt_error());
  if (hkrt_copy_to_host(d, D, dd, sizeof D) != HKRT_OK) t_die("copy to host");
  double num = 0, den = 0;
  int nans = 0;
  for (int r = 0; r < 32; r++)
    for (int c = 0; c < 32; c++) {
      double ref = 0;
      for (int k = 0; k < 16; k++)
        ref += (double)hkemu_fp8_decode(A[r * 16 + k], e4m3) * (double)hkemu_fp8_decode(Bt[c * 16 + k], e5m2);
      double got = D[r * 32 + c];
      nans += isnan(got) || isinf(got);
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
  double err = sqrt(num / den);
  CHECK(nans == 0, "%s: %d of 1024 results NaN or inf", target, nans);
  CHECK(err <= 1e-6, "%s: relative L2 error %.3e (tolerance 1e-6)", target, err);
  printf("  %s fp8 MFMA (E4M3 x E5M2) through hk_emu.h: relative L2 %.3e, %d NaN\n", target, err, nans);
  hkrt_module_unload(mod);
  hkrt_device_close(d);
}

static int test_fp8(const char *dir) {
  const char *env = getenv("HKGEN_TEST_SEED");
  uint64_t rng = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
  printf("seed %llu (HKGEN_TEST_SEED repeats this run)\n", (unsigned long long)rng);
  fp8_run("gfx942", dir, "fp8_kernel_gfx942.so", HKEMU_FP8_E4M3_FNUZ, HKEMU_FP8_E5M2_FNUZ, &rng);
  fp8_run("gfx950", dir, "fp8_kernel_gfx950.so", HKEMU_FP8_E4M3_OCP, HKEMU_FP8_E5M2_OCP, &rng);
  /* hk_global_load_b64 at an address that is not 8-byte aligned faults */
  {
    hkrt_device *d = open_dev("gfx942");
    hkrt_module *mod = NULL;
    hkrt_func *fn = load_fn(d, dir, "fp8_kernel_gfx942.so", "fp8_mfma_one", &mod);
    char *buf = dev_alloc(d, 32 * 32 * 4 + 16);
    void *args[3] = {buf + 4, buf, buf};
    unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    hkrt_status st = hkrt_launch(fn, grid, block, args, sizeof args, NULL);
    const char *msg = hkrt_error();
    printf("  misaligned 8-byte load: %s: %s\n", hkrt_status_name(st), msg);
    CHECK(st == HKRT_ERR_KERNEL_FAULT && strstr(msg, "global read of 8 bytes") != NULL,
          "misaligned hk_global_load_b64: status %s, message \"%s\"", hkrt_status_name(st), msg);
    hkrt_module_unload(mod);
    hkrt_device_close(d);
  }
  /* a module of the other target: its fp8 formats are refused at the MFMA */
  hkrt_device *d = open_dev("gfx950");
  hkrt_module *mod = NULL;
  hkrt_func *fn = load_fn(d, dir, "fp8_kernel_gfx942.so", "fp8_mfma_one", &mod);
  void *buf = dev_alloc(d, 32 * 32 * 4);
  void *args[3] = {buf, buf, buf};
  unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  hkrt_status st = hkrt_launch(fn, grid, block, args, sizeof args, NULL);
  const char *msg = hkrt_error();
  printf("  gfx942 module on gfx950: %s: %s\n", hkrt_status_name(st), msg);
  CHECK(st == HKRT_ERR_KERNEL_FAULT, "gfx942 fp8 module on gfx950: status %s, expected HKRT_ERR_KERNEL_FAULT",
        hkrt_status_name(st));
  CHECK(strstr(msg, "fp8 MFMA with its A operand in E4M3_FNUZ on gfx950, which has OCP fp8 only") != NULL,
        "gfx942 fp8 module on gfx950: message \"%s\"", msg);
  hkrt_module_unload(mod);
  hkrt_device_close(d);
  return 0;
}

/* ---- emu_tr_launch -------------------------------------------------------------
 * tr_kernel.hip: one wave's hk_lds_load_tr_b64 at random 8-byte aligned lane
 * offsets over LDS whose element e holds e. The rule (hk_cdna.h): lane
 * 16g + i gets, as element j, element i % 4 of the 4 that lane 16g + 4j + i/4
 * names, i.e. LDS element offs[16g + 4j + i/4] / 2 + i % 4. Also: the read
 * from half the wave (divergent control flow) stops the launch. */
static void tr_run(hkrt_device *d, hkrt_func *fn, int divergent, const int *offs, unsigned short *out,
                   hkrt_status *st) {
  int *doffs = dev_alloc(d, 64 * sizeof(int));
  unsigned short *dout = dev_alloc(d, 64 * 4 * 2);
  if (hkrt_copy_to_device(d, doffs, offs, 64 * sizeof(int)) != HKRT_OK) t_die("copy to device");
  fill16(d, dout, 64 * 4, 0xdead);
  struct {
    const int *offs;
    unsigned short *out;
    int divergent;
  } a = {doffs, dout, divergent};
  unsigned grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  *st = hkrt_launch(fn, grid, block, &a, sizeof a, NULL);
  if (*st == HKRT_OK) get16(d, out, dout, 64 * 4);
  hkrt_free(d, doffs);
  hkrt_free(d, dout);
}

static int test_tr(const char *dir) {
  hkrt_device *d = open_dev("gfx950");
  hkrt_module *mod = NULL;
  hkrt_func *fn = load_fn(d, dir, "tr_kernel_gfx950.so", "tr_read_one", &mod);
  uint64_t rng = 0x7472616e73ull;
  int offs[64], bad = 0;
  unsigned short out[64 * 4];
  for (int rep = 0; rep < 8; rep++) {
    for (int l = 0; l < 64; l++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      offs[l] = (int)((rng >> 33) % (4096 / 8)) * 8;
    }
    hkrt_status st;
    tr_run(d, fn, 0, offs, out, &st);
    CHECK(st == HKRT_OK, "transposing read launch: %s: %s", hkrt_status_name(st), hkrt_error());
    for (int l = 0; l < 64 && st == HKRT_OK; l++)
      for (int j = 0; j < 4; j++) {
        int src = (l & ~15) + 4 * j + (l & 15) / 4;
        bad += out[4 * l + j] != (unsigned short)(offs[src] / 2 + l % 4);
      }
  }
  CHECK(bad == 0, "transposing read: %d of %d elements not the rule's", bad, 8 * 64 * 4);
  hkrt_status st;
  tr_run(d, fn, 1, offs, out, &st);
  CHECK(st != HKRT_OK && strstr(hkrt_error(), "transposing read"),
        "a transposing read from 32 of 64 lanes must stop the launch (got %s: %s)", hkrt_status_name(st),
        hkrt_error());
  printf("  gfx950 transposing read: 8 x 64 lanes by the rule, the divergent one refused\n");
  hkrt_module_unload(mod);
  hkrt_device_close(d);
  return 0;
}

int main(int argc, char **argv) {
  t_prog = "emu_launch";
  T_DIE_NOTE(hkrt_error);
  if (argc != 3 ||
      (strcmp(argv[1], "barrier") && strcmp(argv[1], "oob") && strcmp(argv[1], "fp8") && strcmp(argv[1], "tr"))) {
    fprintf(stderr, "usage: %s barrier|oob|fp8|tr SO_DIR\n", argv[0]);
    return 2;
  }
  if (!strcmp(argv[1], "barrier")) test_barrier(argv[2]);
  else if (!strcmp(argv[1], "fp8")) test_fp8(argv[2]);
  else if (!strcmp(argv[1], "tr")) test_tr(argv[2]);
  else test_oob(argv[2]);
  printf("%s: %d checks, %d failed\n", argv[1], checks, failures);
  return failures ? 1 : 0;
}
