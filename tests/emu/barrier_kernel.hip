// barrier_kernel.hip: a hand-written kernel in the generated-source style,
// for the emu_barrier test (tests/emu/emu_launch.c). Built for the emulator
// twice: with -DWITH_BARRIER (correct) and without (a missing barrier).
//
// Each of the 4 waves of a 256-thread workgroup writes one 32-bit word per
// thread to LDS; then every thread reads the word written by the thread at
// the same lane of the NEXT wave, (wave + 1) % 4, and stores its low 16 bits
// to out[workgroup * 256 + thread]. The word thread t of workgroup g writes is
// 0x5a000000 | (g << 8 | t) (g < 256), so the right output is
// out[g * 256 + t] = g << 8 | ((t + 64) % 256).

// hkgen-style header: emulator primitives on the host, hk_cdna.h on the GPU.
#if defined(HK_EMULATE)
#include "hk_emu.h"
#else
#include "hk_cdna.h"
#endif

struct hk_args {
  hk_bf16 *out; // offset 0
};

#if defined(HK_EMULATE)
HK_EMU_ENTRY(barrier_exchange)
#endif
HK_KERNEL(256) void barrier_exchange(struct hk_args hk_a)
{
    hk_bf16 *out = hk_a.out;
    HK_LDS_DECLARE(256 * 4);

    const int t = hk_thread_id();
    const int g = hk_block_id_x();
    hk_lds_store_b32(hk_lds, t * 4, 0x5a000000u | (unsigned)(g << 8 | t));
#if defined(WITH_BARRIER)
    hk_barrier();
#endif
    const int src = (t + HK_WAVE_SIZE) % 256; // same lane, next wave
    const unsigned v = hk_lds_load_b32(hk_lds, src * 4);
    hk_global_store_bf16(out + g * 256 + t, (hk_bf16)(v & 0xffffu));
}
