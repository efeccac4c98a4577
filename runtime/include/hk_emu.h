/* hk_emu.h - the hk_* tile primitives for the CPU emulator of CDNA waves.
 *
 * A generated source compiled on the host with -DHK_EMULATE -DHK_EMU_ARCH=N
 * (N = 2, 3, 4 for CDNA2/3/4) includes this header instead of pasting
 * hk_cdna.h; the kernel body is the very same text. Every work-item runs as a
 * fiber of libhkrt's emulator; wave-level operations (MFMA) are collectives
 * that wait for all 64 lanes of the wave; barriers wait for the workgroup.
 * LDS and global accesses are bounds-checked: a bad one stops the launch with
 * the kernel, workgroup, lane and address.
 */
#ifndef HK_EMU_H
#define HK_EMU_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#if !defined(HK_EMU_ARCH) || (HK_EMU_ARCH < 2 || HK_EMU_ARCH > 4)
#error "hk_emu.h: define HK_EMU_ARCH to 2 (gfx90a), 3 (gfx942) or 4 (gfx950)"
#endif

#include "hk_emu_abi.h"

/* Filled by libhkrt when it loads this module. */
extern "C" __attribute__((visibility("default"))) hkemu_api_t hkemu_api{};
extern "C" __attribute__((visibility("default"))) const unsigned hkemu_abi_version = HKEMU_ABI_VERSION;

#define hkemu_thread_id() (hkemu_api.thread_id())
#define hkemu_block_id(axis) (hkemu_api.block_id(axis))
#define hkemu_barrier() (hkemu_api.barrier())
#define hkemu_lds(bytes, size) (hkemu_api.lds((bytes), (size)))
#define hkemu_fault_lds(off, n, size, w) (hkemu_api.fault_lds((off), (n), (size), (w)))
#define hkemu_check_global(p, n, w) (hkemu_api.check_global((p), (n), (w)))
#define hkemu_mfma_32x32_bf16(kpl, a, b, c, d) (hkemu_api.mfma_32x32_bf16((kpl), (a), (b), (c), (d)))
#define hkemu_swap_halves_b32(v) (hkemu_api.swap_halves_b32(v))

#define __global__
#define __device__
#define __shared__ static
#define HK_DEVICE static inline __attribute__((unused))
#define HK_WAVES_PER_SIMD 1 /* occupancy hint of hk_cdna.h: nothing to do here */
#define HK_KERNEL(threads) extern "C"
#define HK_WAVE_SIZE 64

/* The emulator calls NAME__hkemu(args): the kernel takes its struct by value. */
#define HK_EMU_ENTRY(name)                                                     \
    extern "C" void name(struct hk_args);                                      \
    extern "C" __attribute__((visibility("default"))) void name##__hkemu(const void *hk_emu_p_) \
    {                                                                          \
        struct hk_args hk_emu_a_;                                                      \
        memcpy(&hk_emu_a_, hk_emu_p_, sizeof hk_emu_a_);                                               \
        name(hk_emu_a_);                                                               \
    }                                                                          \
    extern "C" __attribute__((visibility("default"))) const unsigned name##__hkemu_args = \
        sizeof(struct hk_args);

/* ---- types (as in hk_cdna.h) ----------------------------------------------- */
typedef unsigned short hk_bf16;
typedef unsigned short hk_bf16x4 __attribute__((ext_vector_type(4)));
typedef unsigned short hk_bf16x8 __attribute__((ext_vector_type(8)));
typedef unsigned int hk_u32x2 __attribute__((ext_vector_type(2)));
typedef unsigned int hk_u32x4 __attribute__((ext_vector_type(4)));
typedef float hk_f32x16 __attribute__((ext_vector_type(16)));

/* ---- ids ------------------------------------------------------------------- */
HK_DEVICE int hk_thread_id(void) { return hkemu_thread_id(); }
HK_DEVICE int hk_block_id_x(void) { return hkemu_block_id(0); }
HK_DEVICE int hk_block_id_y(void) { return hkemu_block_id(1); }
HK_DEVICE int hk_block_id_z(void) { return hkemu_block_id(2); }
HK_DEVICE int hk_lane_id(void) { return hk_thread_id() & (HK_WAVE_SIZE - 1); }
HK_DEVICE int hk_wave_id(void) { return hk_thread_id() / HK_WAVE_SIZE; }

/* ---- XCD-aware workgroup order: the same text as hk_cdna.h (a permutation,
 * so the emulator's results do not depend on it) ----------------------------- */
#if HK_EMU_ARCH == 2
#define HK_NUM_XCD 1
#else
#define HK_NUM_XCD 8
#endif

HK_DEVICE int hk_xcd_remap(int id, int n)
{
    const int xcd = id % HK_NUM_XCD, q = n / HK_NUM_XCD, r = n % HK_NUM_XCD;
    return xcd * q + (xcd < r ? xcd : r) + id / HK_NUM_XCD;
}

/* ---- synchronisation and scheduling: only the barrier does anything --------- */
HK_DEVICE void hk_barrier(void) { hkemu_barrier(); }
HK_DEVICE void hk_waitcnt_all(void) {}
HK_DEVICE void hk_waitcnt_lds(void) {}
HK_DEVICE void hk_sched_barrier(void) {}
#define HK_SETPRIO(p) ((void)(p))

/* ---- LDS ---------------------------------------------------------------------- */
typedef struct {
    unsigned char *base;
    unsigned size;
} hk_lds_t;

HK_DEVICE hk_lds_t hk_emu_lds_region(unsigned bytes)
{
    hk_lds_t l;
    l.base = hkemu_lds(bytes, &l.size);
    return l;
}

#define HK_LDS_DECLARE(bytes) const hk_lds_t hk_lds = hk_emu_lds_region((unsigned)(bytes))

/* Out of range or misaligned: the hardware would read garbage or fault. */
#define HK_EMU_LDS_CHECK(l, off, n, w)                                                  \
    do {                                                                                \
        if ((off) < 0 || (unsigned)(off) + (n) > (l).size || ((unsigned)(off) & ((n) - 1))) \
            hkemu_fault_lds((unsigned)(off), (n), (l).size, (w));                       \
    } while (0)

HK_DEVICE unsigned hk_lds_load_b32(hk_lds_t l, int off)
{
    unsigned v;
    HK_EMU_LDS_CHECK(l, off, 4u, 0);
    memcpy(&v, l.base + off, 4);
    return v;
}
HK_DEVICE hk_u32x2 hk_lds_load_b64(hk_lds_t l, int off)
{
    hk_u32x2 v;
    HK_EMU_LDS_CHECK(l, off, 8u, 0);
    memcpy(&v, l.base + off, 8);
    return v;
}
HK_DEVICE hk_u32x4 hk_lds_load_b128(hk_lds_t l, int off)
{
    hk_u32x4 v;
    HK_EMU_LDS_CHECK(l, off, 16u, 0);
    memcpy(&v, l.base + off, 16);
    return v;
}
HK_DEVICE void hk_lds_store_b32(hk_lds_t l, int off, unsigned v)
{
    HK_EMU_LDS_CHECK(l, off, 4u, 1);
    memcpy(l.base + off, &v, 4);
}
HK_DEVICE void hk_lds_store_b64(hk_lds_t l, int off, hk_u32x2 v)
{
    HK_EMU_LDS_CHECK(l, off, 8u, 1);
    memcpy(l.base + off, &v, 8);
}
HK_DEVICE void hk_lds_store_b128(hk_lds_t l, int off, hk_u32x4 v)
{
    HK_EMU_LDS_CHECK(l, off, 16u, 1);
    memcpy(l.base + off, &v, 16);
}

/* ---- global memory: every access checked against the launch's buffers ------ */
HK_DEVICE hk_bf16x8 hk_global_load_bf16x8(const hk_bf16 *p, int n_valid, bool vec_ok)
{
    hk_bf16x8 v = {0, 0, 0, 0, 0, 0, 0, 0};
    if (vec_ok && n_valid >= 8) {
        hkemu_check_global(p, 16, 0);
        memcpy(&v, p, 16);
        return v;
    }
    for (int j = 0; j < 8; ++j)
        if (j < n_valid) {
            hkemu_check_global(p + j, 2, 0);
            v[j] = p[j];
        }
    return v;
}
HK_DEVICE hk_bf16 hk_global_load_bf16(const hk_bf16 *p, bool valid)
{
    if (!valid)
        return 0;
    hkemu_check_global(p, 2, 0);
    return *p;
}
HK_DEVICE float hk_global_load_f32(const float *p)
{
    hkemu_check_global(p, 4, 0);
    return *p;
}
HK_DEVICE int hk_global_load_i32(const int *p)
{
    hkemu_check_global(p, 4, 0);
    return *p;
}
HK_DEVICE void hk_global_store_bf16(hk_bf16 *p, hk_bf16 v)
{
    hkemu_check_global(p, 2, 1);
    *p = v;
}
HK_DEVICE void hk_global_store_f32(float *p, float v)
{
    hkemu_check_global(p, 4, 1);
    *p = v;
}
/* 4 and 16 bytes: a misaligned address faults (sm_90a would), reported as a
 * write at address 0; otherwise bounds-checked like the others */
HK_DEVICE void hk_global_store_b32(void *p, unsigned v)
{
    if ((size_t)p % 4)
        hkemu_check_global(NULL, 4, 1);
    hkemu_check_global(p, 4, 1);
    memcpy(p, &v, 4);
}
HK_DEVICE void hk_global_store_b128(void *p, hk_u32x4 v)
{
    if ((size_t)p % 16)
        hkemu_check_global(NULL, 16, 1);
    hkemu_check_global(p, 16, 1);
    memcpy(p, &v, 16);
}

/* ---- bf16 <-> fp32, as the hardware rounds (nearest even) -------------------- */
HK_DEVICE float hk_bf16_to_f32(hk_bf16 x)
{
    unsigned u = (unsigned)x << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
HK_DEVICE float hk_u32_as_f32(unsigned u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
HK_DEVICE unsigned hk_f32_as_u32(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
HK_DEVICE hk_bf16 hk_f32_to_bf16(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (hk_bf16)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (hk_bf16)(u >> 16);
}

HK_DEVICE unsigned hk_f32x2_to_bf16x2(float lo, float hi)
{
    return (unsigned)hk_f32_to_bf16(lo) | ((unsigned)hk_f32_to_bf16(hi) << 16);
}

/* ---- MFMA 32x32 bf16 -> fp32: a wave collective -------------------------------- */
#if HK_EMU_ARCH == 4
#define HK_MFMA_K 16
#else
#define HK_MFMA_K 8
#endif
#define HK_MFMA_KPL (HK_MFMA_K / 2)
#define HK_MFMA_AB_BYTES (2 * HK_MFMA_KPL)
typedef hk_f32x16 hk_mfma_acc_t;
typedef unsigned short hk_mfma_ab_t __attribute__((ext_vector_type(HK_MFMA_KPL)));

HK_DEVICE hk_mfma_acc_t hk_mfma_acc_zero(void)
{
    hk_mfma_acc_t z;
    for (int i = 0; i < 16; ++i)
        z[i] = 0.0f;
    return z;
}
HK_DEVICE hk_mfma_ab_t hk_lds_load_mfma_ab(hk_lds_t l, int off)
{
    hk_mfma_ab_t v;
    HK_EMU_LDS_CHECK(l, off, (unsigned)HK_MFMA_AB_BYTES, 0);
    memcpy(&v, l.base + off, HK_MFMA_AB_BYTES);
    return v;
}
HK_DEVICE hk_mfma_acc_t hk_mfma_32x32(hk_mfma_ab_t a, hk_mfma_ab_t b, hk_mfma_acc_t acc)
{
    unsigned short av[HK_MFMA_KPL], bv[HK_MFMA_KPL];
    float c[16], d[16];
    memcpy(av, &a, sizeof av);
    memcpy(bv, &b, sizeof bv);
    memcpy(c, &acc, sizeof c);
    hkemu_mfma_32x32_bf16(HK_MFMA_KPL, av, bv, c, d);
    memcpy(&acc, d, sizeof d);
    return acc;
}

/* ---- fast math (host libm) and cross-lane exchange (a wave collective) ---------- */
HK_DEVICE float hk_exp2f(float x) { return exp2f(x); }
HK_DEVICE float hk_log2f(float x) { return log2f(x); }
HK_DEVICE float hk_maxf(float a, float b) { return fmaxf(a, b); }
/* hk_cdna.h's formula (not libm's tanhf), so the emulator sees its error */
HK_DEVICE float hk_tanhf(float x)
{
    const float e = exp2f(-2.88539008177792681f * fabsf(x));
    return copysignf((1.0f - e) / (1.0f + e), x);
}
HK_DEVICE float hk_swap_halves(float x)
{
    unsigned u;
    memcpy(&u, &x, 4);
    u = hkemu_swap_halves_b32(u);
    memcpy(&x, &u, 4);
    return x;
}

#endif /* HK_EMU_H */
