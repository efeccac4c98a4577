// stats_kernels.hip: a hand-written kernel in the generated-source style for
// the emu_stats test (tests/emu/emu_stats.c): LDS and global accesses whose
// bank cycles and cache-line bytes the test computes from AMD's rules.
//
// Every thread t (lane l = t % 64) of the one workgroup, reps times:
//  - split == 0: if l % active == 0, one LDS access of width bytes (load, or
//    store when write) at byte offset (l * stride) % 65536 (or offs[l] when
//    offs is given) from one call site;
//  - split == 1: lanes 0..31 load at one call site, lanes 32..63 at another
//    (divergent control flow: two instructions of 32 lanes each);
//  - then one 16-byte global load of src + l * gstride elements;
//  - with barrier, a workgroup barrier after each repetition.
// Loaded LDS words are summed into out[t] so that nothing is optimised away.

#if defined(HK_EMULATE)
#include "hk_emu.h"
#else
#include "hk_cdna.h"
#endif

struct hk_args {
  unsigned *out;        // offset 0
  const hk_bf16 *src;   // 8
  int write, width;     // 16, 20
  int stride, active;   // 24, 28
  int reps, barrier;    // 32, 36
  int split, gstride;   // 40, 44
  const int *offs;      // 48: lane offsets, or NULL
};

#define STATS_LDS 65536

HK_DEVICE unsigned stats_load(hk_lds_t lds, int width, int off)
{
    if (width == 4)
        return hk_lds_load_b32(lds, off);
    if (width == 8)
        return hk_lds_load_b64(lds, off)[0];
    return hk_lds_load_b128(lds, off)[0];
}

HK_DEVICE void stats_store(hk_lds_t lds, int width, int off, unsigned v)
{
    if (width == 4)
        hk_lds_store_b32(lds, off, v);
    else if (width == 8)
        hk_lds_store_b64(lds, off, hk_u32x2{v, v});
    else
        hk_lds_store_b128(lds, off, hk_u32x4{v, v, v, v});
}

#if defined(HK_EMULATE)
HK_EMU_ENTRY(stats_access)
#endif
HK_KERNEL(256) void stats_access(struct hk_args a)
{
    HK_LDS_DECLARE(STATS_LDS);
    const int t = hk_thread_id(), l = hk_lane_id();
    const int off = a.offs ? a.offs[l] : (int)(((unsigned)l * (unsigned)a.stride) % STATS_LDS);
    unsigned sum = 0;
    for (int r = 0; r < a.reps; ++r) {
        if (a.split) {
            if (l < 32)
                sum += hk_lds_load_b32(hk_lds, off);
            else
                sum += hk_lds_load_b32(hk_lds, off);
        } else if (l % a.active == 0) {
            if (a.write)
                stats_store(hk_lds, a.width, off, (unsigned)t);
            else
                sum += stats_load(hk_lds, a.width, off);
        }
        sum += hk_global_load_bf16x8(a.src + (long)l * a.gstride, 8, true)[0];
        if (a.barrier)
            hk_barrier();
    }
    hk_global_store_b32(a.out + t, sum);
}
