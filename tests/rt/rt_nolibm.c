/* rt_nolibm.c: a program linked with libhkrt.a and without libm (-lm is
   not on its link line) loads an emulated attention kernel, whose code calls
   exp2f: the module names its libm need itself. Launches one small
   attention and checks that it ran (O written, LSE finite). */
#include <stdio.h>
#include <string.h>

#include "hkrt.h"

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  hkrt_device *d = NULL;
  hkrt_catalog *c = NULL;
  hkrt_kernel *k = NULL;
  void *q = NULL, *o = NULL, *lse = NULL;
  enum { S = 5, D = 64 };
  unsigned short hq[S * D], ho[S * D];
  float hl[S];
  for (int i = 0; i < S * D; i++) hq[i] = 0x3f80; /* 1.0 */
  if (hkrt_device_open(HKRT_BACKEND_EMU, "gfx942", &d) || hkrt_catalog_open(d, argv[1], &c) ||
      hkrt_catalog_find(c, "ab_attn", "gfx942", &k) || hkrt_alloc(d, sizeof hq, &q) || hkrt_alloc(d, sizeof ho, &o) ||
      hkrt_alloc(d, sizeof hl, &lse) || hkrt_copy_to_device(d, q, hq, sizeof hq)) {
    fprintf(stderr, "rt_nolibm: %s\n", hkrt_error());
    return 1;
  }
  hkrt_arg a[] = {HKRT_PTR("Q", q), HKRT_PTR("K", q), HKRT_PTR("V", q), HKRT_PTR("O", o), HKRT_PTR("LSE", lse),
                  HKRT_INT("q_stride_b", S * D), HKRT_INT("q_stride_s", D), HKRT_INT("q_stride_h", D),
                  HKRT_INT("k_stride_b", S * D), HKRT_INT("k_stride_s", D), HKRT_INT("k_stride_h", D),
                  HKRT_INT("v_stride_b", S * D), HKRT_INT("v_stride_s", D), HKRT_INT("v_stride_h", D),
                  HKRT_INT("o_stride_b", S * D), HKRT_INT("o_stride_s", D), HKRT_INT("o_stride_h", D),
                  HKRT_FLOAT("scale", 0.125), HKRT_INT("batch", 1), HKRT_INT("seqlen_q", S), HKRT_INT("seqlen_k", S),
                  HKRT_INT("heads_q", 1), HKRT_INT("heads_k", 1)};
  if (hkrt_kernel_launch(k, NULL, a, sizeof a / sizeof a[0], NULL) || hkrt_copy_to_host(d, ho, o, sizeof ho) ||
      hkrt_copy_to_host(d, hl, lse, sizeof hl)) {
    fprintf(stderr, "rt_nolibm: %s\n", hkrt_error());
    return 1;
  }
  /* all-ones Q = K = V: every output is 1, every LSE log(5) + 8 * 0 ... finite */
  int bad = 0;
  for (int i = 0; i < S * D; i++) bad |= ho[i] != 0x3f80;
  for (int i = 0; i < S; i++) bad |= !(hl[i] > 0.0f && hl[i] < 100.0f);
  hkrt_catalog_close(c);
  hkrt_device_close(d);
  printf("rt_nolibm: %s\n", bad ? "wrong output" : "ok");
  return bad;
}
