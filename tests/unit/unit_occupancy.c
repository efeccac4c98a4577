/* unit_occupancy.c: bd_waves_per_simd, the occupancy figure in the manifest
   and `hkgen inspect`, and the one whose 0 fails a build. */
#include "../../gen/build.h"
#include "testlib.h"

static int waves(const char *target, int vgpr, int agpr, int lds, int block) {
  cg_kernel_meta m;
  memset(&m, 0, sizeof m);
  m.vgpr = vgpr; /* .vgpr_count: VGPRs and AGPRs together on gfx90a and later */
  m.agpr = agpr;
  m.lds = lds;
  return bd_waves_per_simd(target, &m, block);
}

int main(void) {
  /* attn_fwd d256 on gfx90a: 256 VGPRs + 160 AGPRs = .vgpr_count 416 -> 1
     wave (adding the AGPRs again gave 0) */
  T_CHECK(waves("gfx90a", 416, 160, 37376, 256) == 1, "got %d", waves("gfx90a", 416, 160, 37376, 256));
  T_CHECK(waves("gfx950", 341, 85, 70656, 256) == 1, "got %d", waves("gfx950", 341, 85, 70656, 256));
  T_CHECK(waves("gfx942", 128, 0, 0, 256) == 4, "got %d", waves("gfx942", 128, 0, 0, 256));
  T_CHECK(waves("gfx942", 129, 0, 0, 256) == 3, "granules of 8: got %d", waves("gfx942", 129, 0, 0, 256));
  T_CHECK(waves("gfx942", 8, 0, 0, 64) == 8, "at most 8: got %d", waves("gfx942", 8, 0, 0, 64));
  /* registers for 2 waves per SIMD, but a 1024-thread workgroup needs 4 */
  T_CHECK(waves("gfx942", 256, 0, 0, 1024) == 0, "got %d", waves("gfx942", 256, 0, 0, 1024));
  T_CHECK(waves("gfx942", 128, 0, 0, 1024) == 4, "got %d", waves("gfx942", 128, 0, 0, 1024));
  /* LDS: two 256-thread workgroups of 32 KiB per 64 KiB CU -> 2 waves per SIMD */
  T_CHECK(waves("gfx942", 64, 0, 32768, 256) == 2, "got %d", waves("gfx942", 64, 0, 32768, 256));
  /* one 64-thread workgroup per CU still runs (it was rounded down to 0) */
  T_CHECK(waves("gfx942", 64, 0, 40000, 64) == 1, "got %d", waves("gfx942", 64, 0, 40000, 64));
  /* sm_90a: warps per SM; 255 registers x 384 threads do not fit 64K */
  T_CHECK(waves("sm_90a", 255, 0, 0, 384) == 0, "got %d", waves("sm_90a", 255, 0, 0, 384));
  T_CHECK(waves("sm_90a", 168, 0, 0, 384) == 12, "got %d", waves("sm_90a", 168, 0, 0, 384));
  printf("%d checks, %d failures\n", t_checks, t_failures);
  return t_failures != 0;
}
