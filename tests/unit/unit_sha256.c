/* unit_sha256.c: sha256_hex and the incremental API against the sha256sum
   tool, over random data (fresh seed each run) at the lengths where padding
   changes (0, 55, 56, 63, 64, 65, ...) and some large ones. No digest is
   written down here: sha256sum computes every expected value at test time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/sha256.h"
#include "../../gen/util.h"
#include "testlib.h"

static void tool_digest(const char *dir, const unsigned char *data, size_t n, char out[65]) {
  char *path = fs_join(dir, "data.bin");
  out[0] = 0;
  if (t_write(path, data, n) < 0) {
    T_CHECK(0, "cannot write %s", path);
    free(path);
    return;
  }
  char *cmd = xasprintf("sha256sum '%s'", path);
  FILE *p = popen(cmd, "r");
  char line[256] = "";
  if (p && fgets(line, sizeof line, p)) snprintf(out, 65, "%.64s", line);
  int st = p ? pclose(p) : -1;
  T_CHECK(st == 0 && strlen(out) == 64, "sha256sum failed (status %d): %s", st, line);
  free(cmd);
  free(path);
}

static void one(const char *dir, size_t n) {
  unsigned char *d = xmalloc(n + 1);
  for (size_t i = 0; i < n; i++) d[i] = (unsigned char)t_rand();
  char want[65], got[65], inc[65];
  tool_digest(dir, d, n, want);
  sha256_hex(d, n, got);
  T_CHECK(!strcmp(got, want), "length %zu: sha256_hex %s, sha256sum %s", n, got, want);
  /* The same bytes fed in random pieces (empty ones included). */
  sha256_ctx c;
  unsigned char raw[32];
  sha256_init(&c);
  for (size_t off = 0; off < n;) {
    size_t piece = t_below(4) == 0 ? 0 : 1 + t_below(200);
    if (piece > n - off) piece = n - off;
    sha256_update(&c, d + off, piece);
    off += piece;
  }
  sha256_final(&c, raw);
  sha256_to_hex(raw, inc);
  T_CHECK(!strcmp(inc, want), "length %zu in pieces: %s, sha256sum %s", n, inc, want);
  free(d);
}

int main(void) {
  t_seed("unit_sha256");
  const char *dir = t_tmpdir();
  static const size_t edges[] = {0, 1, 3, 55, 56, 57, 63, 64, 65, 111, 112, 119, 120, 127,
                                 128, 129, 1000, 4096, 65535, 65536, 1u << 20};
  size_t nedges = sizeof edges / sizeof edges[0];
  for (size_t i = 0; i < nedges; i++) one(dir, edges[i]);
  for (int i = 0; i < 40; i++) one(dir, t_below(3000));
  one(dir, (1u << 22) + t_below(1000)); /* 4 MiB and a bit */
  char *rm = xasprintf("rm -rf '%s'", dir);
  if (system(rm) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  free(rm);
  return t_done("unit_sha256");
}
