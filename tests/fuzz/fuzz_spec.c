/* fuzz_spec.c: libFuzzer target for the spec reader. Every input goes
   through spec_load_buffer (YAML -> tree -> validation -> cross product),
   then, for the kernels it yields, the duplicate check and the m4 prologue
   (names and values escaped for m4); escaping must round-trip. No m4 runs.
   Build: make -C tests build/fuzz_spec; see docs/FUZZING.md. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../gen/skel.h"
#include "../../gen/spec.h"
#include "../../gen/util.h"

static void fuzz_escape_roundtrip(const char *s) {
  hk_buf b;
  buf_init(&b);
  skel_escape(&b, s);
  if (strpbrk(b.s, "[]$") || strstr(b.s, "m4_") || strstr(b.s, "hkm_")) abort();
  size_t n = skel_unescape(b.s, b.len);
  if (n != strlen(s) || memcmp(b.s, s, n)) abort();
  buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  spec_set set = {0};
  /* A first byte of '!' also tries the --target override path. */
  const char *targets = size && data[0] == '!' ? "gfx90a,gfx950" : NULL;
  int errors = spec_load_buffer("fuzz.yaml", (const char *)data, size, targets, &set);
  if (!errors) spec_check_unique(&set);
  for (size_t i = 0; i < set.n && i < 16; i++) {
    skel_prologue p;
    skel_prologue_init(&p);
    skel_prologue_for(&p, &set.v[i]);
    skel_prologue_free(&p);
    fuzz_escape_roundtrip(set.v[i].name);
    for (int j = 0; j < set.v[i].op->nparams; j++) fuzz_escape_roundtrip(set.v[i].vals[j]);
  }
  if (size < 4096) { /* raw input as a C string, up to its first NUL */
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = 0;
    fuzz_escape_roundtrip(s);
    free(s);
  }
  spec_set_free(&set);
  diag_reset();
  return 0;
}
