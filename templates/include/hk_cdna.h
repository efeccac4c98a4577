/* hk_cdna.h - hkgen tile primitives for AMD CDNA2/3/4 (gfx90a, gfx942, gfx950).
 *
 * Pasted verbatim into every generated kernel (undiverted by m4, never rescanned).
 * Self-contained: no HIP header. Compiles with clang-22 (gfx90a/gfx942/gfx950)
 * and with comgr 2.4's LLVM 15 clang (gfx90a); newer builtins are guarded.
 *
 * Every arch-specific operation a skeleton needs is one of the hk_* / HK_*
 * names below, so the CPU emulator (hk_emu.h) can implement the same set with
 * bounds checks and fiber-based 64-lane waves.  Rules that keep that possible:
 *  - LDS is reached only through HK_LDS_DECLARE + hk_lds_load_* / hk_lds_store_*
 *    with byte offsets; never a __shared__ array or a raw LDS pointer.
 *  - No lockstep assumption inside a wave except through the wave-level
 *    primitives (hk_wave_id, hk_mfma_32x32); cross-lane data goes via LDS and
 *    hk_barrier().
 *  - bf16 is the 16-bit pattern hk_bf16 (LLVM 15 has no usable __bf16 math).
 *
 * Primitives (one line each):
 *   HK_KERNEL(threads)        kernel entry qualifiers: extern "C", global, flat work-group size <= threads
 *   HK_WAVES_PER_SIMD         occupancy HK_KERNEL compiles for (default 1; a skeleton may redefine it)
 *   HK_DEVICE                 qualifiers of a device helper (static inline, always inlined)
 *   HK_WAVE_SIZE              lanes per wave (64)
 *   hk_thread_id()            work-item id in the (1-D) workgroup
 *   hk_block_id_x/y/z()       workgroup id in the grid
 *   hk_lane_id()              lane in the wave, 0..63
 *   hk_wave_id()              wave in the workgroup, made uniform (readfirstlane)
 *   HK_NUM_XCD                accelerator dies (XCDs) that workgroups are dealt to round robin (8; 1 on gfx90a)
 *   hk_xcd_remap(id, n)       logical workgroup of linear id (0 <= id < n): a bijection giving each XCD a contiguous range
 *   hk_barrier()              workgroup barrier: release fence, s_barrier, acquire fence
 *   HK_LDS_DECLARE(bytes)     declares the workgroup's LDS region and the handle `hk_lds` (once per kernel)
 *   hk_lds_load_b32/b64/b128  load 4/8/16 bytes of LDS at a byte offset (naturally aligned)
 *   hk_lds_store_b32/b64/b128 store 4/8/16 bytes of LDS at a byte offset (naturally aligned)
 *   hk_lds_load_mfma_ab       load one MFMA A/B operand (HK_MFMA_AB_BYTES bytes) from LDS
 *   hk_global_load_bf16x8     8 bf16 from global, elements >= n_valid read as 0 (16-byte load when allowed)
 *   hk_global_load_bf16       1 bf16 from global, 0 when !valid
 *   hk_global_load_f32        1 float from global
 *   hk_global_load_i32        1 int from global
 *   hk_global_store_bf16      store 1 bf16 to global
 *   hk_global_store_f32       store 1 float to global
 *   hk_global_store_b32       store 4 bytes to global (4-byte aligned)
 *   hk_global_store_b128      store 16 bytes to global (16-byte aligned)
 *   hk_u32_as_f32(u)          the float whose bit pattern is u
 *   hk_f32_as_u32(f)          the bit pattern of float f
 *   hk_bf16_to_f32            widen a bf16 bit pattern to float (exact)
 *   hk_f32_to_bf16            narrow float to bf16, round to nearest even, NaN kept quiet
 *   hk_f32x2_to_bf16x2(lo, hi) two floats narrowed as hk_f32_to_bf16, packed (lo in bits 0..15), branch-free
 *   HK_MFMA_K                 K of the 32x32 bf16 MFMA: 8 (gfx90a, gfx942) or 16 (gfx950)
 *   HK_MFMA_KPL               k values per lane in an A/B operand (HK_MFMA_K / 2)
 *   HK_MFMA_AB_BYTES          bytes of one A/B operand per lane (2 * HK_MFMA_KPL)
 *   hk_mfma_ab_t, hk_mfma_acc_t   operand type and 16-float accumulator type
 *   hk_mfma_acc_zero()        a zero accumulator
 *   hk_mfma_32x32(a, b, acc)  acc + A(32 x K) * B(K x 32), one wave
 *   hk_waitcnt_all()          wait for all outstanding memory operations of this wave
 *   hk_waitcnt_lds()          wait for this wave's outstanding LDS operations only (lgkmcnt 0)
 *   hk_sched_barrier()        stop the compiler moving instructions across this point (no-op if unsupported)
 *   HK_SETPRIO(p)             wave priority hint 0..3 (no-op on the emulator)
 *   hk_exp2f(x)               fast 2^x (v_exp_f32; ~1 ulp, 2^-inf = 0, no denormal results required)
 *   hk_log2f(x)               fast log2(x) (v_log_f32; log2(0) = -inf)
 *   hk_maxf(a, b)             larger of two floats (v_max_f32; a NaN operand gives the other one)
 *   hk_tanhf(x)               tanh(x) from hk_exp2f and a reciprocal (~1e-7 absolute; odd; +-inf give +-1)
 *   hk_swap_halves(x)         wave collective: the value of x in lane l ^ 32 (all 64 lanes must call it)
 *
 * MFMA lane layouts (lane l = 0..63, j = 0..HK_MFMA_KPL-1, r = 0..15):
 *   A (32 x K):  lane l holds row  l % 32,  k = (l / 32) * HK_MFMA_KPL + j   (element j of the operand)
 *   B (K x 32):  lane l holds col  l % 32,  k = (l / 32) * HK_MFMA_KPL + j
 *   D (32 x 32): lane l, accumulator element r holds
 *                row = (r / 4) * 8 + (l / 32) * 4 + r % 4,  col = l % 32
 * gfx90a/gfx942 (v_mfma_f32_32x32x8[_]bf16[_1k], KPL 4): checked against AMD's
 *   Matrix Instruction Calculator tables, shared/mfma-layouts/cdna3.v_mfma_f32_32x32x8_bf16.{A,B,D}.csv
 *   and cdna2.v_mfma_f32_32x32x8bf16_1k.*.csv ("A k: 4*floor(lane/32) + 2*GPR_num + GPR_bits/16").
 * gfx950 (v_mfma_f32_32x32x16_bf16, KPL 8): the calculator has no CDNA4 tables; the layout
 *   (A/B: lane l holds row/col l % 32 and k = 8 * (l / 32) + j; C/D as 32x32x8) follows AMD's
 *   CDNA4 ISA reference and the ROCm blog "Matrix Core Programming on AMD CDNA3 and CDNA4
 *   Architecture" (rocm.blogs.amd.com, 2025), and matches the CDNA3 32x32x16 fp8 table
 *   (k = 8*floor(lane/32) + byte index). Not yet checked on hardware here.
 */
#ifndef HK_CDNA_H
#define HK_CDNA_H

#if !defined(__gfx90a__) && !defined(__gfx942__) && !defined(__gfx950__)
#error "hk_cdna.h: unsupported target (expected gfx90a, gfx942 or gfx950)"
#endif

#ifndef __has_builtin
#define __has_builtin(x) 0
#endif

/* ---- qualifiers (what HIP headers would define) ------------------------- */
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define HK_DEVICE __attribute__((device)) static inline __attribute__((always_inline, unused))
/* HK_WAVES_PER_SIMD: the occupancy the kernel is compiled for (registers are
 * limited so that this many waves fit on a SIMD); a skeleton may #undef and
 * redefine it before its kernel.  1 = no limit beyond the workgroup size. */
#define HK_WAVES_PER_SIMD 1
#define HK_KERNEL(threads)                                                               \
    extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, threads))) \
    __attribute__((amdgpu_waves_per_eu(HK_WAVES_PER_SIMD)))

#define HK_WAVE_SIZE 64

/* ---- types --------------------------------------------------------------- */
typedef unsigned short hk_bf16;                                         /* bf16 bit pattern */
typedef unsigned short hk_bf16x4 __attribute__((ext_vector_type(4)));  /* 8 bytes */
typedef unsigned short hk_bf16x8 __attribute__((ext_vector_type(8)));  /* 16 bytes */
typedef unsigned int hk_u32x2 __attribute__((ext_vector_type(2)));
typedef unsigned int hk_u32x4 __attribute__((ext_vector_type(4)));
typedef float hk_f32x16 __attribute__((ext_vector_type(16)));

/* ---- ids ------------------------------------------------------------------ */
HK_DEVICE int hk_thread_id(void) { return (int)__builtin_amdgcn_workitem_id_x(); }
HK_DEVICE int hk_block_id_x(void) { return (int)__builtin_amdgcn_workgroup_id_x(); }
HK_DEVICE int hk_block_id_y(void) { return (int)__builtin_amdgcn_workgroup_id_y(); }
HK_DEVICE int hk_block_id_z(void) { return (int)__builtin_amdgcn_workgroup_id_z(); }
HK_DEVICE int hk_lane_id(void) { return hk_thread_id() & (HK_WAVE_SIZE - 1); }
HK_DEVICE int hk_wave_id(void)
{
    /* the same in every lane; readfirstlane lets the compiler keep it in an SGPR */
    return __builtin_amdgcn_readfirstlane(hk_thread_id() / HK_WAVE_SIZE);
}

/* ---- XCD-aware workgroup order ---------------------------------------------
 * MI300X/MI325X (gfx942) and MI355X (gfx950) deal workgroups to their 8 XCDs
 * round robin by linear workgroup id (x fastest, then y, then z); each XCD has
 * its own L2.  hk_xcd_remap turns the hardware id into a logical one so that
 * XCD x runs the contiguous logical range [x*q + min(x, r), ...) of
 * q + (x < r) workgroups (q = n / HK_NUM_XCD, r = n % HK_NUM_XCD): consecutive
 * logical workgroups, which a kernel arranges to share data, share an L2.  A
 * bijection of 0..n-1 for every n >= 1.  Integer arithmetic only; the
 * emulator (hk_emu.h) has the same text, tests/unit/unit_xcd_remap.c checks both. */
#if defined(__gfx90a__)
#define HK_NUM_XCD 1
#else
#define HK_NUM_XCD 8
#endif

HK_DEVICE int hk_xcd_remap(int id, int n)
{
    const int xcd = id % HK_NUM_XCD, q = n / HK_NUM_XCD, r = n % HK_NUM_XCD;
    return xcd * q + (xcd < r ? xcd : r) + id / HK_NUM_XCD;
}

/* ---- synchronisation and scheduling --------------------------------------- */
HK_DEVICE void hk_barrier(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

HK_DEVICE void hk_waitcnt_all(void)
{
    __builtin_amdgcn_s_waitcnt(0); /* gfx9 encoding: vmcnt = expcnt = lgkmcnt = 0 */
}

/* Wait for this wave's outstanding LDS reads and writes (and scalar loads) only:
 * one wait before a group of MFMAs instead of one per operand. */
HK_DEVICE void hk_waitcnt_lds(void)
{
    __builtin_amdgcn_s_waitcnt(0xc07f); /* gfx9 encoding: lgkmcnt = 0, vmcnt = 63, expcnt = 7 (no wait) */
}

HK_DEVICE void hk_sched_barrier(void)
{
#if __has_builtin(__builtin_amdgcn_sched_barrier)
    __builtin_amdgcn_sched_barrier(0);
#endif
}

#define HK_SETPRIO(p) __builtin_amdgcn_s_setprio(p)

/* ---- LDS -------------------------------------------------------------------
 * One region per workgroup, addressed by byte offsets through the handle
 * `hk_lds`.  The emulator's handle also carries the size for bounds checks. */
typedef struct {
    unsigned char *base;
} hk_lds_t;

#define HK_LDS_DECLARE(bytes)                                                        \
    __attribute__((shared)) __attribute__((aligned(16))) unsigned char hk_lds_bytes_[(bytes)]; \
    const hk_lds_t hk_lds = {hk_lds_bytes_}

HK_DEVICE unsigned hk_lds_load_b32(hk_lds_t l, int off) { return *(const unsigned *)(l.base + off); }
HK_DEVICE hk_u32x2 hk_lds_load_b64(hk_lds_t l, int off) { return *(const hk_u32x2 *)(l.base + off); }
HK_DEVICE hk_u32x4 hk_lds_load_b128(hk_lds_t l, int off) { return *(const hk_u32x4 *)(l.base + off); }
HK_DEVICE void hk_lds_store_b32(hk_lds_t l, int off, unsigned v) { *(unsigned *)(l.base + off) = v; }
HK_DEVICE void hk_lds_store_b64(hk_lds_t l, int off, hk_u32x2 v) { *(hk_u32x2 *)(l.base + off) = v; }
HK_DEVICE void hk_lds_store_b128(hk_lds_t l, int off, hk_u32x4 v) { *(hk_u32x4 *)(l.base + off) = v; }

/* ---- global memory ---------------------------------------------------------- */

/* 8 bf16 starting at p; element j is p[j] if j < n_valid, else 0.  With
 * vec_ok (p 16-byte aligned, caller's promise) and n_valid >= 8 this is one
 * 16-byte load; otherwise element-wise loads, none past n_valid. */
HK_DEVICE hk_bf16x8 hk_global_load_bf16x8(const hk_bf16 *p, int n_valid, bool vec_ok)
{
    if (vec_ok && n_valid >= 8)
        return *(const hk_bf16x8 *)p;
    hk_bf16x8 v = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < 8; ++j)
        if (j < n_valid)
            v[j] = p[j];
    return v;
}

HK_DEVICE hk_bf16 hk_global_load_bf16(const hk_bf16 *p, bool valid) { return valid ? *p : (hk_bf16)0; }
HK_DEVICE float hk_global_load_f32(const float *p) { return *p; }
HK_DEVICE int hk_global_load_i32(const int *p) { return *p; }
HK_DEVICE void hk_global_store_bf16(hk_bf16 *p, hk_bf16 v) { *p = v; }
HK_DEVICE void hk_global_store_f32(float *p, float v) { *p = v; }
HK_DEVICE void hk_global_store_b32(void *p, unsigned v) { *(unsigned *)p = v; }
HK_DEVICE void hk_global_store_b128(void *p, hk_u32x4 v) { *(hk_u32x4 *)p = v; }

/* ---- bf16 <-> fp32 ---------------------------------------------------------- */
HK_DEVICE float hk_bf16_to_f32(hk_bf16 x) { return __builtin_bit_cast(float, (unsigned)x << 16); }
HK_DEVICE float hk_u32_as_f32(unsigned u) { return __builtin_bit_cast(float, u); }
HK_DEVICE unsigned hk_f32_as_u32(float f) { return __builtin_bit_cast(unsigned, f); }

HK_DEVICE hk_bf16 hk_f32_to_bf16(float f)
{
    unsigned u = __builtin_bit_cast(unsigned, f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign, force quiet */
        return (hk_bf16)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (hk_bf16)(u >> 16);
}

/* Two at once: v_cvt_pk_bf16_f32 on gfx950 (RNE, NaN quieted), else the same
 * rounding as hk_f32_to_bf16 with selects instead of a branch. */
HK_DEVICE unsigned hk_f32x2_to_bf16x2(float lo, float hi)
{
#if defined(__gfx950__)
    typedef float hk_f32x2_ __attribute__((ext_vector_type(2)));
    typedef __bf16 hk_bf16x2_ __attribute__((ext_vector_type(2)));
    const hk_f32x2_ v = {lo, hi};
    return __builtin_bit_cast(unsigned, __builtin_convertvector(v, hk_bf16x2_));
#else
    const unsigned a = __builtin_bit_cast(unsigned, lo), b = __builtin_bit_cast(unsigned, hi);
    const unsigned ra = lo != lo ? (a | 0x00400000u) : a + 0x7fffu + ((a >> 16) & 1u);
    const unsigned rb = hi != hi ? (b | 0x00400000u) : b + 0x7fffu + ((b >> 16) & 1u);
#if __has_builtin(__builtin_amdgcn_perm)
    return __builtin_amdgcn_perm(rb, ra, 0x07060302u); /* high halves of ra (low) and rb (high) */
#else
    return (ra >> 16) | (rb & 0xffff0000u);
#endif
#endif
}

/* ---- MFMA 32x32 bf16 -> fp32 -------------------------------------------------- */
typedef hk_f32x16 hk_mfma_acc_t;

#if defined(__gfx950__)
#define HK_MFMA_K 16
typedef __bf16 hk_mfma_ab_t __attribute__((ext_vector_type(8)));
#else
#define HK_MFMA_K 8
typedef short hk_mfma_ab_t __attribute__((ext_vector_type(4)));
#endif
#define HK_MFMA_KPL (HK_MFMA_K / 2)
#define HK_MFMA_AB_BYTES (2 * HK_MFMA_KPL)

HK_DEVICE hk_mfma_acc_t hk_mfma_acc_zero(void)
{
    hk_mfma_acc_t z = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
                       0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    return z;
}

/* HK_MFMA_KPL consecutive k values of one row (A) or column (B), k innermost in LDS */
HK_DEVICE hk_mfma_ab_t hk_lds_load_mfma_ab(hk_lds_t l, int off)
{
#if defined(__gfx950__)
    return __builtin_bit_cast(hk_mfma_ab_t, hk_lds_load_b128(l, off));
#else
    return __builtin_bit_cast(hk_mfma_ab_t, hk_lds_load_b64(l, off));
#endif
}

HK_DEVICE hk_mfma_acc_t hk_mfma_32x32(hk_mfma_ab_t a, hk_mfma_ab_t b, hk_mfma_acc_t acc)
{
#if defined(__gfx950__)
    return __builtin_amdgcn_mfma_f32_32x32x16_bf16(a, b, acc, 0, 0, 0);
#else
    return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, acc, 0, 0, 0);
#endif
}

/* ---- fast math and cross-lane exchange ------------------------------------------ */
HK_DEVICE float hk_exp2f(float x)
{
#if __has_builtin(__builtin_amdgcn_exp2f)
    return __builtin_amdgcn_exp2f(x); /* bare v_exp_f32 */
#else
    return __builtin_exp2f(x); /* LLVM 15 lowers llvm.exp2.f32 to v_exp_f32 */
#endif
}

HK_DEVICE float hk_log2f(float x)
{
#if __has_builtin(__builtin_amdgcn_logf)
    return __builtin_amdgcn_logf(x); /* bare v_log_f32 */
#else
    return __builtin_log2f(x);
#endif
}

HK_DEVICE float hk_maxf(float a, float b) { return __builtin_fmaxf(a, b); }

/* tanh |x| = (1 - e) / (1 + e), e = 2^(-2 |x| log2 e) in (0, 1]: no overflow;
 * v_rcp_f32 (1 ulp) instead of a full division; the sign put back. */
HK_DEVICE float hk_tanhf(float x)
{
    const float e = hk_exp2f(-2.88539008177792681f * __builtin_fabsf(x));
#if __has_builtin(__builtin_amdgcn_rcpf)
    const float t = (1.0f - e) * __builtin_amdgcn_rcpf(1.0f + e);
#else
    const float t = (1.0f - e) / (1.0f + e);
#endif
    return __builtin_copysignf(t, x);
}

/* Lane l gets x of lane l ^ 32: v_permlane32_swap where the target has it
 * (gfx950), else ds_bpermute (no LDS memory used). */
HK_DEVICE float hk_swap_halves(float x)
{
#if __has_builtin(__builtin_amdgcn_permlane32_swap) && defined(__gfx950__)
    const unsigned u = __builtin_bit_cast(unsigned, x);
    /* [0]: lanes 32..63 now hold lanes 0..31 of x; [1]: lanes 0..31 hold lanes 32..63 */
    const auto r = __builtin_amdgcn_permlane32_swap(u, u, false, false);
    return __builtin_bit_cast(float, hk_lane_id() < 32 ? r[1] : r[0]);
#else
    const int v = __builtin_amdgcn_ds_bpermute((hk_lane_id() ^ 32) << 2, __builtin_bit_cast(int, x));
    return __builtin_bit_cast(float, v);
#endif
}

#endif /* HK_CDNA_H */
