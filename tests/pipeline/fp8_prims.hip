// fp8_prims.hip: every fp8 tile primitive once (tests/pipeline/build_fp8.sh).
// Built for gfx942 and gfx950 with hk_cdna.h, and for the emulator with
// hk_emu.h; -DFP8_ASK=FORMAT adds one call with that format, which must fail
// to compile where the target lacks it.
#if defined(HK_EMULATE)
#include "hk_emu.h"
#else
#include "hk_cdna.h"
#endif
HK_KERNEL(64) void fp8_prims(const unsigned *in, float *outf, unsigned *outc, const float *x, float *acc_out)
{
#if defined(FP8_ASK)
    outf[64] = hk_fp8_to_f32(FP8_ASK, in[0]);
#endif
    const int l = hk_lane_id();
    const hk_f32x4 w = hk_fp8x4_to_f32x4(HK_FP8_E4M3, in[l]);
    const hk_f32x4 v = hk_fp8x4_to_f32x4(HK_FP8_E5M2, in[l + 64]);
    outf[l] = w[0] + w[1] + w[2] + w[3] + v[0] + v[3] + hk_fp8_to_f32(HK_FP8_E4M3, in[l] >> 8) +
              hk_fp8_to_f32(HK_FP8_E5M2, in[l]) + hk_fp8_max(HK_FP8_E4M3) * (float)(HK_FP8_OCP + 2 * HK_FP8_FNUZ);
    const hk_f32x4 xv = {x[4 * l], x[4 * l + 1], x[4 * l + 2], x[4 * l + 3]};
    outc[l] = hk_f32x4_to_fp8x4(HK_FP8_E4M3, xv) ^ hk_f32x4_to_fp8x4(HK_FP8_E5M2, xv) ^
              hk_f32_to_fp8(HK_FP8_E4M3, x[l]) ^ (hk_f32_to_fp8(HK_FP8_E5M2, x[l]) << 8);
    const hk_u32x2 aw = hk_global_load_b64(in + 2 * l), bw = {in[l + 128], hk_global_load_b32(in + l + 192)};
    const hk_u32x4 q = hk_global_load_b128(in + 4 * l + 256);
    outc[l + 64] = q[0] ^ q[3];
    hk_mfma_acc_t acc = hk_mfma_acc_zero();
    acc = hk_mfma_32x32_fp8(HK_FP8_E4M3, HK_FP8_E4M3, hk_mfma_f8_ab_part(q, 0), hk_mfma_f8_ab_part(q, 1), acc);
    acc = hk_mfma_32x32_fp8(HK_FP8_E4M3, HK_FP8_E4M3, hk_mfma_f8_ab(aw), hk_mfma_f8_ab(bw), acc);
    acc = hk_mfma_32x32_fp8(HK_FP8_E4M3, HK_FP8_E5M2, hk_mfma_f8_ab(aw), hk_mfma_f8_ab(bw), acc);
    acc = hk_mfma_32x32_fp8(HK_FP8_E5M2, HK_FP8_E4M3, hk_mfma_f8_ab(aw), hk_mfma_f8_ab(bw), acc);
    acc = hk_mfma_32x32_fp8(HK_FP8_E5M2, HK_FP8_E5M2, hk_mfma_f8_ab(aw), hk_mfma_f8_ab(bw), acc);
    for (int r = 0; r < 16; ++r) acc_out[16 * l + r] = acc[r];
}
