/* consumer.c: a program outside hkgen that uses an installed hkgen the way a
   project would: it opens the catalogue its build generated (argv[1])
   through hkrt.h alone, runs RMSNorm on libhkrt's CPU emulator at an odd
   shape on fresh random inputs with a poisoned output, and compares with an
   fp64 reference. Exit 0 when the relative L2 error is below 1e-2. */
#include <hkrt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROWS 37
#define HIDDEN 1000

static uint64_t rng;
static double uniform(void) { /* splitmix64, in [-1, 1) */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-52 - 1.0;
}
static unsigned short to_bf16(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (unsigned short)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static double from_bf16(unsigned short b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static int check(hkrt_status s, const char *what) {
  if (s == HKRT_OK) return 0;
  fprintf(stderr, "consumer: %s: %s\n", what, hkrt_error());
  return -1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer CATALOGUE\n");
    return 2;
  }
  rng = (uint64_t)time(NULL) ^ (uint64_t)clock();
  static unsigned short x[ROWS * HIDDEN], w[HIDDEN], y[ROWS * HIDDEN];
  for (int i = 0; i < ROWS * HIDDEN; i++) x[i] = to_bf16(uniform() * 2);
  for (int i = 0; i < HIDDEN; i++) w[i] = to_bf16(1 + uniform() / 2);
  hkrt_device *dev;
  hkrt_catalog *cat;
  hkrt_kernel *k;
  void *dx, *dw, *dy, *dr;
  if (check(hkrt_device_open(HKRT_BACKEND_EMU, "gfx942", &dev), "emulator") ||
      check(hkrt_catalog_open(dev, argv[1], &cat), argv[1]) ||
      check(hkrt_catalog_find(cat, "consumer_rms", NULL, &k), "consumer_rms"))
    return 1;
  if (check(hkrt_alloc(dev, sizeof x, &dx), "alloc") || check(hkrt_alloc(dev, sizeof w, &dw), "alloc") ||
      check(hkrt_alloc(dev, sizeof y, &dy), "alloc") || check(hkrt_alloc(dev, ROWS * 4, &dr), "alloc"))
    return 1;
  memset(y, 0xff, sizeof y); /* NaN: a row the kernel does not write fails */
  if (check(hkrt_copy_to_device(dev, dx, x, sizeof x), "copy") ||
      check(hkrt_copy_to_device(dev, dw, w, sizeof w), "copy") ||
      check(hkrt_copy_to_device(dev, dy, y, sizeof y), "copy"))
    return 1;
  hkrt_arg args[] = {HKRT_PTR("x", dx),    HKRT_PTR("weight", dw),   HKRT_PTR("y", dy),
                     HKRT_PTR("rstd", dr), HKRT_INT("rows", ROWS), HKRT_INT("hidden", HIDDEN)};
  if (check(hkrt_kernel_launch(k, NULL, args, 6, NULL), "launch") || check(hkrt_synchronize(dev), "sync") ||
      check(hkrt_copy_to_host(dev, y, dy, sizeof y), "copy back"))
    return 1;
  double num = 0, den = 0;
  for (int r = 0; r < ROWS; r++) {
    double ss = 0;
    for (int i = 0; i < HIDDEN; i++) ss += from_bf16(x[r * HIDDEN + i]) * from_bf16(x[r * HIDDEN + i]);
    double rstd = 1 / sqrt(ss / HIDDEN + 1e-5);
    for (int i = 0; i < HIDDEN; i++) {
      double ref = from_bf16(x[r * HIDDEN + i]) * rstd * from_bf16(w[i]), got = from_bf16(y[r * HIDDEN + i]);
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
  }
  double err = sqrt(num / den); /* NaN compares false below */
  printf("consumer: rmsnorm %dx%d on the emulator, relative L2 error %.3e\n", ROWS, HIDDEN, err);
  hkrt_catalog_close(cat);
  hkrt_device_close(dev);
  return err < 1e-2 ? 0 : 1;
}
