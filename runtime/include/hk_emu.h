/* hk_emu.h - the hk_* tile primitives for the CPU emulator of CDNA waves.
 *
 * A generated source compiled on the host with -DHK_EMULATE -DHK_EMU_ARCH=N
 * (N = 2, 3, 4 for CDNA2/3/4) includes this header instead of pasting
 * hk_cdna.h; the kernel body is the very same text. Every work-item runs as a
 * fiber of libhkrt's emulator; wave-level operations (MFMA) are collectives
 * that wait for all 64 lanes of the wave; barriers wait for the workgroup.
 * LDS and global accesses are bounds-checked: a bad one stops the launch with
 * the kernel, workgroup, lane and address.
 * Primitives: those listed in hk_cdna.h, the fp8 ones included (their
 * conversions are hk_emu_fp8.h's model, docs/FP8.md).
 *
 * Statistics (hkgen test --stats): each LDS and global primitive takes its
 * call site as trailing default arguments (HK_EMU_SITE: clang evaluates
 * __builtin_FILE/LINE where the call is written, the template's line through
 * #line) and reports each access with HK_EMU_NOTE, one predictable branch
 * when statistics are off. A new primitive does the same.
 */
#ifndef HK_EMU_H
#define HK_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if !defined(HK_EMU_ARCH) || (HK_EMU_ARCH < 2 || HK_EMU_ARCH > 4)
#error "hk_emu.h: define HK_EMU_ARCH to 2 (gfx90a), 3 (gfx942) or 4 (gfx950)"
#endif

#include "hk_emu_abi.h"
#include "hk_emu_fp8.h"

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
#define hkemu_mfma_32x32_f8(fa, fb, a, b, c, d) (hkemu_api.mfma_32x32_f8((fa), (fb), (a), (b), (c), (d)))
#define hkemu_mfma_16x16_bf16(kpl, a, b, c, d) (hkemu_api.mfma_16x16_bf16((kpl), (a), (b), (c), (d)))

/* The call site, as trailing parameters of a primitive, and the report of one
   access of n bytes per lane (kind: HKEMU_LDS_READ ... in hk_emu_abi.h; a
   direct-to-LDS load reports its global read and its LDS write). stats_on is
   NULL under a libhkrt older than these fields. */
#define HK_EMU_SITE const char *hk_site_file = __builtin_FILE(), int hk_site_line = __builtin_LINE()
#define HK_EMU_NOTE(kind, addr, n)                                                              \
    do {                                                                                        \
        if (__builtin_expect(hkemu_api.stats_on && *hkemu_api.stats_on, 0))                     \
            hkemu_api.note((kind), (unsigned long long)(addr), (n), hk_site_file, hk_site_line); \
    } while (0)
#define hkemu_grid_dim(axis) (hkemu_api.grid_dim(axis))
#define hkemu_fault_kernel(what) (hkemu_api.fault_kernel(what))

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
typedef unsigned char hk_fp8;
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
HK_DEVICE int hk_grid_blocks_x(void) { return hkemu_grid_dim(0); }
HK_DEVICE int hk_lane_id(void) { return hk_thread_id() & (HK_WAVE_SIZE - 1); }
HK_DEVICE int hk_wave_id(void) { return hk_thread_id() / HK_WAVE_SIZE; }
HK_DEVICE int hk_uniform_i32(int x) { return x; } /* each fiber computed the same x */

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
HK_DEVICE void hk_barrier_acquire(void) { hkemu_barrier(); } /* writes land at once here */
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

HK_DEVICE unsigned hk_lds_load_b32(hk_lds_t l, int off, HK_EMU_SITE)
{
    unsigned v;
    HK_EMU_LDS_CHECK(l, off, 4u, 0);
    HK_EMU_NOTE(HKEMU_LDS_READ, off, 4u);
    memcpy(&v, l.base + off, 4);
    return v;
}
HK_DEVICE hk_u32x2 hk_lds_load_b64(hk_lds_t l, int off, HK_EMU_SITE)
{
    hk_u32x2 v;
    HK_EMU_LDS_CHECK(l, off, 8u, 0);
    HK_EMU_NOTE(HKEMU_LDS_READ, off, 8u);
    memcpy(&v, l.base + off, 8);
    return v;
}
HK_DEVICE hk_u32x4 hk_lds_load_b128(hk_lds_t l, int off, HK_EMU_SITE)
{
    hk_u32x4 v;
    HK_EMU_LDS_CHECK(l, off, 16u, 0);
    HK_EMU_NOTE(HKEMU_LDS_READ, off, 16u);
    memcpy(&v, l.base + off, 16);
    return v;
}
HK_DEVICE void hk_lds_store_b32(hk_lds_t l, int off, unsigned v, HK_EMU_SITE)
{
    HK_EMU_LDS_CHECK(l, off, 4u, 1);
    HK_EMU_NOTE(HKEMU_LDS_WRITE, off, 4u);
    memcpy(l.base + off, &v, 4);
}
HK_DEVICE void hk_lds_store_b64(hk_lds_t l, int off, hk_u32x2 v, HK_EMU_SITE)
{
    HK_EMU_LDS_CHECK(l, off, 8u, 1);
    HK_EMU_NOTE(HKEMU_LDS_WRITE, off, 8u);
    memcpy(l.base + off, &v, 8);
}
HK_DEVICE void hk_lds_store_b128(hk_lds_t l, int off, hk_u32x4 v, HK_EMU_SITE)
{
    HK_EMU_LDS_CHECK(l, off, 16u, 1);
    HK_EMU_NOTE(HKEMU_LDS_WRITE, off, 16u);
    memcpy(l.base + off, &v, 16);
}

/* ---- global memory: every access checked against the launch's buffers ------ */
/* the element-wise path counts as one 2-byte load per element, as hk_cdna.h
   issues them */
HK_DEVICE hk_bf16x8 hk_global_load_bf16x8(const hk_bf16 *p, int n_valid, bool vec_ok, HK_EMU_SITE)
{
    hk_bf16x8 v = {0, 0, 0, 0, 0, 0, 0, 0};
    if (vec_ok && n_valid >= 8) {
        hkemu_check_global(p, 16, 0);
        HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 16u);
        memcpy(&v, p, 16);
        return v;
    }
    for (int j = 0; j < 8; ++j)
        if (j < n_valid) {
            hkemu_check_global(p + j, 2, 0);
            HK_EMU_NOTE(HKEMU_GLOBAL_READ, p + j, 2u);
            v[j] = p[j];
        }
    return v;
}
/* read once / streamed: hints on sm_90a, the plain accesses on CDNA and here */
HK_DEVICE hk_bf16x8 hk_global_load_bf16x8_once(const hk_bf16 *p, int n_valid, bool vec_ok, HK_EMU_SITE)
{
    return hk_global_load_bf16x8(p, n_valid, vec_ok, hk_site_file, hk_site_line);
}
HK_DEVICE hk_bf16 hk_global_load_bf16(const hk_bf16 *p, bool valid, HK_EMU_SITE)
{
    if (!valid)
        return 0;
    hkemu_check_global(p, 2, 0);
    HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 2u);
    return *p;
}
HK_DEVICE float hk_global_load_f32(const float *p, HK_EMU_SITE)
{
    hkemu_check_global(p, 4, 0);
    HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 4u);
    return *p;
}
HK_DEVICE int hk_global_load_i32(const int *p, HK_EMU_SITE)
{
    hkemu_check_global(p, 4, 0);
    HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 4u);
    return *p;
}
HK_DEVICE void hk_global_store_bf16(hk_bf16 *p, hk_bf16 v, HK_EMU_SITE)
{
    hkemu_check_global(p, 2, 1);
    HK_EMU_NOTE(HKEMU_GLOBAL_WRITE, p, 2u);
    *p = v;
}
HK_DEVICE void hk_global_store_f32(float *p, float v, HK_EMU_SITE)
{
    hkemu_check_global(p, 4, 1);
    HK_EMU_NOTE(HKEMU_GLOBAL_WRITE, p, 4u);
    *p = v;
}
/* 4 and 16 bytes: a misaligned address faults (sm_90a would), reported as a
 * write at address 0; otherwise bounds-checked like the others */
HK_DEVICE void hk_global_store_b32(void *p, unsigned v, HK_EMU_SITE)
{
    if ((size_t)p % 4)
        hkemu_check_global(NULL, 4, 1);
    hkemu_check_global(p, 4, 1);
    HK_EMU_NOTE(HKEMU_GLOBAL_WRITE, p, 4u);
    memcpy(p, &v, 4);
}
HK_DEVICE void hk_global_store_b128(void *p, hk_u32x4 v, HK_EMU_SITE)
{
    if ((size_t)p % 16)
        hkemu_check_global(NULL, 16, 1);
    hkemu_check_global(p, 16, 1);
    HK_EMU_NOTE(HKEMU_GLOBAL_WRITE, p, 16u);
    memcpy(p, &v, 16);
}
HK_DEVICE void hk_global_store_b128_once(void *p, hk_u32x4 v, HK_EMU_SITE)
{
    hk_global_store_b128(p, v, hk_site_file, hk_site_line);
}
/* a prefetch moves no data; the address must lie in an allocation all the same */
HK_DEVICE void hk_prefetch_l2(const void *p, HK_EMU_SITE)
{
    (void)hk_site_file;
    (void)hk_site_line;
    hkemu_check_global(p, 1, 0);
}
/* raw loads of 4, 8 and 16 bytes: misaligned faults as the stores do */
HK_DEVICE void hk_emu_load_raw(void *v, const void *p, unsigned n)
{
    if ((size_t)p % n)
        hkemu_check_global(NULL, n, 0);
    hkemu_check_global(p, n, 0);
    memcpy(v, p, n);
}
HK_DEVICE unsigned hk_global_load_b32(const void *p, HK_EMU_SITE)
{
    unsigned v;
    hk_emu_load_raw(&v, p, 4);
    HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 4u);
    return v;
}
HK_DEVICE hk_u32x2 hk_global_load_b64(const void *p, HK_EMU_SITE)
{
    hk_u32x2 v;
    hk_emu_load_raw(&v, p, 8);
    HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 8u);
    return v;
}
HK_DEVICE hk_u32x4 hk_global_load_b128(const void *p, HK_EMU_SITE)
{
    hk_u32x4 v;
    hk_emu_load_raw(&v, p, 16);
    HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 16u);
    return v;
}
HK_DEVICE hk_u32x4 hk_global_load_u8x16(const hk_fp8 *p, int n_valid, bool vec_ok, HK_EMU_SITE)
{
    hk_u32x4 v = {0, 0, 0, 0};
    if (vec_ok && n_valid >= 16) {
        hkemu_check_global(p, 16, 0);
        HK_EMU_NOTE(HKEMU_GLOBAL_READ, p, 16u);
        memcpy(&v, p, 16);
        return v;
    }
    for (int j = 0; j < 16; ++j)
        if (j < n_valid) {
            hkemu_check_global(p + j, 1, 0);
            HK_EMU_NOTE(HKEMU_GLOBAL_READ, p + j, 1u);
            v[j / 4] |= (unsigned)p[j] << (8 * (j % 4));
        }
    return v;
}

/* ---- device-scope ordering and atomics: workgroups run one after another
 * and work-items are fibers switched only at barriers and collectives, so a
 * checked read-modify-write is atomic and a fence has nothing to do ---------- */
HK_DEVICE void hk_fence_device(void) {}
HK_DEVICE int hk_atomic_add_i32(int *p, int v)
{
    hkemu_check_global(p, 4, 1);
    const int old = *p;
    *p = (int)((unsigned)old + (unsigned)v);
    return old;
}
HK_DEVICE unsigned hk_atomic_min_u32(unsigned *p, unsigned v)
{
    hkemu_check_global(p, 4, 1);
    const unsigned old = *p;
    *p = v < old ? v : old;
    return old;
}
/* A kernel's own check failed: the launch stops with the message. */
#define hk_report_fault(fmt, a, b, c, d)                                                         \
    do {                                                                                         \
        char hk_emu_what_[384];                                                                  \
        snprintf(hk_emu_what_, sizeof hk_emu_what_, fmt, (long)(a), (long)(b), (long)(c), (long)(d)); \
        hkemu_fault_kernel(hk_emu_what_);                                                        \
    } while (0)

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
HK_DEVICE hk_mfma_ab_t hk_lds_load_mfma_ab(hk_lds_t l, int off, HK_EMU_SITE)
{
    hk_mfma_ab_t v;
    HK_EMU_LDS_CHECK(l, off, (unsigned)HK_MFMA_AB_BYTES, 0);
    HK_EMU_NOTE(HKEMU_LDS_READ, off, (unsigned)HK_MFMA_AB_BYTES);
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

/* ---- fp8: the names and formats of hk_cdna.h, computed by hk_emu_fp8.h (the
 * conversions) and by libhkrt (the MFMA, a wave collective). A format the
 * emulated target lacks is the same compile error as on the GPU. ---------------- */
typedef float hk_f32x4 __attribute__((ext_vector_type(4)));
typedef long hk_mfma_f8_ab_t;
#define HK_MFMA_F8_K 16
#define HK_MFMA_F8_KPL 8
#define HK_MFMA_F8_AB_BYTES 8

#define HK_FP8_CAT_(a, b) a##b
#define HK_FP8_CAT(a, b) HK_FP8_CAT_(a, b)
#define hk_fp8_max(F) HK_FP8_CAT(HK_FP8_MAX_, F)
#define hk_fp8_to_f32(F, c) HK_FP8_CAT(hk_fp8_to_f32_, F)(c)
#define hk_fp8x4_to_f32x4(F, w) HK_FP8_CAT(hk_fp8x4_to_f32x4_, F)(w)
#define hk_f32_to_fp8(F, x) HK_FP8_CAT(hk_f32_to_fp8_, F)(x)
#define hk_f32x4_to_fp8x4(F, v) HK_FP8_CAT(hk_f32x4_to_fp8x4_, F)(v)
#define hk_mfma_32x32_fp8(FA, FB, a, b, acc) \
    HK_FP8_CAT(HK_FP8_CAT(HK_FP8_CAT(hk_mfma_32x32x16_, FA), _), FB)(a, b, acc)
#define HK_FP8_MAX_E4M3_OCP 448.0f
#define HK_FP8_MAX_E5M2_OCP 57344.0f
#define HK_FP8_MAX_E4M3_FNUZ 240.0f
#define HK_FP8_MAX_E5M2_FNUZ 57344.0f

HK_DEVICE hk_mfma_f8_ab_t hk_mfma_f8_ab(hk_u32x2 w)
{
    hk_mfma_f8_ab_t a;
    memcpy(&a, &w, 8);
    return a;
}
/* operand i (0 or 1) of 16 bytes read at once: bytes 8i..8i+7 */
HK_DEVICE hk_mfma_f8_ab_t hk_mfma_f8_ab_part(hk_u32x4 v, int i)
{
    const hk_u32x2 w = {v[2 * i], v[2 * i + 1]};
    return hk_mfma_f8_ab(w);
}
HK_DEVICE hk_mfma_f8_ab_t hk_lds_load_mfma_f8_ab(hk_lds_t l, int off, HK_EMU_SITE)
{
    return hk_mfma_f8_ab(hk_lds_load_b64(l, off, hk_site_file, hk_site_line));
}

#define HK_FP8_CONVERSIONS(F)                                                                  \
    HK_DEVICE float hk_fp8_to_f32_##F(unsigned c) { return hkemu_fp8_decode(c & 0xffu, HKEMU_FP8_##F); } \
    HK_DEVICE hk_f32x4 hk_fp8x4_to_f32x4_##F(unsigned w)                                       \
    {                                                                                          \
        hk_f32x4 r;                                                                            \
        for (int j = 0; j < 4; ++j)                                                            \
            r[j] = hkemu_fp8_decode((w >> (8 * j)) & 0xffu, HKEMU_FP8_##F);                    \
        return r;                                                                              \
    }                                                                                          \
    HK_DEVICE unsigned hk_f32_to_fp8_##F(float x) { return hkemu_fp8_encode(x, HKEMU_FP8_##F); } \
    HK_DEVICE unsigned hk_f32x4_to_fp8x4_##F(hk_f32x4 v)                                       \
    {                                                                                          \
        unsigned w = 0;                                                                        \
        for (int j = 0; j < 4; ++j)                                                            \
            w |= hkemu_fp8_encode(v[j], HKEMU_FP8_##F) << (8 * j);                             \
        return w;                                                                              \
    }
#define HK_FP8_UNAVAILABLE(F, WHY)                                                             \
    HK_DEVICE float hk_fp8_to_f32_##F(unsigned) __attribute__((unavailable(WHY)));             \
    HK_DEVICE hk_f32x4 hk_fp8x4_to_f32x4_##F(unsigned) __attribute__((unavailable(WHY)));      \
    HK_DEVICE unsigned hk_f32_to_fp8_##F(float) __attribute__((unavailable(WHY)));             \
    HK_DEVICE unsigned hk_f32x4_to_fp8x4_##F(hk_f32x4) __attribute__((unavailable(WHY)));
#define HK_FP8_MFMA(FA, FB)                                                                    \
    HK_DEVICE hk_mfma_acc_t hk_mfma_32x32x16_##FA##_##FB(hk_mfma_f8_ab_t a, hk_mfma_f8_ab_t b, \
                                                         hk_mfma_acc_t acc)                    \
    {                                                                                          \
        float c[16], d[16];                                                                    \
        memcpy(c, &acc, sizeof c);                                                             \
        hkemu_mfma_32x32_f8(HKEMU_FP8_##FA, HKEMU_FP8_##FB, (const unsigned char *)&a,         \
                            (const unsigned char *)&b, c, d);                                  \
        memcpy(&acc, d, sizeof d);                                                             \
        return acc;                                                                            \
    }
#define HK_FP8_MFMA_UNAVAILABLE(FA, FB, WHY)                                                   \
    HK_DEVICE hk_mfma_acc_t hk_mfma_32x32x16_##FA##_##FB(hk_mfma_f8_ab_t, hk_mfma_f8_ab_t,     \
                                                         hk_mfma_acc_t)                        \
        __attribute__((unavailable(WHY)));
#define HK_FP8_ALL_MFMA_UNAVAILABLE(A, B, WHY)                                                 \
    HK_FP8_MFMA_UNAVAILABLE(A, A, WHY)                                                         \
    HK_FP8_MFMA_UNAVAILABLE(A, B, WHY)                                                         \
    HK_FP8_MFMA_UNAVAILABLE(B, A, WHY)                                                         \
    HK_FP8_MFMA_UNAVAILABLE(B, B, WHY)

#define HK_FP8_NO_OCP_ "hk_cdna.h: gfx942 has the FNUZ fp8 formats (E4M3_FNUZ, E5M2_FNUZ), not OCP"
#define HK_FP8_NO_FNUZ_ "hk_cdna.h: gfx950 has the OCP fp8 formats (E4M3_OCP, E5M2_OCP), not FNUZ"
#define HK_FP8_NONE_ "hk_cdna.h: gfx90a has no fp8 conversions or fp8 MFMA"

#if HK_EMU_ARCH == 3
#define HK_FP8_FNUZ 1
#define HK_FP8_OCP 0
#define HK_FP8_E4M3 E4M3_FNUZ
#define HK_FP8_E5M2 E5M2_FNUZ
HK_FP8_CONVERSIONS(E4M3_FNUZ)
HK_FP8_CONVERSIONS(E5M2_FNUZ)
HK_FP8_MFMA(E4M3_FNUZ, E4M3_FNUZ)
HK_FP8_MFMA(E4M3_FNUZ, E5M2_FNUZ)
HK_FP8_MFMA(E5M2_FNUZ, E4M3_FNUZ)
HK_FP8_MFMA(E5M2_FNUZ, E5M2_FNUZ)
HK_FP8_UNAVAILABLE(E4M3_OCP, HK_FP8_NO_OCP_)
HK_FP8_UNAVAILABLE(E5M2_OCP, HK_FP8_NO_OCP_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_OCP, E5M2_OCP, HK_FP8_NO_OCP_)
#elif HK_EMU_ARCH == 4
#define HK_FP8_FNUZ 0
#define HK_FP8_OCP 1
#define HK_FP8_E4M3 E4M3_OCP
#define HK_FP8_E5M2 E5M2_OCP
HK_FP8_CONVERSIONS(E4M3_OCP)
HK_FP8_CONVERSIONS(E5M2_OCP)
HK_FP8_MFMA(E4M3_OCP, E4M3_OCP)
HK_FP8_MFMA(E4M3_OCP, E5M2_OCP)
HK_FP8_MFMA(E5M2_OCP, E4M3_OCP)
HK_FP8_MFMA(E5M2_OCP, E5M2_OCP)
HK_FP8_UNAVAILABLE(E4M3_FNUZ, HK_FP8_NO_FNUZ_)
HK_FP8_UNAVAILABLE(E5M2_FNUZ, HK_FP8_NO_FNUZ_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_FNUZ, E5M2_FNUZ, HK_FP8_NO_FNUZ_)
#else
#define HK_FP8_FNUZ 0
#define HK_FP8_OCP 0
#define HK_FP8_E4M3 E4M3_NONE
#define HK_FP8_E5M2 E5M2_NONE
HK_FP8_UNAVAILABLE(E4M3_NONE, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E5M2_NONE, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E4M3_OCP, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E5M2_OCP, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E4M3_FNUZ, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E5M2_FNUZ, HK_FP8_NONE_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_NONE, E5M2_NONE, HK_FP8_NONE_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_OCP, E5M2_OCP, HK_FP8_NONE_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_FNUZ, E5M2_FNUZ, HK_FP8_NONE_)
#endif
/* ---- MFMA 16x16 bf16 -> fp32: a wave collective (layouts in hk_cdna.h) -------- */
typedef float hk_mfma16_acc_t __attribute__((ext_vector_type(4)));
typedef hk_mfma_ab_t hk_mfma16_ab_t;
#define HK_MFMA16_K (2 * HK_MFMA_K)
#define HK_MFMA16_PER_B128 (16 / HK_MFMA_AB_BYTES)

HK_DEVICE hk_mfma16_acc_t hk_mfma16_acc_zero(void)
{
    hk_mfma16_acc_t z;
    for (int i = 0; i < 4; ++i)
        z[i] = 0.0f;
    return z;
}
HK_DEVICE hk_mfma16_ab_t hk_mfma16_ab_part(hk_u32x4 v, int i)
{
    hk_mfma16_ab_t a;
    memcpy(&a, (const unsigned char *)&v + i * HK_MFMA_AB_BYTES, HK_MFMA_AB_BYTES);
    return a;
}
HK_DEVICE hk_mfma16_acc_t hk_mfma_16x16(hk_mfma16_ab_t a, hk_mfma16_ab_t b, hk_mfma16_acc_t acc)
{
    unsigned short av[HK_MFMA_KPL], bv[HK_MFMA_KPL];
    float c[4], d[4];
    memcpy(av, &a, sizeof av);
    memcpy(bv, &b, sizeof bv);
    memcpy(c, &acc, sizeof c);
    hkemu_mfma_16x16_bf16(HK_MFMA_KPL, av, bv, c, d);
    memcpy(&acc, d, sizeof d);
    return acc;
}

/* ---- buffer loads: words past the buffer's size read 0 (the hardware's range
 * check); the words inside are bounds-checked against the launch's buffers --- */
typedef struct {
    const unsigned char *p;
    unsigned bytes;
} hk_buffer_t;
HK_DEVICE hk_buffer_t hk_buffer_make(const void *p, unsigned bytes)
{
    hk_buffer_t r;
    r.p = (const unsigned char *)p;
    r.bytes = bytes;
    return r;
}
HK_DEVICE hk_u32x4 hk_buffer_load_b128(hk_buffer_t r, int off, HK_EMU_SITE)
{
    hk_u32x4 v = {0u, 0u, 0u, 0u};
    if ((unsigned)off & 3u)
        hkemu_check_global(NULL, 16, 0); /* misaligned: reported as a read at address 0 */
    if ((unsigned)off + 16u <= r.bytes && (unsigned)off + 16u > (unsigned)off)
        HK_EMU_NOTE(HKEMU_GLOBAL_READ, r.p + (unsigned)off, 16u); /* lanes out of range fetch nothing */
    for (int w = 0; w < 4; ++w) {
        const unsigned o = (unsigned)off + 4u * (unsigned)w;
        if (o < (unsigned)off || o + 4u > r.bytes)
            continue;
        hkemu_check_global(r.p + o, 4, 0);
        memcpy((unsigned char *)&v + 4 * w, r.p + o, 4);
    }
    return v;
}

/* global -> LDS: each lane's 16 bytes land at lds_off + 16 * lane (the
 * hardware writes them asynchronously; the kernel waits and barriers before
 * reading them, and here they are simply there at once); reported as the
 * global read and the LDS write it is */
HK_DEVICE void hk_buffer_load_lds_b128(hk_buffer_t r, int off, hk_lds_t l, int lds_off, HK_EMU_SITE)
{
    hk_lds_store_b128(l, lds_off + 16 * hk_lane_id(), hk_buffer_load_b128(r, off, hk_site_file, hk_site_line),
                      hk_site_file, hk_site_line);
}

/* ---- LDS transposing read (gfx950): a wave collective of libhkrt ------------------ */
#if HK_EMU_ARCH == 4
#define HK_LDS_TR 1
HK_DEVICE hk_bf16x4 hk_lds_load_tr_b64(hk_lds_t l, int off, HK_EMU_SITE)
{
    unsigned short v[4];
    hk_bf16x4 r;
    HK_EMU_LDS_CHECK(l, off, 8u, 0);
    HK_EMU_NOTE(HKEMU_LDS_READ, off, 8u); /* counted as the ds_read_b64 of the lanes' offsets */
    if (!hkemu_api.lds_read_tr16_b64)
        hkemu_fault_kernel("hk_lds_load_tr_b64 needs a newer libhkrt (no LDS transposing read in its emulator)");
    hkemu_api.lds_read_tr16_b64((unsigned)off, v);
    memcpy(&r, v, 8);
    return r;
}
#else
#define HK_LDS_TR 0
#endif

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
/* two fmas, as hk_cdna.h's fallback (gfx950's v_dot2_f32_bf16 may round its sums differently in the last bit) */
HK_DEVICE float hk_dot2_bf16(unsigned a, unsigned b, float c)
{
    return fmaf(hk_u32_as_f32(a & 0xffff0000u), hk_u32_as_f32(b & 0xffff0000u),
                fmaf(hk_u32_as_f32(a << 16), hk_u32_as_f32(b << 16), c));
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
