/* fuzz_manifest.c: libFuzzer target for libhkrt's manifest reader and
   selection. Every input is written as DIR/manifest.json and opened on an
   emulated gfx942 device; a catalogue that opens is asked to select for a
   few problems and to pack a few argument lists for each of its kernels
   (no launch: nothing the input names is loaded). Any crash, leak or
   sanitizer report is a finding. Build: make -C tests build/fuzz_manifest. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hkrt.h"

static char fz_dir[64];
static hkrt_device *fz_dev;

static void fz_setup(void) {
  snprintf(fz_dir, sizeof fz_dir, "/tmp/fuzz_manifest.%ld", (long)getpid());
  char cmd[128];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", fz_dir);
  if (system(cmd) != 0 || hkrt_device_open(HKRT_BACKEND_EMU, "gfx942", &fz_dev) != HKRT_OK) abort();
}

/* Arguments by the names a kernel may have, some absurd (v comes from the
   input), packed without launching. */
static void fz_pack(hkrt_kernel *k, long long v) {
  static unsigned short buf[64];
  hkrt_arg a[] = {HKRT_PTR("A", buf), HKRT_PTR("B", buf), HKRT_PTR("C", buf), HKRT_INT("lda", v),
                  HKRT_INT("ldb", 64), HKRT_INT("ldc", 64), HKRT_INT("M", v), HKRT_INT("N", 64),
                  HKRT_INT("K", 64), HKRT_INT("n", v), HKRT_INT("u", 3), HKRT_FLOAT("scale", 0.5)};
  _Alignas(64) unsigned char kbuf[4096];
  size_t n;
  unsigned grid[3], block[3];
  for (size_t take = 0; take <= sizeof a / sizeof a[0]; take += 3)
    (void)hkrt_kernel_args(k, NULL, a, take, kbuf, sizeof kbuf, &n, grid, block);
}

/* Selection for a few problems, and packing for what it picks. */
static void fz_select(hkrt_catalog *c, long long v) {
  static const hkrt_param gemm[] = {{"M", "100"}, {"N", "77"}, {"K", "93"}, {"layout", "nt"}};
  static const hkrt_param attn[] = {{"batch", "1"}, {"seqlen_q", "7"}, {"seqlen_k", "9"}, {"heads_q", "12"},
                                    {"heads_k", "4"}, {"head_dim", "64"}, {"causal", "true"}};
  static const hkrt_param mixed[] = {{"n", "5"}};
  hkrt_problem pbs[] = {{"gemm", NULL, gemm, 4}, {"attn_fwd", "gfx942", attn, 7}, {"mixed", NULL, mixed, 1},
                        {"rope", NULL, NULL, 0}};
  for (size_t i = 0; i < sizeof pbs / sizeof pbs[0]; i++) {
    hkrt_kernel *k = NULL;
    if (hkrt_select(c, &pbs[i], &k) == HKRT_OK) fz_pack(k, v);
  }
  hkrt_kernel *k = NULL;
  if (hkrt_catalog_find(c, "gemm_any_nt_tm64_tn64", NULL, &k) == HKRT_OK) fz_pack(k, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fz_dev) fz_setup();
  char path[128];
  snprintf(path, sizeof path, "%s/manifest.json", fz_dir);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f)) abort();
  hkrt_catalog *c = NULL;
  if (hkrt_catalog_open(fz_dev, fz_dir, &c) == HKRT_OK) {
    fz_select(c, size ? (long long)data[size / 2] * 977 - 1000 : 7);
    hkrt_catalog_close(c);
  }
  return 0;
}
