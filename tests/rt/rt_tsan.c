/* rt_tsan.c: the thread-safety contract of libhkrt's public calls, under
   ThreadSanitizer (libhkrt's sources built with -fsanitize=thread for this
   test only). Eight threads share one emulated device and one catalogue
   (tests/rt/abuse.yaml, built by abuse.sh) and interleave allocations,
   copies, frees, selections, argument packing and error messages; TSan
   fails the run on any data race. Launches are covered by rt_catalog
   threads under ASan: the emulator's fibers switch stacks, which TSan cannot
   follow without annotations. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkrt.h"

typedef struct {
  hkrt_device *d;
  hkrt_catalog *c;
  int id, bad;
} job;

static void *worker(void *arg) {
  job *j = arg;
  static const hkrt_param gemm[] = {{"M", "100"}, {"N", "77"}, {"K", "93"}, {"layout", "nt"}};
  hkrt_problem pb = {"gemm", "gfx942", gemm, 4};
  for (int round = 0; round < 200 && !j->bad; round++) {
    void *p = NULL;
    unsigned char host[512], back[512];
    memset(host, j->id + round, sizeof host);
    if (hkrt_alloc(j->d, sizeof host, &p) || hkrt_copy_to_device(j->d, p, host, sizeof host) ||
        hkrt_copy_to_host(j->d, back, p, sizeof back) || memcmp(host, back, sizeof host))
      j->bad = 1;
    hkrt_kernel *k = NULL;
    if (!j->bad && hkrt_select(j->c, &pb, &k)) j->bad = 2;
    if (!j->bad) {
      hkrt_arg a[] = {HKRT_PTR("A", p), HKRT_PTR("B", p), HKRT_PTR("C", p), HKRT_INT("lda", 93 - (round % 2)),
                      HKRT_INT("ldb", 93), HKRT_INT("ldc", 77)};
      _Alignas(64) unsigned char buf[4096];
      size_t n;
      unsigned grid[3], block[3];
      hkrt_status st = hkrt_kernel_args(k, &pb, a, 6, buf, sizeof buf, &n, grid, block);
      /* odd rounds break lda >= K: the error is this thread's own */
      if (round % 2 ? st == HKRT_OK || !strstr(hkrt_error(), "lda >= K") : st != HKRT_OK) j->bad = 3;
    }
    if (p && hkrt_free(j->d, p)) j->bad = 4;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: rt_tsan CATALOG\n");
    return 2;
  }
  hkrt_device *d = NULL;
  hkrt_catalog *c = NULL;
  if (hkrt_device_open(HKRT_BACKEND_EMU, "gfx942", &d) || hkrt_catalog_open(d, argv[1], &c)) {
    fprintf(stderr, "rt_tsan: %s\n", hkrt_error());
    return 1;
  }
  enum { T = 8 };
  pthread_t th[T];
  job jobs[T];
  for (int i = 0; i < T; i++) {
    jobs[i] = (job){d, c, i, 0};
    pthread_create(&th[i], NULL, worker, &jobs[i]);
  }
  int bad = 0;
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    if (jobs[i].bad) fprintf(stderr, "FAIL thread %d: step %d\n", i, jobs[i].bad);
    bad |= jobs[i].bad;
  }
  hkrt_catalog_close(c);
  hkrt_device_close(d);
  printf("rt_tsan: %d threads x 200 rounds, %s\n", T, bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}
