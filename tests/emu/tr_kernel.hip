// tr_kernel.hip: the LDS transposing read (hk_lds_load_tr_b64) for the
// emu_tr_launch test (tests/emu/emu_launch.c). One wave: LDS element e (2
// bytes at byte 2e) holds e; lane l reads hk_lds_load_tr_b64 at offs[l] and
// stores its 4 elements to out[4 l ..]. With divergent, only lanes 0..31 read
// (the instruction wants every lane: the emulator must refuse it).
// Built for the emulator as gfx950 (HK_EMU_ARCH=4), the target that has it.
#if defined(HK_EMULATE)
#include "hk_emu.h"
#else
#include "hk_cdna.h"
#endif

struct hk_args {
    const int *offs;     // offset 0
    unsigned short *out; // offset 8
    int divergent;       // offset 16
};

#define TR_LDS 4096

#if defined(HK_EMULATE)
HK_EMU_ENTRY(tr_read_one)
#endif
HK_KERNEL(64) void tr_read_one(struct hk_args hk_a)
{
    HK_LDS_DECLARE(TR_LDS);
    const int l = hk_lane_id();
    for (int e = l; e < TR_LDS / 2; e += 64)
        hk_lds_store_b32(hk_lds, 4 * (e / 2), (unsigned)(e & ~1) | ((unsigned)(e | 1) << 16));
    hk_barrier();
    if (hk_a.divergent && l >= 32)
        return;
    const hk_bf16x4 v = hk_lds_load_tr_b64(hk_lds, hk_global_load_i32(hk_a.offs + l));
    for (int j = 0; j < 4; ++j)
        hk_global_store_bf16(hk_a.out + 4 * l + j, v[j]);
}
