// fault_kernels.hip: hand-written kernels in the generated-source style that
// do something illegal, for the emu_oob test (tests/emu/emu_launch.c). Each
// takes `bad`: 0 for a legal run of the same code (the control), 1 for the
// fault. Only thread `who` of workgroup `wg` misbehaves, so the emulator's
// message must name exactly that kernel, workgroup, thread, wave and lane.

#if defined(HK_EMULATE)
#include "hk_emu.h"
#else
#include "hk_cdna.h"
#endif

struct hk_args {
  const hk_bf16 *in; // offset 0
  hk_bf16 *out;      // offset 8
  int n;             // offset 16: elements of in (and of out)
  int bad;           // offset 20
  int wg;            // offset 24
  int who;           // offset 28
};

// (a) global read one element past the end of `in` (n elements): thread who
// of workgroup wg reads in[n - 1 + bad]; everyone else reads in range.
#if defined(HK_EMULATE)
HK_EMU_ENTRY(fault_global_read)
#endif
HK_KERNEL(256) void fault_global_read(struct hk_args hk_a)
{
    const int t = hk_thread_id(), g = hk_block_id_x();
    int i = (g * 256 + t) % hk_a.n;
    if (g == hk_a.wg && t == hk_a.who)
        i = hk_a.n - 1 + hk_a.bad;
    const hk_bf16 v = hk_global_load_bf16(hk_a.in + i, true);
    hk_global_store_bf16(hk_a.out + (g * 256 + t) % hk_a.n, v);
}

// (b) LDS write past the declared 4096 bytes: thread who of workgroup wg
// stores at byte 4092 + 4 * bad.
#if defined(HK_EMULATE)
HK_EMU_ENTRY(fault_lds_write)
#endif
HK_KERNEL(256) void fault_lds_write(struct hk_args hk_a)
{
    HK_LDS_DECLARE(4096);
    const int t = hk_thread_id(), g = hk_block_id_x();
    int off = t * 4;
    if (g == hk_a.wg && t == hk_a.who)
        off = 4092 + 4 * hk_a.bad;
    hk_lds_store_b32(hk_lds, off, (unsigned)t);
    hk_barrier();
    const unsigned v = hk_lds_load_b32(hk_lds, t * 4);
    hk_global_store_bf16(hk_a.out + (g * 256 + t) % hk_a.n, (hk_bf16)v);
}

// (c) more LDS than the target has: 70000 bytes (gfx942 and gfx90a: 65536;
// gfx950: 163840, where the same kernel is legal: the control).
#if defined(HK_EMULATE)
HK_EMU_ENTRY(fault_lds_size)
#endif
HK_KERNEL(256) void fault_lds_size(struct hk_args hk_a)
{
    HK_LDS_DECLARE(70000);
    const int t = hk_thread_id(), g = hk_block_id_x();
    hk_lds_store_b32(hk_lds, 69996 - t * 4, (unsigned)t);
    hk_barrier();
    const unsigned v = hk_lds_load_b32(hk_lds, 69996 - t * 4);
    hk_global_store_bf16(hk_a.out + (g * 256 + t) % hk_a.n, (hk_bf16)v);
}

// (d) MFMA reached by only some lanes of a wave: with bad, lanes 32..63 of
// wave who / 64 in workgroup wg skip it (divergent control flow around a
// wave-level instruction).
#if defined(HK_EMULATE)
HK_EMU_ENTRY(fault_mfma_divergent)
#endif
HK_KERNEL(256) void fault_mfma_divergent(struct hk_args hk_a)
{
    const int t = hk_thread_id(), g = hk_block_id_x();
    const int lane = hk_lane_id();
    hk_mfma_ab_t a, b;
    for (int j = 0; j < HK_MFMA_KPL; ++j) {
        a[j] = 0x3f80; // bf16 1.0
        b[j] = 0x3f80;
    }
    hk_mfma_acc_t acc = hk_mfma_acc_zero();
    const bool skip = hk_a.bad && g == hk_a.wg && hk_wave_id() == hk_a.who / 64 && lane >= 32;
    if (!skip)
        acc = hk_mfma_32x32(a, b, acc); // every element: sum of HK_MFMA_K ones
    hk_global_store_bf16(hk_a.out + (g * 256 + t) % hk_a.n, hk_f32_to_bf16(acc[0]));
}
