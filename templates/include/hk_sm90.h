/* hk_sm90.h - hkgen tile primitives for NVIDIA Hopper (sm_90a: H100, H200).
 *
 * Pasted verbatim into every generated kernel (undiverted by m4, never rescanned).
 * Compiled by `nvcc -x cu --cubin -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17`.
 * Self-contained: no #include; it relies only on what nvcc declares for every
 * .cu file (threadIdx, blockIdx, __syncthreads, __launch_bounds__, __shared__,
 * __cvta_generic_to_shared) and on inline PTX kept inside this header.
 *
 * Same primitive names and meanings as hk_cdna.h where they make sense on
 * NVIDIA; the rules are the same (shared memory only through HK_LDS_DECLARE and
 * byte offsets; no inline asm in skeletons).  nvcc has no clang ext_vector_type:
 * the vector types are 8/16-byte aligned structs with operator[].
 *
 * Primitives (one line each):
 *   HK_KERNEL(threads)        extern "C" __global__ __launch_bounds__(threads, HK_BLOCKS_PER_SM) (the skeleton writes `void name(...)`)
 *   HK_BLOCKS_PER_SM          blocks per SM HK_KERNEL compiles for (default 0: no limit; a skeleton may redefine it)
 *   HK_KERNEL_CLUSTER         attributes HK_KERNEL appends: empty, or a skeleton's HK_CLUSTER_DIMS(n) (#undef, #define)
 *   HK_CLUSTER_DIMS(n)        blocks launched in clusters of n along x (__cluster_dims__; the grid a multiple of n)
 *   HK_DEVICE                 qualifiers of a device helper (static, forced inline)
 *   HK_WAVE_SIZE              lanes per wave (warp): 32
 *   hk_thread_id()            thread id in the (1-D) block
 *   hk_block_id_x/y/z()       block id in the grid
 *   hk_grid_dim_x/y()         blocks in the grid along x / y
 *   hk_lane_id()              lane in the warp, 0..31
 *   hk_wave_id()              warp in the block (uniform: shfl from lane 0)
 *   hk_barrier()              block barrier (__syncthreads)
 *   hk_barrier_part(id, n)    barrier `id' (1..15) of the first n threads to arrive (n a multiple of 32):
 *                             a barrier among some warps while others run on (bar.sync id, n)
 *   hk_barrier_arrive(id, n)  arrive at barrier `id' without waiting (bar.arrive): with warps that
 *                             hk_barrier_part(id, n) there, an order between warp groups
 *   hk_regs_grow<N>(), hk_regs_shrink<N>()  this warpgroup's registers per thread become N (24..256,
 *                             a multiple of 8; setmaxnreg, every thread of the warpgroup): warp-specialised
 *                             blocks hand registers from a copying warpgroup to the computing ones
 *   hk_waitcnt_all()          no-op (loads are waited for at first use; see hk_async_wait)
 *   hk_sched_barrier()        no-op
 *   HK_SETPRIO(p)             no-op
 *   HK_LDS_DECLARE(bytes)     declares the block's shared memory (1024-byte aligned) and the handle `hk_lds`
 *   HK_LDS_DECLARE_DYNAMIC()  the same over the launch's dynamic shared memory (extern __shared__), aligned
 *                             to 1024 bytes at run time: HK_LDS_DYNAMIC_SLACK of the launch's bytes are lost
 *   hk_lds_load_b32/b64/b128  load 4/8/16 bytes of shared memory at a byte offset (naturally aligned)
 *   hk_lds_store_b32/b64/b128 store 4/8/16 bytes of shared memory at a byte offset (naturally aligned)
 *   hk_global_load_bf16x8     8 bf16 from global, elements >= n_valid read as 0 (16-byte load when allowed)
 *   hk_global_load_bf16       1 bf16 from global, 0 when !valid
 *   hk_global_load_u8x16(p, n_valid, vec_ok)  16 bytes (fp8 codes, hk_fp8) from global, bytes >= n_valid read as 0
 *   hk_global_load_f32        1 float from global
 *   hk_global_store_bf16      store 1 bf16 to global
 *   hk_global_store_b32       store 4 bytes to global (4-byte aligned)
 *   hk_global_store_b128      store 16 bytes to global (16-byte aligned)
 *   hk_global_load_bf16x8_once  hk_global_load_bf16x8 of data this kernel reads once: evict-first in L1 and
 *                             L2 (ld.global.cs); the element path as hk_global_load_bf16x8
 *   hk_global_store_b128_once(p, v)  hk_global_store_b128 of a streamed output: evict-first (st.global.cs)
 *   hk_global_load_b128_l2(p) 16 bytes from global through L2 only (ld.global.cg; 16-byte aligned): data that
 *                             other blocks wrote during this launch (after hk_fence_device and a count)
 *   hk_fence_device()         device-scope fence (fence.acq_rel.gpu): this thread's global writes before, reads after
 *   hk_atomic_add_i32(p, v)   *p += v on global memory, device scope, acquire-release; returns the old value
 *   hk_prefetch_l2(p)         ask for the line holding global address p in L2 (prefetch.global.L2; no data, no registers)
 *   hk_u32_as_f32(u)          the float whose bit pattern is u
 *   hk_f32_as_u32(f)          the bit pattern of float f
 *   hk_bf16_to_f32            widen a bf16 bit pattern to float (exact)
 *   hk_f32_to_bf16            narrow float to bf16, round to nearest even (cvt.rn; NaN -> canonical NaN)
 *   hk_f32x2_to_bf16x2(lo,hi) two floats to a packed bf16 pair (lo in bits 0..15), RNE
 *   hk_global_store_f32       store 1 float to global
 *   hk_exp2f(x)               fast 2^x (ex2.approx.ftz; 2^-inf = 0)
 *   hk_log2f(x)               fast log2(x) (lg2.approx.ftz; log2(0) = -inf)
 *   hk_maxf(a, b)             larger of two floats (a NaN operand gives the other one)
 *   hk_tanhf(x)               fast tanh(x) (tanh.approx: one MUFU op, ~2^-11 relative; hk_cdna.h's is
 *                             ~1e-7 absolute at two ops; +-inf give +-1)
 *   hk_shfl_xor_f32(x, m)     warp collective: x of lane (lane ^ m) (all 32 lanes must call it)
 *   hk_shfl_xor_u32(x, m)     the same for a 32-bit word (two packed bf16)
 *   hk_shfl_i32(x, src)       warp collective: x of lane src (all 32 lanes must call it)
 *   hk_warp_any(p)            warp collective: p of any lane (all 32 lanes must call it)
 *   hk_syncwarp()             warp barrier: the warp's shared-memory writes before it, reads after (__syncwarp)
 *   hk_uniform_i32(x)         x (for a value every lane holds alike; hk_cdna.h's readfirstlane)
 *   hk_global_load_i32        1 int from global
 *   hk_global_load_b128(p)    16 bytes from global (16-byte aligned)
 *   hk_atomic_min_u32(p, v)   *p = min(*p, v) (unsigned) on global memory, device scope; returns the old value
 *   hk_report_fault(fmt, ...) no-op (the emulator's report of bad device data; kernels also record it in memory)
 *   hk_f32x2_to_f16x2(lo, hi) two floats to a packed fp16 pair (lo in bits 0..15), RNE
 *   hk_e4m3x4_to_f16x4(w)     the four OCP e4m3 codes of w (byte i = code i) as fp16 times 2^-8, exact (fp16
 *                             holds e4m3's normals and subnormals); NaN codes give NaN; word 0 = codes 0, 1
 *   hk_mma_16x8x16_f16(a, b0, b1, acc)  hk_mma_16x8x16 with fp16 operands
 *  Hopper-only (asynchronous copies, tensor cores):
 *   hk_async_load_b128(l, off, src, n_bytes)   cp.async 16 bytes global -> shared; bytes >= n_bytes (0..16) are 0;
 *                                              src 16-byte aligned; nothing is read when n_bytes == 0
 *   hk_async_commit()         close the group of async copies issued so far by this thread
 *   hk_async_wait<N>()        wait until at most N groups of this thread are pending
 *   hk_lds_load_mma_x4(l, off)        ldmatrix .x4: four 8x8 b16 matrices; lane l gives the row address
 *                                     of matrix l/8 (row l%8); result word i = matrix i, row lane/4, cols 2*(lane%4)+{0,1}
 *   hk_lds_load_mma_x4_trans(l, off)  the same, transposed (ldmatrix .trans)
 *   hk_mma_16x8x16(a, b, acc)         acc(16x8 fp32) += A(16x16 bf16) * B(16x8 bf16), one warp (mma.sync)
 *   hk_mma_acc_t, hk_mma_acc_zero()   the 4-float accumulator of one lane
 *   hk_wgmma_64xNx16 (N = 32, 64, 128, 256), hk_wgmma_64xNx16_tb (B MN-major; N = 64, 128, 256),
 *   hk_wgmma_accN_t, hk_wgmma_desc, hk_wgmma_desc_add, hk_wgmma_fence/commit/wait<N>,
 *   hk_wgmma_64xNx32_e4m3, hk_wgmma_64xNx32_e5m2 (N = 64, 128, 256)  the same for fp8 codes (OCP E4M3 / E5M2,
 *                             A and B of one format, both K-major: 128-byte rows of 128 codes; see below)
 *   hk_fence_proxy_async             warpgroup MMA from shared-memory descriptors (sm_90a; see below)
 *   hk_tmap, HK_KERNARG_QUAL, hk_mbar_*, hk_tma_load_2d/3d/4d, hk_tma_store_2d, hk_tmap_prefetch
 *                                    mbarriers and bulk tensor copies (TMA; see below)
 *   hk_wgmma_rs_64xNx16_tb (N = 64, 128), hk_wgmma_rs_64x64x16, hk_wgmma_rs_fence_acc64/128/256
 *                                    attention primitives: wgmma with A from registers, B MN-major
 *                                    (_tb) or K-major (see the end)
 *   hk_wgmma_64x64x16_tatb           wgmma with A and B both MN-major (attention backward's dQ = dS K; see the end)
 *   hk_global_store_f32x2, hk_global_load_f32_l2, hk_global_load_f32x2_l2, hk_red_add_f32x2
 *                                    fp32 pairs to / from global (the load from L2, past L1), and an atomic add of a pair
 *   hk_load_acquire_gpu(p), hk_atomic_add_release_gpu(p, v), hk_red_add_release_gpu(p, v),
 *   hk_store_relaxed_gpu(p, v), hk_fence_gpu(), hk_sleep_ns(n)
 *                                    device-scope flags between blocks (ordered accumulation), and a short back-off
 *   hk_trap()                         stop the kernel with an error (a launch the kernel cannot serve)
 *   hk_bulk_store(g, l, off, n), hk_bulk_reduce_add_f32(g, l, off, n), hk_bulk_commit(), hk_bulk_wait<N>(),
 *   hk_bulk_wait_read<N>(), hk_fence_proxy_async_global(), hk_bulk_load(l, off, g, n, bar_off)
 *                                    bulk copies shared -> global (plain, or an fp32 add at the destination), their
 *                                    groups, the fence that orders them with ordinary global accesses, and a bulk
 *                                    copy global -> shared counted on an mbarrier
 *
 * mma.sync m16n8k16 lane layouts (lane l, g = l / 4, t = l % 4), 32-bit words of bf16 pairs (low half first):
 *   A (16 x 16, hk_u32x4): word 0 = A[g][2t..2t+1], 1 = A[g+8][2t..], 2 = A[g][2t+8..], 3 = A[g+8][2t+8..]
 *   B (16 x 8,  hk_u32x2): word 0 = B[2t..2t+1][g] (two k), 1 = B[2t+8..2t+9][g]
 *   D (16 x 8,  4 floats): d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1]
 * (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point type".)
 */
#ifndef HK_SM90_H
#define HK_SM90_H

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "hk_sm90.h: needs sm_80 or newer (built for sm_90a)"
#endif

/* helpers of this header that a kernel leaves unused, and parameter bindings a
 * kernel does not read, are not worth a warning each */
#pragma nv_diag_suppress 177

/* ---- qualifiers ----------------------------------------------------------- */
#define HK_DEVICE static __device__ __forceinline__
/* HK_BLOCKS_PER_SM: blocks of the kernel that must fit on an SM at once (ptxas limits
 * registers to 64K / (threads x this)); a skeleton may #undef and redefine it before its
 * kernel.  0 = no limit beyond the block size (the same code as no second bound). */
#define HK_BLOCKS_PER_SM 0
#define HK_KERNEL(threads) extern "C" __global__ __launch_bounds__(threads, HK_BLOCKS_PER_SM) HK_KERNEL_CLUSTER
#define HK_KERNEL_CLUSTER
#define HK_CLUSTER_DIMS(n) __cluster_dims__(n, 1, 1)
#define HK_WAVE_SIZE 32

/* ---- types --------------------------------------------------------------- */
typedef unsigned short hk_bf16; /* bf16 bit pattern */
typedef unsigned char hk_fp8;   /* an fp8 code (e4m3 / e5m2, OCP) */

struct __align__(8) hk_u32x2 {
    unsigned v[2];
    __device__ __forceinline__ unsigned &operator[](int i) { return v[i]; }
    __device__ __forceinline__ unsigned operator[](int i) const { return v[i]; }
};
struct __align__(16) hk_u32x4 {
    unsigned v[4];
    __device__ __forceinline__ unsigned &operator[](int i) { return v[i]; }
    __device__ __forceinline__ unsigned operator[](int i) const { return v[i]; }
};
struct __align__(8) hk_bf16x4 {
    hk_bf16 v[4];
    __device__ __forceinline__ hk_bf16 &operator[](int i) { return v[i]; }
    __device__ __forceinline__ hk_bf16 operator[](int i) const { return v[i]; }
};
struct __align__(16) hk_bf16x8 {
    hk_bf16 v[8];
    __device__ __forceinline__ hk_bf16 &operator[](int i) { return v[i]; }
    __device__ __forceinline__ hk_bf16 operator[](int i) const { return v[i]; }
};

/* ---- ids ------------------------------------------------------------------ */
HK_DEVICE int hk_thread_id(void) { return (int)threadIdx.x; }
HK_DEVICE int hk_block_id_x(void) { return (int)blockIdx.x; }
HK_DEVICE int hk_block_id_y(void) { return (int)blockIdx.y; }
HK_DEVICE int hk_block_id_z(void) { return (int)blockIdx.z; }
HK_DEVICE int hk_grid_dim_x(void) { return (int)gridDim.x; }
HK_DEVICE int hk_grid_dim_y(void) { return (int)gridDim.y; }
HK_DEVICE int hk_lane_id(void) { return (int)threadIdx.x & (HK_WAVE_SIZE - 1); }
HK_DEVICE int hk_wave_id(void)
{
    /* the same in every lane; the shuffle tells the compiler so */
    return __shfl_sync(0xffffffffu, (int)threadIdx.x / HK_WAVE_SIZE, 0);
}

/* ---- synchronisation and scheduling --------------------------------------- */
HK_DEVICE void hk_barrier(void) { __syncthreads(); }
HK_DEVICE void hk_barrier_part(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
HK_DEVICE void hk_barrier_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
template <int N> HK_DEVICE void hk_regs_grow(void)
{
    static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> HK_DEVICE void hk_regs_shrink(void)
{
    static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
HK_DEVICE void hk_waitcnt_all(void) {}
HK_DEVICE void hk_sched_barrier(void) {}
#define HK_SETPRIO(p) ((void)0)

/* ---- shared memory ----------------------------------------------------------
 * One region per block, addressed by byte offsets through the handle `hk_lds`
 * (a generic pointer for ordinary accesses, the shared-window address for
 * cp.async and ldmatrix).  At most 48 KiB of static shared memory; more
 * through HK_LDS_DECLARE_DYNAMIC. */
typedef struct {
    unsigned char *base;
    unsigned addr;
} hk_lds_t;

#define HK_LDS_DECLARE(bytes)                                                        \
    __shared__ __align__(1024) unsigned char hk_lds_bytes_[(bytes)];                \
    const hk_lds_t hk_lds = {hk_lds_bytes_, (unsigned)__cvta_generic_to_shared(hk_lds_bytes_)}

/* Dynamic shared memory (the launch passes its size: the manifest's
 * "dynamic_lds"), for more than 48 KiB.  The
 * handle starts at the first 1024-byte boundary of the region, so a kernel
 * gets the launch size less HK_LDS_DYNAMIC_SLACK usable bytes. */
#define HK_LDS_DYNAMIC_SLACK 1024
#define HK_LDS_DECLARE_DYNAMIC()                                                     \
    extern __shared__ __align__(16) unsigned char hk_lds_dyn_[];                    \
    const unsigned hk_lds_dyn_addr_ = (unsigned)__cvta_generic_to_shared(hk_lds_dyn_); \
    const unsigned hk_lds_dyn_pad_ = (0u - hk_lds_dyn_addr_) & 1023u;                  \
    const hk_lds_t hk_lds = {hk_lds_dyn_ + hk_lds_dyn_pad_, hk_lds_dyn_addr_ + hk_lds_dyn_pad_}

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
    hk_bf16x8 v = {{0, 0, 0, 0, 0, 0, 0, 0}};
#pragma unroll
    for (int j = 0; j < 8; ++j)
        if (j < n_valid)
            v[j] = p[j];
    return v;
}

HK_DEVICE hk_bf16x8 hk_global_load_bf16x8_once(const hk_bf16 *p, int n_valid, bool vec_ok)
{
    if (vec_ok && n_valid >= 8) {
        const uint4 w = __ldcs((const uint4 *)p);
        hk_bf16x8 v;
        __builtin_memcpy(&v, &w, sizeof v);
        return v;
    }
    return hk_global_load_bf16x8(p, n_valid, vec_ok);
}

HK_DEVICE hk_bf16 hk_global_load_bf16(const hk_bf16 *p, bool valid) { return valid ? *p : (hk_bf16)0; }
HK_DEVICE hk_u32x4 hk_global_load_u8x16(const hk_fp8 *p, int n_valid, bool vec_ok)
{
    if (vec_ok && n_valid >= 16)
        return *(const hk_u32x4 *)p;
    hk_u32x4 v = {{0, 0, 0, 0}};
#pragma unroll
    for (int j = 0; j < 16; ++j)
        if (j < n_valid)
            v[j / 4] |= (unsigned)p[j] << (8 * (j % 4));
    return v;
}
HK_DEVICE float hk_global_load_f32(const float *p) { return *p; }
HK_DEVICE void hk_global_store_bf16(hk_bf16 *p, hk_bf16 v) { *p = v; }
HK_DEVICE void hk_global_store_b32(void *p, unsigned v) { *(unsigned *)p = v; }
HK_DEVICE void hk_global_store_b128(void *p, hk_u32x4 v) { *(hk_u32x4 *)p = v; }
HK_DEVICE void hk_global_store_b128_once(void *p, hk_u32x4 v) { __stcs((uint4 *)p, make_uint4(v[0], v[1], v[2], v[3])); }
HK_DEVICE hk_u32x4 hk_global_load_b128_l2(const void *p)
{
    hk_u32x4 r;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3])
                 : "l"(p)
                 : "memory");
    return r;
}
HK_DEVICE void hk_fence_device(void) { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }
HK_DEVICE int hk_atomic_add_i32(int *p, int v)
{
    int old;
    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
HK_DEVICE void hk_prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

/* ---- bf16 <-> fp32 ---------------------------------------------------------- */
HK_DEVICE float hk_bf16_to_f32(hk_bf16 x) { return __uint_as_float((unsigned)x << 16); }
HK_DEVICE float hk_u32_as_f32(unsigned u) { return __uint_as_float(u); }
HK_DEVICE unsigned hk_f32_as_u32(float f) { return __float_as_uint(f); }

HK_DEVICE hk_bf16 hk_f32_to_bf16(float f)
{
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}

HK_DEVICE unsigned hk_f32x2_to_bf16x2(float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); /* first source -> upper half */
    return r;
}

/* ---- asynchronous copies global -> shared (cp.async, sm_80+) ------------------ */
HK_DEVICE void hk_async_load_b128(hk_lds_t l, int off, const void *src, int n_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(l.addr + (unsigned)off), "l"(src),
                 "r"(n_bytes)
                 : "memory");
}

HK_DEVICE void hk_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N> HK_DEVICE void hk_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* ---- tensor cores: ldmatrix + mma.sync m16n8k16 bf16 -> fp32 ------------------- */
struct hk_mma_acc_t {
    float v[4];
    __device__ __forceinline__ float &operator[](int i) { return v[i]; }
    __device__ __forceinline__ float operator[](int i) const { return v[i]; }
};

HK_DEVICE hk_mma_acc_t hk_mma_acc_zero(void)
{
    hk_mma_acc_t z = {{0.0f, 0.0f, 0.0f, 0.0f}};
    return z;
}

HK_DEVICE hk_u32x4 hk_lds_load_mma_x4(hk_lds_t l, int off)
{
    hk_u32x4 r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3])
                 : "r"(l.addr + (unsigned)off));
    return r;
}

HK_DEVICE hk_u32x4 hk_lds_load_mma_x4_trans(hk_lds_t l, int off)
{
    hk_u32x4 r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3])
                 : "r"(l.addr + (unsigned)off));
    return r;
}

HK_DEVICE void hk_mma_16x8x16(hk_u32x4 a, unsigned b0, unsigned b1, hk_mma_acc_t &acc)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(acc.v[0]), "+f"(acc.v[1]), "+f"(acc.v[2]), "+f"(acc.v[3])
                 : "r"(a.v[0]), "r"(a.v[1]), "r"(a.v[2]), "r"(a.v[3]), "r"(b0), "r"(b1));
}


/* ---- tensor cores: wgmma (sm_90a), one warpgroup of 4 warps -------------------------
 * hk_wgmma_64xNx16(d, desc_a, desc_b, scale_d): d(64 x N fp32) = A(64 x 16) * B(16 x N) + (scale_d ? d : 0),
 * A and B bf16 in shared memory, both K-major (k innermost), described by
 * hk_wgmma_desc.  Asynchronous: hk_wgmma_fence() before the first one (and after
 * the accumulators were touched), hk_wgmma_commit() after a batch,
 * hk_wgmma_wait<N>() before the accumulators or the operands' shared memory
 * are used again.  Shared memory written by ordinary stores or cp.async needs
 * hk_fence_proxy_async() in each writing thread before the barrier.
 * Accumulator layout (warp w of the warpgroup, lane l, g = l / 4, t = l % 4), n8 tile i:
 *   d[4i] = D[16w + g][8i + 2t], d[4i+1] = D[16w + g][8i + 2t + 1],
 *   d[4i+2] = D[16w + g + 8][8i + 2t], d[4i+3] = D[16w + g + 8][8i + 2t + 1]
 *   (PTX ISA, "Register fragments and shared memory matrix layouts: wgmma .m64nNk16").
 */
/* The wgmma wrappers and their accumulators are generated, one line per shape (below),
 * so that the asm statements cannot drift apart.  A lane's accumulator of R = N / 2
 * floats is asm operands %0 .. %R-1: a line gives R as its tens T and ones U (the
 * preprocessor cannot count in decimal), HK_WGMMA_OPS(T, U) lists the operands and
 * HK_WGMMA_F<R>(0) their constraints; the line also numbers the operands after them. */
#define HK_WGMMA_U1(t) "%" #t "0"
#define HK_WGMMA_U2(t) HK_WGMMA_U1(t) ", %" #t "1"
#define HK_WGMMA_U3(t) HK_WGMMA_U2(t) ", %" #t "2"
#define HK_WGMMA_U4(t) HK_WGMMA_U3(t) ", %" #t "3"
#define HK_WGMMA_U5(t) HK_WGMMA_U4(t) ", %" #t "4"
#define HK_WGMMA_U6(t) HK_WGMMA_U5(t) ", %" #t "5"
#define HK_WGMMA_U7(t) HK_WGMMA_U6(t) ", %" #t "6"
#define HK_WGMMA_U8(t) HK_WGMMA_U7(t) ", %" #t "7"
#define HK_WGMMA_U9(t) HK_WGMMA_U8(t) ", %" #t "8"
#define HK_WGMMA_DEC(t) HK_WGMMA_U9(t) ", %" #t "9" /* %t0 .. %t9 */
#define HK_WGMMA_TENS1 HK_WGMMA_DEC()                   /* %0 .. %9 */
#define HK_WGMMA_TENS2 HK_WGMMA_TENS1 ", " HK_WGMMA_DEC(1)
#define HK_WGMMA_TENS3 HK_WGMMA_TENS2 ", " HK_WGMMA_DEC(2)
#define HK_WGMMA_TENS4 HK_WGMMA_TENS3 ", " HK_WGMMA_DEC(3)
#define HK_WGMMA_TENS5 HK_WGMMA_TENS4 ", " HK_WGMMA_DEC(4)
#define HK_WGMMA_TENS6 HK_WGMMA_TENS5 ", " HK_WGMMA_DEC(5)
#define HK_WGMMA_TENS7 HK_WGMMA_TENS6 ", " HK_WGMMA_DEC(6)
#define HK_WGMMA_TENS8 HK_WGMMA_TENS7 ", " HK_WGMMA_DEC(7)
#define HK_WGMMA_TENS9 HK_WGMMA_TENS8 ", " HK_WGMMA_DEC(8)
#define HK_WGMMA_TENS10 HK_WGMMA_TENS9 ", " HK_WGMMA_DEC(9)
#define HK_WGMMA_TENS11 HK_WGMMA_TENS10 ", " HK_WGMMA_DEC(10)
#define HK_WGMMA_TENS12 HK_WGMMA_TENS11 ", " HK_WGMMA_DEC(11)
#define HK_WGMMA_OPS(T, U) HK_WGMMA_TENS##T ", " HK_WGMMA_U##U(T) /* %0 .. %(10T + U - 1) */
#define HK_WGMMA_F8(k)                                                                                     \
    "+f"(d.v[8 * (k)]), "+f"(d.v[8 * (k) + 1]), "+f"(d.v[8 * (k) + 2]), "+f"(d.v[8 * (k) + 3]),          \
        "+f"(d.v[8 * (k) + 4]), "+f"(d.v[8 * (k) + 5]), "+f"(d.v[8 * (k) + 6]), "+f"(d.v[8 * (k) + 7])
#define HK_WGMMA_F16(k) HK_WGMMA_F8(2 * (k)), HK_WGMMA_F8(2 * (k) + 1)
#define HK_WGMMA_F32(k) HK_WGMMA_F16(2 * (k)), HK_WGMMA_F16(2 * (k) + 1)
#define HK_WGMMA_F64(k) HK_WGMMA_F32(2 * (k)), HK_WGMMA_F32(2 * (k) + 1)
#define HK_WGMMA_F128(k) HK_WGMMA_F64(2 * (k)), HK_WGMMA_F64(2 * (k) + 1)
#define HK_WGMMA_ACC_OUT(T, U) HK_WGMMA_F##T##U(0) /* "+f"(d.v[0]) .. "+f"(d.v[10T + U - 1]) */

/* hk_wgmma_accN_t, N = 32, 64, 128, 256: one lane's N / 2 floats. */
#define HK_WGMMA_ACC(N)                                                                                    \
    struct hk_wgmma_acc##N##_t {                                                                           \
        float v[N / 2];                                                                                    \
        __device__ __forceinline__ float &operator[](int i) { return v[i]; }                               \
        __device__ __forceinline__ float operator[](int i) const { return v[i]; }                          \
    };
HK_WGMMA_ACC(32)
HK_WGMMA_ACC(64)
HK_WGMMA_ACC(128)
HK_WGMMA_ACC(256)

/* Shared-memory matrix descriptor: start byte offset `off' (16-byte units), leading
 * and stride byte offsets lbo, sbo (bytes; for a K-major swizzled layout sbo is the
 * distance between 8-row groups and lbo is unused), swizzle: 0 none, 1 128-byte,
 * 2 64-byte, 3 32-byte.  Swizzled tiles must start on a (8 x swizzle-bytes) boundary;
 * a k step inside the swizzle row adds its bytes to `off'. */
HK_DEVICE unsigned long long hk_wgmma_desc(hk_lds_t l, int off, int lbo, int sbo, int swizzle)
{
    const unsigned long long addr = (unsigned long long)(((l.addr + (unsigned)off) & 0x3ffffu) >> 4);
    return addr | ((unsigned long long)((lbo >> 4) & 0x3fff) << 16) | ((unsigned long long)((sbo >> 4) & 0x3fff) << 32)
           | ((unsigned long long)swizzle << 62);
}
// desc moved on by `bytes' (a multiple of 16; the result inside shared
// memory): the start-address field (bits 0-13, address / 16 of an 18-bit
// shared-memory address) cannot carry, so a 32-bit add on the low word does
// it, one instruction instead of hk_wgmma_desc's mask-shift-or chain.
HK_DEVICE unsigned long long hk_wgmma_desc_add(unsigned long long desc, int bytes)
{
    const unsigned lo = (unsigned)desc + ((unsigned)bytes >> 4);
    return (desc & 0xffffffff00000000ull) | lo;
}

HK_DEVICE void hk_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
HK_DEVICE void hk_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> HK_DEVICE void hk_wgmma_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
HK_DEVICE void hk_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* hk_wgmma_64xNx16 and hk_wgmma_64xNx16_tb, one line each: shape N, the name's suffix
 * (empty or _tb) and B's transpose bit, the accumulator's R = N / 2 as tens and ones, then
 * the operand numbers of desc_a, desc_b and scale_d (R, R + 1, R + 2). */
#define HK_WGMMA_SS(N, SUF, TB, T, U, IA, IB, IS)                                                          \
    HK_DEVICE void hk_wgmma_64x##N##x16##SUF(hk_wgmma_acc##N##_t &d, unsigned long long desc_a,          \
                                             unsigned long long desc_b, int scale_d)                      \
    {                                                                                                      \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IS ", 0;\n"                                     \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "                            \
                     "{" HK_WGMMA_OPS(T, U) "}, %" #IA ", %" #IB ", p, 1, 1, 0, " #TB ";\n}\n"              \
                     : HK_WGMMA_ACC_OUT(T, U)                                                              \
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                            \
    }
HK_WGMMA_SS(32, , 0, 1, 6, 16, 17, 18)
HK_WGMMA_SS(64, , 0, 3, 2, 32, 33, 34)
HK_WGMMA_SS(128, , 0, 6, 4, 64, 65, 66)
HK_WGMMA_SS(256, , 0, 12, 8, 128, 129, 130)

/* hk_wgmma_64xNx16_tb (N = 64, 128, 256): the same with B stored MN-major (n innermost,
 * the transpose bit of B set): a GEMM's K x N row-major B.  Tiles of 64 columns
 * (128-byte rows, the 128-byte swizzle: 16-byte chunk c of k-row r at c ^ r % 8), 8 k-rows
 * per 1024-byte atom; desc_b = hk_wgmma_desc(l, off, lbo, sbo, 1) with lbo = bytes between
 * 64-column tiles, sbo = 1024 (between 8-row groups); a k step of 16 adds 16 rows (2048 bytes). */
HK_WGMMA_SS(64, _tb, 1, 3, 2, 32, 33, 34)
HK_WGMMA_SS(128, _tb, 1, 6, 4, 64, 65, 66)
HK_WGMMA_SS(256, _tb, 1, 12, 8, 128, 129, 130)

/* hk_wgmma_64xNx32_F (F = e4m3, e5m2; N = 64, 128, 256): d(64 x N fp32) = A(64 x 32) * B(32 x N) +
 * (scale_d ? d : 0), A and B fp8 codes of format F in shared memory, both K-major (fp8 wgmma has no
 * transpose): with the 128-byte swizzle a row of 128 codes is one 128-byte line, a k step of 32 adds
 * 32 bytes to the descriptors, as a k step of 16 bf16 does.  Accumulator layout as above.
 * (PTX ISA, wgmma.mma_async with .atype/.btype .e4m3/.e5m2: shape m64nNk32.) */
#define HK_WGMMA_SS_F8(N, F, T, U, IA, IB, IS)                                                             \
    HK_DEVICE void hk_wgmma_64x##N##x32_##F(hk_wgmma_acc##N##_t &d, unsigned long long desc_a,           \
                                            unsigned long long desc_b, int scale_d)                       \
    {                                                                                                      \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IS ", 0;\n"                                     \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." #F "." #F " "                        \
                     "{" HK_WGMMA_OPS(T, U) "}, %" #IA ", %" #IB ", p, 1, 1;\n}\n"                          \
                     : HK_WGMMA_ACC_OUT(T, U)                                                              \
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                            \
    }
HK_WGMMA_SS_F8(64, e4m3, 3, 2, 32, 33, 34)
HK_WGMMA_SS_F8(128, e4m3, 6, 4, 64, 65, 66)
HK_WGMMA_SS_F8(256, e4m3, 12, 8, 128, 129, 130)
HK_WGMMA_SS_F8(64, e5m2, 3, 2, 32, 33, 34)
HK_WGMMA_SS_F8(128, e5m2, 6, 4, 64, 65, 66)
HK_WGMMA_SS_F8(256, e5m2, 12, 8, 128, 129, 130)

/* ---- mbarriers and bulk tensor copies (TMA) -------------------------------------------
 * A tensor map (hk_tmap, 128 bytes) describes a 2-D to 4-D bf16 tensor to the copy
 * engine.  It is built on the host, by the runtime, from a kernel argument of type
 * hk_tmap (the manifest says which pointer, dimensions and strides it covers) and reaches
 * the kernel inside the argument struct, which is a __grid_constant__ parameter
 * (HK_KERNARG_QUAL) so that its address is a parameter-space address the copy engine
 * can read.  An mbarrier is 8 bytes of shared memory at a byte offset (8-aligned):
 * it completes a phase when its arrival count and its expected transaction bytes are
 * both met; waiting names the phase's parity (0, 1, 0, ...).
 *   hk_mbar_init(l, off, count)        initialise with `count' arrivals per phase (one thread)
 *   hk_mbar_init_fence()               make initialised mbarriers visible to the copy engine (then a barrier)
 *   hk_mbar_arrive(l, off)             one arrival
 *   hk_mbar_arrive_expect_tx(l, off, bytes)  one arrival, and `bytes' more to come from copies
 *   hk_mbar_wait(l, off, parity)       wait until the phase with that parity has completed
 *   hk_tma_load_2d(l, off, map, x, y, bar_off)  box of `map' at element (x inner, y outer) into
 *                                      shared memory at off (1024-aligned for the 128-byte swizzle);
 *                                      its bytes count against the mbarrier at bar_off; past the
 *                                      matrix the box reads zeros
 *   hk_tma_load_3d(l, off, map, x, y, z, bar_off), hk_tma_load_4d(l, off, map, x, y, z, w, bar_off)
 *                                      the same for maps of rank 3 and 4 (coordinates innermost first)
 *   hk_tma_store_2d(map, l, off, x, y) shared memory at off to the box of `map' at element (x, y), one
 *                                      thread, a bulk group (hk_bulk_commit / hk_bulk_wait_read); the
 *                                      writers of off need hk_fence_proxy_async() and a barrier first;
 *                                      past the matrix nothing is written
 *   hk_tmap_prefetch(map)              fetch the tensor map into the cache ahead of the first copy
 * Clusters (HK_CLUSTER_DIMS): blocks of one cluster reach each other's shared memory.
 *   hk_cluster_rank()                  this block's rank in its cluster
 *   hk_cluster_sync()                  barrier of every thread of the cluster (release / acquire at cluster
 *                                      scope): after mbarrier init, before any block reaches another's, and
 *                                      before exit, so that no block leaves while others may still reach it
 *   hk_mbar_arrive_remote(l, off, cta) one arrival on the mbarrier at off in block `cta' of the cluster
 *   hk_tma_load_2d_multicast(l, off, map, x, y, bar_off, mask)  hk_tma_load_2d into the same offsets
 *                                      (data and mbarrier) of every block of the cluster in `mask' (bit = rank)
 */
struct __align__(64) hk_tmap {
    unsigned long long opaque[16];
};
#define HK_KERNARG_QUAL const __grid_constant__

HK_DEVICE void hk_mbar_init(hk_lds_t l, int off, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(l.addr + (unsigned)off), "r"(count) : "memory");
}
HK_DEVICE void hk_mbar_init_fence(void) { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
HK_DEVICE void hk_mbar_arrive(hk_lds_t l, int off)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(l.addr + (unsigned)off) : "memory");
}
HK_DEVICE void hk_mbar_arrive_expect_tx(hk_lds_t l, int off, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(l.addr + (unsigned)off), "r"(bytes)
                 : "memory");
}
HK_DEVICE void hk_mbar_wait(hk_lds_t l, int off, int parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(l.addr + (unsigned)off), "r"(parity)
                     : "memory");
    } while (!done);
}
HK_DEVICE void hk_tma_load_2d(hk_lds_t l, int off, const hk_tmap *map, int x, int y, int bar_off)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(l.addr + (unsigned)off), "l"((unsigned long long)map), "r"(x), "r"(y),
                 "r"(l.addr + (unsigned)bar_off)
                 : "memory");
}
HK_DEVICE void hk_tma_load_3d(hk_lds_t l, int off, const hk_tmap *map, int x, int y, int z, int bar_off)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(l.addr + (unsigned)off), "l"((unsigned long long)map), "r"(x), "r"(y), "r"(z),
                 "r"(l.addr + (unsigned)bar_off)
                 : "memory");
}
HK_DEVICE void hk_tma_load_4d(hk_lds_t l, int off, const hk_tmap *map, int x, int y, int z, int w, int bar_off)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 ::"r"(l.addr + (unsigned)off), "l"((unsigned long long)map), "r"(x), "r"(y), "r"(z), "r"(w),
                 "r"(l.addr + (unsigned)bar_off)
                 : "memory");
}
HK_DEVICE void hk_tma_store_2d(const hk_tmap *map, hk_lds_t l, int off, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n"
                 ::"l"((unsigned long long)map), "r"(l.addr + (unsigned)off), "r"(x), "r"(y)
                 : "memory");
}
HK_DEVICE int hk_cluster_rank(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return (int)r;
}
HK_DEVICE void hk_cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory"); /* not .aligned: warps may arrive diverged */
}
HK_DEVICE void hk_mbar_arrive_remote(hk_lds_t l, int off, int cta)
{
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n"
                 ::"r"(l.addr + (unsigned)off), "r"(cta)
                 : "memory");
}
HK_DEVICE void hk_tma_load_2d_multicast(hk_lds_t l, int off, const hk_tmap *map, int x, int y, int bar_off,
                                        unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(l.addr + (unsigned)off), "l"((unsigned long long)map), "r"(x), "r"(y),
                 "r"(l.addr + (unsigned)bar_off), "h"(mask)
                 : "memory");
}
HK_DEVICE void hk_tmap_prefetch(const hk_tmap *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)map) : "memory");
}

/* ---- fp32 math and warp exchange (attention softmax) -------------------------- */
HK_DEVICE void hk_global_store_f32(float *p, float v) { *p = v; }

HK_DEVICE float hk_exp2f(float x)
{
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

HK_DEVICE float hk_log2f(float x)
{
    float r;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

HK_DEVICE float hk_maxf(float a, float b) { return fmaxf(a, b); }

/* The soft cap's tanh: the multi-function unit's one op, beside the
 * softmax's exp2 (an exp2 and a reciprocal would double that unit's load). */
HK_DEVICE float hk_tanhf(float x)
{
    float r;
    asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

HK_DEVICE float hk_shfl_xor_f32(float x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
HK_DEVICE unsigned hk_shfl_xor_u32(unsigned x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
HK_DEVICE int hk_shfl_i32(int x, int src) { return __shfl_sync(0xffffffffu, x, src); }
HK_DEVICE bool hk_warp_any(bool p) { return __any_sync(0xffffffffu, p) != 0; }
HK_DEVICE void hk_syncwarp(void) { __syncwarp(); }
HK_DEVICE int hk_uniform_i32(int x) { return x; }

/* ---- device-scope synchronisation through global memory (split-KV merges) ---------- */
HK_DEVICE int hk_global_load_i32(const int *p) { return *p; }
HK_DEVICE hk_u32x4 hk_global_load_b128(const void *p) { return *(const hk_u32x4 *)p; }
HK_DEVICE unsigned hk_atomic_min_u32(unsigned *p, unsigned v) { return atomicMin(p, v); }
#define hk_report_fault(...) ((void)0)

/* ---- fp16 and fp8 (e4m3 caches) -------------------------------------------------------- */
HK_DEVICE unsigned hk_f32x2_to_f16x2(float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* Code c (s eeee mmm) at bits 8..15 of a half becomes fp16 s 0eeee mmm0000000: exponent
 * bias 15 for e4m3's 7, so the value is exactly 2^-8 times the code's, subnormals
 * included; a NaN code (eeee mmm all ones) gets fp16's all-ones exponent. */
HK_DEVICE hk_u32x2 hk_e4m3x4_to_f16x4(unsigned w)
{
    hk_u32x2 r;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const unsigned x = __byte_perm(w, 0u, i ? 0x3424u : 0x1404u); /* codes 2i, 2i+1 at bits 8, 24 */
        r.v[i] = ((x >> 1) & 0x3f803f80u) | (x & 0x80008000u);
    }
    const unsigned nan = ((w & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u; /* bit 7 of a NaN code's byte */
    if (nan) { /* rare: one test per 4 codes */
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const unsigned n = __byte_perm(nan, 0u, i ? 0x3424u : 0x1404u);
            r.v[i] |= n - (n >> 5); /* 0x7c00: the all-ones exponent */
        }
    }
    return r;
}

HK_DEVICE void hk_mma_16x8x16_f16(hk_u32x4 a, unsigned b0, unsigned b1, hk_mma_acc_t &acc)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(acc.v[0]), "+f"(acc.v[1]), "+f"(acc.v[2]), "+f"(acc.v[3])
                 : "r"(a.v[0]), "r"(a.v[1]), "r"(a.v[2]), "r"(a.v[3]), "r"(b0), "r"(b1));
}

/* ---- attention primitives (sm_90a) ---------------------------------------------------
 * wgmma with A from registers (FlashAttention's O += P V: P is the S accumulator
 * rounded to bf16 pairs, which is exactly the A fragment layout) and B from shared
 * memory stored MN-major (n innermost: V as [key][d]), i.e. the transpose bit of B set.
 *   hk_wgmma_rs_64xNx16_tb(d, a, desc_b, scale_d)  (N = 64, 128) d(64 x N fp32) = A(64 x 16 bf16,
 *        registers) * B(16 x N) + (scale_d ? d : 0); warp w of the warpgroup gives rows 16w..16w+15
 *        of A in the mma.sync A layout (hk_u32x4: word 0 = A[g][2t..], 1 = A[g+8][2t..],
 *        2 = A[g][2t+8..], 3 = A[g+8][2t+8..]).  B is MN-major with the 128-byte swizzle:
 *        8 k-rows of 128 bytes (64 n) per 1024-byte atom, 16-byte chunk c of k-row r at
 *        c ^ r % 8; desc_b = hk_wgmma_desc(l, off, lbo, sbo, 1) with lbo = bytes between
 *        64-column (n) atoms and sbo = bytes between 8-row (k) groups.  The A registers must
 *        not be rewritten before a hk_wgmma_wait that covers the instruction (ptxas keeps them).
 *   hk_wgmma_rs_64x64x16(d, a, desc_b, scale_d)  the same with B K-major, as hk_wgmma_64xNx16's B
 *        (the attention backward's S^T = K Q^T with K's rows held in registers).
 *   hk_wgmma_rs_fence_acc64/128/256(d)  compiler-only fence on an accumulator (no instruction):
 *        after hk_wgmma_wait, so that reads of d are not moved above the wait.
 */
/* One line per shape: N, the name's suffix (_tb or empty) and B's transpose bit, R = N / 2 as
 * tens and ones, then the operand numbers of the four A words, desc_b and scale_d (R .. R + 5). */
#define HK_WGMMA_RS(N, SUF, TB, T, U, I0, I1, I2, I3, IB, IS)                                              \
    HK_DEVICE void hk_wgmma_rs_64x##N##x16##SUF(hk_wgmma_acc##N##_t &d, hk_u32x4 a, unsigned long long desc_b, \
                                                int scale_d)                                               \
    {                                                                                                      \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IS ", 0;\n"                                     \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "                            \
                     "{" HK_WGMMA_OPS(T, U) "}, {%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}, %" #IB            \
                     ", p, 1, 1, " #TB ";\n}\n"                                                         \
                     : HK_WGMMA_ACC_OUT(T, U)                                                              \
                     : "r"(a.v[0]), "r"(a.v[1]), "r"(a.v[2]), "r"(a.v[3]), "l"(desc_b), "r"(scale_d));      \
    }
HK_WGMMA_RS(64, _tb, 1, 3, 2, 32, 33, 34, 35, 36, 37)
HK_WGMMA_RS(128, _tb, 1, 6, 4, 64, 65, 66, 67, 68, 69)
HK_WGMMA_RS(64, , 0, 3, 2, 32, 33, 34, 35, 36, 37)

#define HK_WGMMA_FENCE_ACC(N)                                                                              \
    HK_DEVICE void hk_wgmma_rs_fence_acc##N(hk_wgmma_acc##N##_t &d)                                        \
    {                                                                                                      \
        _Pragma("unroll") for (int i = 0; i < N / 2; ++i) asm volatile("" : "+f"(d.v[i])::"memory");       \
    }
HK_WGMMA_FENCE_ACC(64)
HK_WGMMA_FENCE_ACC(128)
HK_WGMMA_FENCE_ACC(256)

/* ---- attention backward (sm_90a) ----------------------------------------------------
 * hk_wgmma_64x64x16_tatb(d, desc_a, desc_b, scale_d): d(64 x 64 fp32) = A(64 x 16) * B(16 x 64) + (scale_d ? d : 0)
 *      with A stored MN-major (m innermost: A^T as [k][m], 128-byte rows of 64 m, the 128-byte
 *      swizzle, 8 k-rows per 1024-byte atom) and B MN-major as in hk_wgmma_64xNx16_tb; both
 *      descriptors hk_wgmma_desc(l, off, lbo, 1024, 1), a k step of 16 adds 2048 bytes.  The
 *      backward's dS^T tile ([key][query], written from a dS^T accumulator) is the A of dQ = dS K.
 * Flags between blocks (device scope): a block publishes data with plain stores or reds, then
 * hk_fence_gpu() in every writing thread, a block barrier and hk_atomic_add_release_gpu by one
 * thread; a reader spins on hk_load_acquire_gpu, then a block barrier, then reads (L2 loads).
 */
#define HK_WGMMA_SS_T(N, SUF, TA, TB, T, U, IA, IB, IS)                                                    \
    HK_DEVICE void hk_wgmma_64x##N##x16##SUF(hk_wgmma_acc##N##_t &d, unsigned long long desc_a,          \
                                             unsigned long long desc_b, int scale_d)                      \
    {                                                                                                      \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IS ", 0;\n"                                     \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "                            \
                     "{" HK_WGMMA_OPS(T, U) "}, %" #IA ", %" #IB ", p, 1, 1, " #TA ", " #TB ";\n}\n"        \
                     : HK_WGMMA_ACC_OUT(T, U)                                                              \
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                            \
    }
HK_WGMMA_SS_T(64, _tatb, 1, 1, 3, 2, 32, 33, 34)

HK_DEVICE void hk_global_store_f32x2(float *p, float a, float b)
{
    asm volatile("st.global.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(a), "f"(b) : "memory");
}
HK_DEVICE float hk_global_load_f32_l2(const float *p)
{
    float a;
    asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(a) : "l"(p) : "memory");
    return a;
}
HK_DEVICE void hk_global_load_f32x2_l2(const float *p, float &a, float &b)
{
    asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];\n" : "=f"(a), "=f"(b) : "l"(p) : "memory");
}
HK_DEVICE void hk_red_add_f32x2(float *p, float a, float b)
{
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(a), "f"(b) : "memory");
}
HK_DEVICE unsigned hk_load_acquire_gpu(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}
HK_DEVICE unsigned hk_atomic_add_release_gpu(unsigned *p, unsigned v)
{
    unsigned old;
    asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
/* the add of hk_atomic_add_release_gpu without the old value (nothing waits for a reply) */
HK_DEVICE void hk_red_add_release_gpu(unsigned *p, unsigned v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
HK_DEVICE void hk_store_relaxed_gpu(unsigned *p, unsigned v)
{
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
HK_DEVICE void hk_fence_gpu(void) { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }
HK_DEVICE void hk_sleep_ns(unsigned n) { asm volatile("nanosleep.u32 %0;\n" ::"r"(n)); }
HK_DEVICE void hk_trap(void) { asm volatile("trap;\n"); }
/* n bytes (a multiple of 16; both addresses 16-byte aligned) of shared memory at off to global g, issued by
 * one thread: a plain copy or an fp32 add into g (cp.async.bulk / cp.reduce.async.bulk, bulk groups).  The
 * shared memory written by ordinary stores needs hk_fence_proxy_async() in each writer first;
 * hk_bulk_wait_read<N>() frees the source, hk_bulk_wait<N>() completes the writes, and
 * hk_fence_proxy_async_global() then orders them before the thread's later ordinary accesses (a flag). */
HK_DEVICE void hk_bulk_store(float *g, hk_lds_t l, int off, int n)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(g), "r"(l.addr + (unsigned)off), "r"(n)
                 : "memory");
}
HK_DEVICE void hk_bulk_reduce_add_f32(float *g, hk_lds_t l, int off, int n)
{
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(g),
                 "r"(l.addr + (unsigned)off), "r"(n)
                 : "memory");
}
HK_DEVICE void hk_bulk_commit(void) { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N> HK_DEVICE void hk_bulk_wait(void) { asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory"); }
template <int N> HK_DEVICE void hk_bulk_wait_read(void)
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
HK_DEVICE void hk_fence_proxy_async_global(void) { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }
/* n bytes (a multiple of 16) of global g to shared memory at off, their bytes counted against the mbarrier at
 * bar_off (hk_mbar_arrive_expect_tx first), issued by one thread. */
HK_DEVICE void hk_bulk_load(hk_lds_t l, int off, const float *g, int n, int bar_off)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     l.addr + (unsigned)off),
                 "l"(g), "r"(n), "r"(l.addr + (unsigned)bar_off)
                 : "memory");
}

#endif /* HK_SM90_H */
