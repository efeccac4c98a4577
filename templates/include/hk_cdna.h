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
 *   hk_grid_blocks_x()        workgroups in the grid along x
 *   hk_lane_id()              lane in the wave, 0..63
 *   hk_wave_id()              wave in the workgroup, made uniform (readfirstlane)
 *   hk_uniform_i32(x)         x of the wave's first active lane, for a value every lane holds alike (readfirstlane)
 *   HK_NUM_XCD                accelerator dies (XCDs) that workgroups are dealt to round robin (8; 1 on gfx90a)
 *   hk_xcd_remap(id, n)       logical workgroup of linear id (0 <= id < n): a bijection giving each XCD a contiguous range
 *   hk_barrier()              workgroup barrier: release fence, s_barrier, acquire fence
 *   hk_barrier_acquire()      workgroup barrier without the release: s_barrier, acquire fence; this
 *                             wave's outstanding writes (LDS DMA) are not waited for, others' released ones are seen
 *   HK_LDS_DECLARE(bytes)     declares the workgroup's LDS region and the handle `hk_lds` (once per kernel)
 *   hk_lds_load_b32/b64/b128  load 4/8/16 bytes of LDS at a byte offset (naturally aligned)
 *   hk_lds_store_b32/b64/b128 store 4/8/16 bytes of LDS at a byte offset (naturally aligned)
 *   hk_lds_load_mfma_ab       load one MFMA A/B operand (HK_MFMA_AB_BYTES bytes) from LDS
 *   HK_LDS_TR                 1 where the target has LDS transposing reads (gfx950), else 0
 *   hk_lds_load_tr_b64(l, off)  wave collective (all 64 lanes active): each lane names 4 bf16 (8 bytes,
 *                             8-byte aligned) at LDS byte off; within each group of 16 lanes, lane
 *                             16g + i receives element i % 4 of lane 16g + 4j + i / 4's as its element j
 *                             (j = 0..3): 4 rows x 16 columns read row-wise come back column-wise
 *                             (gfx950 ds_read_b64_tr_b16); where HK_LDS_TR is 0 it is unavailable
 *   hk_global_load_bf16x8     8 bf16 from global, elements >= n_valid read as 0 (16-byte load when allowed)
 *   hk_global_load_bf16       1 bf16 from global, 0 when !valid
 *   hk_global_load_f32        1 float from global
 *   hk_global_load_i32        1 int from global
 *   hk_global_store_bf16      store 1 bf16 to global
 *   hk_global_store_f32       store 1 float to global
 *   hk_global_store_b32       store 4 bytes to global (4-byte aligned)
 *   hk_global_store_b128      store 16 bytes to global (16-byte aligned)
 *   hk_global_load_bf16x8_once, hk_global_store_b128_once  the same for data read once / streamed outputs
 *                             (sm_90a gives them evict-first hints; plain accesses here)
 *   hk_prefetch_l2(p)         a hint to bring global address p into L2: nothing on CDNA (no prefetch instruction)
 *   hk_global_load_b32/b64/b128  load 4/8/16 raw bytes from global (naturally aligned), e.g. fp8 codes
 *   hk_global_load_u8x16(p, n_valid, vec_ok)  16 bytes (fp8 codes, hk_fp8) from global as a hk_u32x4, bytes >= n_valid
 *                             read as 0 (one 16-byte load when vec_ok, p 16-byte aligned, and n_valid >= 16)
 *   hk_fence_device()         device-wide (agent scope) fence: this work-item's global writes before, its reads after
 *   hk_atomic_add_i32(p, v)   *p += v on global memory, device scope, acquire-release; returns the old value
 *   hk_atomic_min_u32(p, v)   *p = min(*p, v) (unsigned) on global memory, device scope, relaxed; returns the old value
 *   hk_report_fault(fmt, a, b, c, d)  the emulator stops the launch with fmt (printf, four %ld) filled in; no-op on the device
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
 *   HK_MFMA16_K               K of the 16x16 bf16 MFMA: 16 (gfx90a, gfx942) or 32 (gfx950)
 *   hk_mfma16_ab_t, hk_mfma16_acc_t   its operand type (HK_MFMA_KPL bf16) and 4-float accumulator
 *   hk_mfma16_acc_zero()      a zero 16x16 accumulator
 *   hk_mfma_16x16(a, b, acc)  acc + A(16 x K) * B(K x 16), one wave
 *   HK_MFMA16_PER_B128        16x16 operands in one 16-byte LDS read: 2 (4 k per lane) or 1 (gfx950)
 *   hk_mfma16_ab_part(v, i)   operand i (0 <= i < HK_MFMA16_PER_B128) of the 16 bytes v, low bytes first
 *   hk_buffer_t               a buffer resource: base address and size in bytes (wave-uniform)
 *   hk_buffer_make(p, bytes)  the buffer of `bytes' bytes at p (bytes < 2^31)
 *   hk_buffer_load_b128(r, off)  16 bytes at byte offset off of buffer r, 4-byte aligned; each 4-byte
 *                             word outside [0, bytes) reads as 0 (buffer_load_dwordx4, range-checked)
 *   hk_buffer_load_lds_b128(r, off, l, lds_off)  global -> LDS without registers: lane i's 16 bytes at
 *                             off (as hk_buffer_load_b128) go to LDS byte lds_off + 16 * i; lds_off
 *                             wave-uniform, 16-byte aligned; visible after hk_waitcnt_all() and a
 *                             barrier (gfx950 buffer_load_dwordx4 ... lds; elsewhere load + ds_write)
 *   hk_waitcnt_all()          wait for all outstanding memory operations of this wave
 *   hk_waitcnt_lds()          wait for this wave's outstanding LDS operations only (lgkmcnt 0)
 *   hk_sched_barrier()        stop the compiler moving instructions across this point (no-op if unsupported)
 *   HK_SETPRIO(p)             wave priority hint 0..3 (no-op on the emulator)
 *   hk_exp2f(x)               fast 2^x (v_exp_f32; ~1 ulp, 2^-inf = 0, no denormal results required)
 *   hk_log2f(x)               fast log2(x) (v_log_f32; log2(0) = -inf)
 *   hk_maxf(a, b)             larger of two floats (v_max_f32; a NaN operand gives the other one)
 *   hk_tanhf(x)               tanh(x) from hk_exp2f and a reciprocal (~1e-7 absolute; odd; +-inf give +-1)
 *   hk_swap_halves(x)         wave collective: the value of x in lane l ^ 32 (all 64 lanes must call it)
 *   hk_dot2_bf16(a, b, c)     c + a.lo b.lo + a.hi b.hi in fp32 for two bf16 pairs packed in a, b (low half
 *                             first): v_dot2_f32_bf16 on gfx950, two fmas elsewhere (the products are exact;
 *                             the sums may round differently in the last bit)
 * fp8 (docs/FP8.md). F names a format: E4M3_FNUZ, E5M2_FNUZ (gfx942) or E4M3_OCP, E5M2_OCP (gfx950);
 * HK_FP8_E4M3 / HK_FP8_E5M2 are the target's own. A format the target lacks, or any fp8 on gfx90a,
 * is a compile error naming it ("... is unavailable: ..."):
 *   HK_FP8_OCP, HK_FP8_FNUZ   1 where the target's fp8 is that encoding, else 0
 *   hk_fp8_max(F)             largest finite value of F as a float (448, 57344, 240, 57344)
 *   hk_fp8_to_f32(F, c)       widen the code in the low byte of c (exact; v_cvt_f32_fp8 / _bf8)
 *   hk_fp8x4_to_f32x4(F, w)   widen the 4 codes of w, byte j -> element j (2x v_cvt_pk_f32_fp8 / _bf8)
 *   hk_f32_to_fp8(F, x)       narrow: round to nearest even, +-inf and finite overflow saturate to
 *                             +-max, NaN -> the NaN code (0x7f OCP, 0x80 FNUZ); code in bits 0..7
 *   hk_f32x4_to_fp8x4(F, v)   four at once as hk_f32_to_fp8, element j -> byte j (2x v_cvt_pk_fp8_f32)
 *   HK_MFMA_F8_K              K of the 32x32 fp8 MFMA: 16;  HK_MFMA_F8_KPL = 8 codes per lane
 *   hk_mfma_f8_ab_t           one fp8 A/B operand: HK_MFMA_F8_KPL codes (8 bytes), k ascending from byte 0
 *   hk_mfma_f8_ab(w)          the operand holding the 8 bytes of w (hk_u32x2, low word first)
 *   hk_mfma_f8_ab_part(v, i)  operand i (0, 1) of the 16 bytes v (hk_u32x4): bytes 8i..8i+7
 *   hk_lds_load_mfma_f8_ab    load one fp8 operand (8 bytes) from LDS
 *   hk_mfma_32x32_fp8(FA, FB, a, b, acc)  acc + A(32 x 16, format FA) * B(16 x 32, format FB), one wave;
 *                             FA, FB of the target's encoding (v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8})
 *
 * 16x16 MFMA lane layouts (j = 0..HK_MFMA_KPL-1, r = 0..3; AMD's calculator tables
 * cdna3.v_mfma_f32_16x16x16_bf16, cdna2 ..._1k; gfx950's 16x16x32 with 8 k per lane):
 *   A (16 x K):  lane l holds row  l % 16,  k = (l / 16) * HK_MFMA_KPL + j
 *   B (K x 16):  lane l holds col  l % 16,  k = (l / 16) * HK_MFMA_KPL + j
 *   D (16 x 16): lane l, accumulator element r holds row = (l / 16) * 4 + r,  col = l % 16
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
 * fp8 MFMA (v_mfma_f32_32x32x16_fp8_fp8 and the bf8 forms, gfx942 and gfx950, KPL 8): the same
 *   placement as the bf16 one with HK_MFMA_F8_KPL: A lane l holds row l % 32, k = 8 * (l / 32) + j
 *   (byte j), B col l % 32 with the same k, D as above; AMD's calculator table
 *   shared/mfma-layouts/cdna3.v_mfma_f32_32x32x16_fp8_fp8.{A,B,D}.csv ("A k: 8 * floor(lane / 32)
 *   + 4 * GPR_num + floor(GPR_bits / 8)"); the bf8 forms' tables are the same (tests/data). gfx950 runs the same encoding of the instruction on the
 *   OCP formats (CDNA4 ISA); gfx950's faster v_mfma_scale_f32_32x32x64_f8f6f4 is not wrapped yet.
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
typedef unsigned char hk_fp8;                                           /* an fp8 code (docs/FP8.md) */
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
HK_DEVICE int hk_grid_blocks_x(void)
{
    /* the dispatch's grid, in work-items, over the workgroup size */
    return (int)(__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x());
}
HK_DEVICE int hk_lane_id(void) { return hk_thread_id() & (HK_WAVE_SIZE - 1); }
HK_DEVICE int hk_wave_id(void)
{
    /* the same in every lane; readfirstlane lets the compiler keep it in an SGPR */
    return __builtin_amdgcn_readfirstlane(hk_thread_id() / HK_WAVE_SIZE);
}

/* A value the caller knows to be the same in every lane (loaded from one
 * address, say) made wave-uniform, so that loops and branches on it stay
 * scalar. */
HK_DEVICE int hk_uniform_i32(int x) { return __builtin_amdgcn_readfirstlane(x); }

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

/* The release fence waits for every outstanding write of the wave, LDS DMA
 * included (vmcnt 0); a phase barrier that only orders what the others
 * released leaves it out, so that loads stay in flight across it. */
HK_DEVICE void hk_barrier_acquire(void)
{
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

/* LDS transposing read. The lane map: CDNA4 ISA "MFMA transpose load from LDS"
 * (each lane ends with 4 consecutive rows of one column), as HipKittens'
 * column-layout register tiles address it on MI355X (lane 16g + s reads row
 * s / 4, columns 4 (s % 4) .. + 3 of its group's block, and holds column s
 * after the read). The emulator (hk_emu.h) implements the same map. */
#if defined(__gfx950__) && __has_builtin(__builtin_amdgcn_ds_read_tr16_b64_v4i16)
#define HK_LDS_TR 1
HK_DEVICE hk_bf16x4 hk_lds_load_tr_b64(hk_lds_t l, int off)
{
    typedef short hk_i16x4_ __attribute__((ext_vector_type(4)));
    const hk_i16x4_ v = __builtin_amdgcn_ds_read_tr16_b64_v4i16(
        (__attribute__((address_space(3))) hk_i16x4_ *)(l.base + off));
    return __builtin_bit_cast(hk_bf16x4, v);
}
#else
#define HK_LDS_TR 0
HK_DEVICE hk_bf16x4 hk_lds_load_tr_b64(hk_lds_t l, int off)
    __attribute__((unavailable("hk_cdna.h: LDS transposing reads need gfx950 (HK_LDS_TR)")));
#endif

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

HK_DEVICE hk_bf16x8 hk_global_load_bf16x8_once(const hk_bf16 *p, int n_valid, bool vec_ok)
{
    return hk_global_load_bf16x8(p, n_valid, vec_ok);
}
HK_DEVICE hk_bf16 hk_global_load_bf16(const hk_bf16 *p, bool valid) { return valid ? *p : (hk_bf16)0; }
HK_DEVICE float hk_global_load_f32(const float *p) { return *p; }
HK_DEVICE int hk_global_load_i32(const int *p) { return *p; }
HK_DEVICE void hk_global_store_bf16(hk_bf16 *p, hk_bf16 v) { *p = v; }
HK_DEVICE void hk_global_store_f32(float *p, float v) { *p = v; }
HK_DEVICE void hk_global_store_b32(void *p, unsigned v) { *(unsigned *)p = v; }
HK_DEVICE void hk_global_store_b128(void *p, hk_u32x4 v) { *(hk_u32x4 *)p = v; }
HK_DEVICE void hk_global_store_b128_once(void *p, hk_u32x4 v) { hk_global_store_b128(p, v); }
HK_DEVICE void hk_prefetch_l2(const void *p) { (void)p; }
HK_DEVICE unsigned hk_global_load_b32(const void *p) { return *(const unsigned *)p; }
HK_DEVICE hk_u32x2 hk_global_load_b64(const void *p) { return *(const hk_u32x2 *)p; }
HK_DEVICE hk_u32x4 hk_global_load_b128(const void *p) { return *(const hk_u32x4 *)p; }
HK_DEVICE hk_u32x4 hk_global_load_u8x16(const hk_fp8 *p, int n_valid, bool vec_ok)
{
    if (vec_ok && n_valid >= 16)
        return *(const hk_u32x4 *)p;
    hk_u32x4 v = {0, 0, 0, 0};
    if (n_valid <= 0)
        return v;
    // one branch, then 16 byte loads inside [p, p + n_valid) and selects: a
    // branch per byte would hold an exec mask (two SGPRs) each
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        const unsigned c = p[j < n_valid ? j : n_valid - 1];
        v[j / 4] |= (j < n_valid ? c : 0u) << (8 * (j % 4));
    }
    return v;
}

/* Device-scope ordering for workgroups that hand data to each other through
 * global memory (a split's partial results to the workgroup that merges
 * them): agent scope reaches past each XCD's own L2. */
HK_DEVICE void hk_fence_device(void) { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
#if __has_builtin(__hip_atomic_fetch_add) && __has_builtin(__hip_atomic_fetch_min)
HK_DEVICE int hk_atomic_add_i32(int *p, int v)
{
    return __hip_atomic_fetch_add(p, v, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
}
HK_DEVICE unsigned hk_atomic_min_u32(unsigned *p, unsigned v)
{
    return __hip_atomic_fetch_min(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
#else /* system scope: stronger than needed */
HK_DEVICE int hk_atomic_add_i32(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
HK_DEVICE unsigned hk_atomic_min_u32(unsigned *p, unsigned v) { return __atomic_fetch_min(p, v, __ATOMIC_RELAXED); }
#endif
/* A kernel's own check failed (a corrupt block table, say): the emulator
 * names it and stops; on the device a kernel records it in memory instead. */
#define hk_report_fault(fmt, a, b, c, d) ((void)(a), (void)(b), (void)(c), (void)(d))

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

/* ---- fp8 (docs/FP8.md) -------------------------------------------------------------
 * gfx942's conversions and MFMAs read and write the FNUZ formats, gfx950's the
 * OCP ones (same opcodes, different formats); gfx90a has none. Each primitive
 * is a macro that pastes the format token into a function name, so asking for
 * a format the target lacks names a function declared unavailable: a compile
 * error with the reason, at any optimisation level.
 * Narrowing: v_cvt_pk_{fp8,bf8}_f32 round to nearest even but overflow to NaN
 * (or inf, OCP E5M2) in the default MODE; the v_med3_f32 clamp first makes the
 * result saturate (finite values and infinities to +-max) whatever the MODE,
 * and since v_med3_f32 turns a NaN into a number, a select after the
 * conversion puts the NaN code back (the one code FNUZ has; 0x7f for OCP). */
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

HK_DEVICE hk_mfma_f8_ab_t hk_mfma_f8_ab(hk_u32x2 w) { return __builtin_bit_cast(hk_mfma_f8_ab_t, w); }
/* operand i (0 or 1) of 16 bytes read at once: bytes 8i..8i+7 */
HK_DEVICE hk_mfma_f8_ab_t hk_mfma_f8_ab_part(hk_u32x4 v, int i)
{
    const hk_u32x2 w = {v[2 * i], v[2 * i + 1]};
    return hk_mfma_f8_ab(w);
}
HK_DEVICE hk_mfma_f8_ab_t hk_lds_load_mfma_f8_ab(hk_lds_t l, int off)
{
    return __builtin_bit_cast(hk_mfma_f8_ab_t, hk_lds_load_b64(l, off));
}

/* The conversions of format F through the instructions of kind K (fp8: the
 * E4M3 format, bf8: the E5M2 one); NAN8 is the code a NaN narrows to. */
#define HK_FP8_CONVERSIONS(F, K, NAN8)                                                         \
    HK_DEVICE float hk_fp8_to_f32_##F(unsigned c) { return __builtin_amdgcn_cvt_f32_##K((int)c, 0); } \
    HK_DEVICE hk_f32x4 hk_fp8x4_to_f32x4_##F(unsigned w)                                       \
    {                                                                                          \
        const auto lo = __builtin_amdgcn_cvt_pk_f32_##K((int)w, false);                        \
        const auto hi = __builtin_amdgcn_cvt_pk_f32_##K((int)w, true);                         \
        const hk_f32x4 r = {lo[0], lo[1], hi[0], hi[1]};                                       \
        return r;                                                                              \
    }                                                                                          \
    HK_DEVICE unsigned hk_f32_to_fp8_##F(float x)                                              \
    {                                                                                          \
        const float y = __builtin_amdgcn_fmed3f(x, -HK_FP8_MAX_##F, HK_FP8_MAX_##F);           \
        const unsigned r = (unsigned)__builtin_amdgcn_cvt_pk_##K##_f32(y, y, 0, false) & 0xffu; \
        return x != x ? (NAN8) : r;                                                            \
    }                                                                                          \
    HK_DEVICE unsigned hk_f32x4_to_fp8x4_##F(hk_f32x4 v)                                       \
    {                                                                                          \
        float y[4];                                                                            \
        unsigned nan = 0;                                                                      \
        _Pragma("unroll") for (int j = 0; j < 4; ++j)                                          \
        {                                                                                      \
            y[j] = __builtin_amdgcn_fmed3f(v[j], -HK_FP8_MAX_##F, HK_FP8_MAX_##F);             \
            nan |= v[j] != v[j] ? 0xffu << (8 * j) : 0u;                                       \
        }                                                                                      \
        int w = __builtin_amdgcn_cvt_pk_##K##_f32(y[0], y[1], 0, false);                       \
        w = __builtin_amdgcn_cvt_pk_##K##_f32(y[2], y[3], w, true);                            \
        return ((unsigned)w & ~nan) | ((NAN8) * 0x01010101u & nan);                            \
    }

/* The same names, for a format the target does not have. */
#define HK_FP8_UNAVAILABLE(F, WHY)                                                             \
    HK_DEVICE float hk_fp8_to_f32_##F(unsigned) __attribute__((unavailable(WHY)));             \
    HK_DEVICE hk_f32x4 hk_fp8x4_to_f32x4_##F(unsigned) __attribute__((unavailable(WHY)));      \
    HK_DEVICE unsigned hk_f32_to_fp8_##F(float) __attribute__((unavailable(WHY)));             \
    HK_DEVICE unsigned hk_f32x4_to_fp8x4_##F(hk_f32x4) __attribute__((unavailable(WHY)));

#define HK_FP8_MFMA(FA, FB, KA, KB)                                                            \
    HK_DEVICE hk_mfma_acc_t hk_mfma_32x32x16_##FA##_##FB(hk_mfma_f8_ab_t a, hk_mfma_f8_ab_t b, \
                                                         hk_mfma_acc_t acc)                    \
    {                                                                                          \
        return __builtin_amdgcn_mfma_f32_32x32x16_##KA##_##KB(a, b, acc, 0, 0, 0);             \
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

#if defined(__gfx942__)
#define HK_FP8_FNUZ 1
#define HK_FP8_OCP 0
#define HK_FP8_E4M3 E4M3_FNUZ
#define HK_FP8_E5M2 E5M2_FNUZ
HK_FP8_CONVERSIONS(E4M3_FNUZ, fp8, 0x80u)
HK_FP8_CONVERSIONS(E5M2_FNUZ, bf8, 0x80u)
HK_FP8_UNAVAILABLE(E4M3_OCP, HK_FP8_NO_OCP_)
HK_FP8_UNAVAILABLE(E5M2_OCP, HK_FP8_NO_OCP_)
HK_FP8_MFMA(E4M3_FNUZ, E4M3_FNUZ, fp8, fp8)
HK_FP8_MFMA(E4M3_FNUZ, E5M2_FNUZ, fp8, bf8)
HK_FP8_MFMA(E5M2_FNUZ, E4M3_FNUZ, bf8, fp8)
HK_FP8_MFMA(E5M2_FNUZ, E5M2_FNUZ, bf8, bf8)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_OCP, E5M2_OCP, HK_FP8_NO_OCP_)
#elif defined(__gfx950__)
#define HK_FP8_FNUZ 0
#define HK_FP8_OCP 1
#define HK_FP8_E4M3 E4M3_OCP
#define HK_FP8_E5M2 E5M2_OCP
HK_FP8_CONVERSIONS(E4M3_OCP, fp8, 0x7fu)
HK_FP8_CONVERSIONS(E5M2_OCP, bf8, 0x7fu)
HK_FP8_UNAVAILABLE(E4M3_FNUZ, HK_FP8_NO_FNUZ_)
HK_FP8_UNAVAILABLE(E5M2_FNUZ, HK_FP8_NO_FNUZ_)
HK_FP8_MFMA(E4M3_OCP, E4M3_OCP, fp8, fp8)
HK_FP8_MFMA(E4M3_OCP, E5M2_OCP, fp8, bf8)
HK_FP8_MFMA(E5M2_OCP, E4M3_OCP, bf8, fp8)
HK_FP8_MFMA(E5M2_OCP, E5M2_OCP, bf8, bf8)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_FNUZ, E5M2_FNUZ, HK_FP8_NO_FNUZ_)
#else
#define HK_FP8_FNUZ 0
#define HK_FP8_OCP 0
#define HK_FP8_E4M3 E4M3_NONE
#define HK_FP8_E5M2 E5M2_NONE
HK_FP8_UNAVAILABLE(E4M3_NONE, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E5M2_NONE, HK_FP8_NONE_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_NONE, E5M2_NONE, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E4M3_OCP, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E5M2_OCP, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E4M3_FNUZ, HK_FP8_NONE_)
HK_FP8_UNAVAILABLE(E5M2_FNUZ, HK_FP8_NONE_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_OCP, E5M2_OCP, HK_FP8_NONE_)
HK_FP8_ALL_MFMA_UNAVAILABLE(E4M3_FNUZ, E5M2_FNUZ, HK_FP8_NONE_)
#endif

/* ---- MFMA 16x16 bf16 -> fp32 ---------------------------------------------------
 * Same rate per FLOP as the 32x32 form; half the operand bytes per MFMA, so a
 * wave tile needs fewer LDS reads per instruction issued. */
typedef float hk_mfma16_acc_t __attribute__((ext_vector_type(4)));
typedef hk_mfma_ab_t hk_mfma16_ab_t;
#define HK_MFMA16_K (2 * HK_MFMA_K)
#define HK_MFMA16_PER_B128 (16 / HK_MFMA_AB_BYTES)

HK_DEVICE hk_mfma16_acc_t hk_mfma16_acc_zero(void)
{
    hk_mfma16_acc_t z = {0.0f, 0.0f, 0.0f, 0.0f};
    return z;
}

HK_DEVICE hk_mfma16_ab_t hk_mfma16_ab_part(hk_u32x4 v, int i)
{
#if defined(__gfx950__)
    (void)i;
    return __builtin_bit_cast(hk_mfma16_ab_t, v);
#else
    const hk_u32x2 h = i ? (hk_u32x2){v[2], v[3]} : (hk_u32x2){v[0], v[1]};
    return __builtin_bit_cast(hk_mfma16_ab_t, h);
#endif
}

HK_DEVICE hk_mfma16_acc_t hk_mfma_16x16(hk_mfma16_ab_t a, hk_mfma16_ab_t b, hk_mfma16_acc_t acc)
{
#if defined(__gfx950__)
    return __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, b, acc, 0, 0, 0);
#else
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, acc, 0, 0, 0);
#endif
}

/* ---- buffer loads -----------------------------------------------------------------
 * A buffer resource carries base and size; the load's range check gives 0 for
 * words past the end, so tiles that hang over a matrix's last row need no
 * compare in the loop.  Word 3 (0x00020000): 32-bit raw data, no swizzle, the
 * gfx9 encoding CDNA uses.  LLVM 15 (comgr, gfx90a) has no buffer builtins: a
 * plain load with the same range rule there. */
#if __has_builtin(__builtin_amdgcn_make_buffer_rsrc) && __has_builtin(__builtin_amdgcn_raw_buffer_load_b128)
typedef __amdgpu_buffer_rsrc_t hk_buffer_t;
HK_DEVICE hk_buffer_t hk_buffer_make(const void *p, unsigned bytes)
{
    return __builtin_amdgcn_make_buffer_rsrc((void *)p, (short)0, (int)bytes, 0x00020000);
}
HK_DEVICE hk_u32x4 hk_buffer_load_b128(hk_buffer_t r, int off)
{
    return __builtin_amdgcn_raw_buffer_load_b128(r, off, 0, 0);
}
#else
typedef struct {
    const unsigned char *p;
    unsigned bytes;
} hk_buffer_t;
HK_DEVICE hk_buffer_t hk_buffer_make(const void *p, unsigned bytes)
{
    hk_buffer_t r = {(const unsigned char *)p, bytes};
    return r;
}
HK_DEVICE hk_u32x4 hk_buffer_load_b128(hk_buffer_t r, int off)
{
    hk_u32x4 v = {0u, 0u, 0u, 0u};
    if ((unsigned)off + 16u <= r.bytes)
        return *(const hk_u32x4 *)(r.p + off);
#pragma unroll
    for (int w = 0; w < 4; ++w)
        if ((unsigned)off + 4u * w + 4u <= r.bytes)
            v[w] = *(const unsigned *)(r.p + off + 4 * w);
    return v;
}
#endif

/* The LDS address is M0 (wave-uniform) + 16 * lane: a layout that permutes
 * chunks does so on the global side, through each lane's offset. */
HK_DEVICE void hk_buffer_load_lds_b128(hk_buffer_t r, int off, hk_lds_t l, int lds_off)
{
#if defined(__gfx950__) && __has_builtin(__builtin_amdgcn_raw_ptr_buffer_load_lds)
    __builtin_amdgcn_raw_ptr_buffer_load_lds(r, (__attribute__((address_space(3))) void *)(l.base + lds_off), 16,
                                             off, 0, 0, 0);
#else
    hk_lds_store_b128(l, lds_off + 16 * hk_lane_id(), hk_buffer_load_b128(r, off));
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

HK_DEVICE float hk_dot2_bf16(unsigned a, unsigned b, float c)
{
#if defined(__gfx950__) && __has_builtin(__builtin_amdgcn_fdot2_f32_bf16)
    typedef __bf16 hk_bf16x2_ __attribute__((ext_vector_type(2)));
    return __builtin_amdgcn_fdot2_f32_bf16(__builtin_bit_cast(hk_bf16x2_, a), __builtin_bit_cast(hk_bf16x2_, b), c,
                                           false);
#else
    const float a0 = __builtin_bit_cast(float, a << 16), a1 = __builtin_bit_cast(float, a & 0xffff0000u);
    const float b0 = __builtin_bit_cast(float, b << 16), b1 = __builtin_bit_cast(float, b & 0xffff0000u);
    return __builtin_fmaf(a1, b1, __builtin_fmaf(a0, b0, c));
#endif
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
