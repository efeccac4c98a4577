// fp8_kernel.hip: one fp8 MFMA through the tile primitives, for the
// emu_fp8_launch test (tests/emu/emu_launch.c). One wave: A (32 x 16, the
// target's E4M3, row-major codes) times B (16 x 32, its E5M2, stored
// column-major), D (32 x 32 fp32, row-major). Each lane fetches its 8 codes of
// A and of B with one 8-byte load (the MFMA layout of hk_cdna.h: row/column
// l % 32, k = 8 * (l / 32) + j) and stores its 16 results by the D layout.
// Built for the emulator twice: HK_EMU_ARCH=3 (gfx942, FNUZ) and 4 (gfx950, OCP).
#if defined(HK_EMULATE)
#include "hk_emu.h"
#else
#include "hk_cdna.h"
#endif

struct hk_args {
    const unsigned char *a; // offset 0
    const unsigned char *b; // offset 8
    float *d;               // offset 16
};

#if defined(HK_EMULATE)
HK_EMU_ENTRY(fp8_mfma_one)
#endif
HK_KERNEL(64) void fp8_mfma_one(struct hk_args hk_a)
{
    const int l = hk_lane_id(), rc = l % 32, k0 = 8 * (l / 32);
    const hk_mfma_f8_ab_t a = hk_mfma_f8_ab(hk_global_load_b64(hk_a.a + rc * 16 + k0));
    const hk_mfma_f8_ab_t b = hk_mfma_f8_ab(hk_global_load_b64(hk_a.b + rc * 16 + k0));
    hk_mfma_acc_t acc = hk_mfma_acc_zero();
    acc = hk_mfma_32x32_fp8(HK_FP8_E4M3, HK_FP8_E5M2, a, b, acc);
    for (int r = 0; r < 16; ++r)
        hk_global_store_f32(hk_a.d + ((r / 4) * 8 + (l / 32) * 4 + r % 4) * 32 + rc, acc[r]);
}
