/* unit_xcd_remap.c: hk_xcd_remap, the XCD-aware workgroup order of the tile
   headers, is a bijection of 0..n-1 for every grid size (multiples of the XCD
   count or not), gives every XCD one contiguous logical range (consecutive
   logical workgroups share an XCD, so their K/V head stays in one L2), and
   spreads the work evenly. The function is compiled here from the very text
   of templates/include/hk_cdna.h and of runtime/include/hk_emu.h (the
   Makefile cuts it out of both headers), with the XCD count a variable so
   that 1, 4, 6 and 8 XCDs are all checked; both versions must agree. */
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static int nx; /* HK_NUM_XCD for the included texts */
#define HK_NUM_XCD nx
#define HK_DEVICE static inline
#define hk_xcd_remap xcd_remap_cdna
#include "xcd_remap_cdna.inc"
#undef hk_xcd_remap
#define hk_xcd_remap xcd_remap_emu
#include "xcd_remap_emu.inc"
#undef hk_xcd_remap

/* One grid size: every hardware id maps into 0..n-1, no logical id twice,
   the ids an XCD runs (hardware id % nx) form one contiguous logical range
   in dispatch order, and XCD loads differ by at most one workgroup. */
static void check(int n, int *seen, int *lo, int *hi, int *cnt) {
  for (int i = 0; i < n; i++) seen[i] = -1;
  for (int x = 0; x < nx; x++) lo[x] = -1, hi[x] = -1, cnt[x] = 0;
  int bad = 0;
  for (int id = 0; id < n && bad < 3; id++) {
    int l = xcd_remap_cdna(id, n), e = xcd_remap_emu(id, n), x = id % nx;
    if (l != e) {
      T_CHECK(l == e, "n %d xcds %d id %d: hk_cdna.h gives %d, hk_emu.h %d", n, nx, id, l, e);
      bad++;
      continue;
    }
    if (l < 0 || l >= n) {
      T_CHECK(0, "n %d xcds %d id %d: logical id %d out of range", n, nx, id, l);
      bad++;
      continue;
    }
    if (seen[l] >= 0) {
      T_CHECK(0, "n %d xcds %d: logical id %d from hardware ids %d and %d", n, nx, l, seen[l], id);
      bad++;
      continue;
    }
    seen[l] = id;
    if (lo[x] < 0) lo[x] = l;
    else if (l != hi[x] + 1) {
      T_CHECK(0, "n %d xcds %d: XCD %d runs logical %d after %d (not consecutive)", n, nx, x, l, hi[x]);
      bad++;
    }
    hi[x] = l;
    cnt[x]++;
  }
  if (bad) return;
  int mn = n, mx = 0;
  for (int x = 0; x < nx; x++) {
    if (cnt[x] < mn) mn = cnt[x];
    if (cnt[x] > mx) mx = cnt[x];
  }
  T_CHECK(mx - mn <= 1, "n %d xcds %d: XCD loads from %d to %d workgroups", n, nx, mn, mx);
  t_checks++;
}

int main(void) {
  t_seed("unit_xcd_remap");
  const int maxn = 1 << 22;
  int *seen = malloc(sizeof *seen * (size_t)maxn), lo[8], hi[8], cnt[8];
  static const int xcds[] = {8, 1, 4, 6};
  for (unsigned k = 0; k < sizeof xcds / sizeof xcds[0]; k++) {
    nx = xcds[k];
    for (int n = 1; n <= 3000; n++) check(n, seen, lo, hi, cnt);
    /* attention grids: cdiv(seqlen_q, 128) x heads_q x batch, and random sizes */
    static const int big[] = {16 * 64 * 1, 16 * 64 * 16, 17 * 40 * 3, 1 << 20, (1 << 22) - 1, 4194301};
    for (unsigned i = 0; i < sizeof big / sizeof big[0]; i++) check(big[i], seen, lo, hi, cnt);
    for (int i = 0; i < 12; i++) check(1 + (int)t_below((unsigned)maxn), seen, lo, hi, cnt);
  }
  free(seen);
  return t_done("unit_xcd_remap");
}
