m4_divert(-1)                                                   -*- C -*-
# gemm.sm90.hip.m4 - bf16 GEMM with fp32 accumulation and bf16 output (RNE),
# NVIDIA Hopper (sm_90a) version of gemm.hip.m4: the same parameters, kernel
# arguments, grid and block.
#
#   C[M][N] = A[M][K] * op(B)     layout nt: op(B) = B^T, B is N x K row-major
#                                 layout nn: op(B) = B,   B is K x N row-major
#
# Parameters (hkm_p_*): M, N, K (baked or `any'), layout (nt|nn), tile_m and
# tile_n (64|128).  Kernel arguments (hkm_kernarg_struct): A, B, C, lda, ldb,
# ldc, then the run-time ones of M, N, K.
#
# Grid: x = cdiv(N, tile_n), y = cdiv(M, tile_m); the kernel renumbers the
# blocks so that groups of GROUP_M consecutive m-tiles run together (A and B
# tiles are reused from L2).
#
# Layout nt (wgmma, tile_n up to 256): 384 threads = a producer warpgroup and
# two consumer warpgroups, each consumer 64 x hkm_gemm_wg_n of C (tile_m 128:
# they split M; tile_m 64: they split N) in registers.  K advances 64 per
# shared-memory stage (128-byte rows, 128-byte swizzle); STAGES stages in
# dynamic shared memory (op_gemm.c's gemm_dynamic_lds decides how many), each
# with a `full' and an `empty' mbarrier.  The producer fills stage t % STAGES
# with k-tile t once the consumers have released it: one thread issues two
# bulk tensor copies (TMA, tensor maps tmap_a and tmap_b built by the runtime;
# past the matrix they read zeros) when both A and B are 16-byte aligned with
# rows a multiple of 8 elements apart, else all 128 producer threads copy
# with cp.async / element loads.  Consumers wait for `full', multiply (four
# wgmma k16 steps), keep one wgmma group in flight and release the previous
# k-tile's stage.
#
# Layout nn (mma.sync): 256 threads = 8 warps in a 2 (m) x 4 (n) grid; each
# warp owns a (tile_m/2) x (tile_n/4) block of C made of 16x8 mma.sync tiles
# (hk_mma_16x8x16, bf16 -> fp32).  K advances 32 per stage, 3 stages of
# static shared memory, STAGES-1 k-tiles in flight, filled by asynchronous
# copies (hk_async_load_b128, 16 bytes, zero-filled past the matrix); one
# barrier per k-tile.  Operands reach registers with ldmatrix (B: n innermost
# in shared memory, ldmatrix .trans).
#
# Shared-memory rows are XOR-swizzled in 16-byte chunks (the pattern wgmma's
# 128-byte swizzle and the copy engine use; for ldmatrix it puts the 8 rows
# of a phase in distinct banks).  Any M, N, K: loads past the matrix read
# zeros, stores are masked.  16-byte copies need the leading dimension to be a
# multiple of 8 elements and the base pointer 16-byte aligned; otherwise
# element loads into the same stage.

hkm_check_one_of([layout], [nt], [nn])
hkm_check_one_of([tile_m], [64], [128])
hkm_if_param([layout], [nt], [hkm_check_one_of([tile_n], [64], [128], [256])],
             [hkm_check_one_of([tile_n], [64], [128])])
hkm_param([M])hkm_param([N])hkm_param([K])
m4_ifelse(hkm_block_size, hkm_if_param([layout], [nt], [384], [256]), [],
      [hkm_fatal([gemm.sm90 needs hkm_block_size 384 (nt) or 256 (nn), got ]hkm_block_size)])


# hkm_gemm_b_copy()
# ----------------
# Global -> shared for the B k-tile of one stage: the layout decides the shape.
m4_define([hkm_gemm_b_copy], [hkm_if_param([layout], [nt],
[[    // B is N x K: like A, 8 consecutive k of one row n per 16-byte chunk
#pragma unroll
    for (int j = 0; j < B_CHUNKS; ++j) {
        const int v = hk_thread_id() + COPY_THREADS * j;
        const int r = v / (TILE_K / 8);
        const int c = v % (TILE_K / 8);
        const int n = block_n + r;
        const int k = k0 + c * 8;
        const int n_valid = n < N ? K - k : 0;
        gemm_copy_chunk(lds, b_off + swz_k(r, c), B + (long)n * ldb + k, B, n_valid, vec_b);
    }
]],
[[    // B is K x N: 8 consecutive n of one row k per 16-byte chunk, n innermost in shared memory
#pragma unroll
    for (int j = 0; j < B_CHUNKS; ++j) {
        const int v = hk_thread_id() + COPY_THREADS * j;
        const int r = v / (TILE_N / 8);
        const int c = v % (TILE_N / 8);
        const int k = k0 + r;
        const int n = block_n + c * 8;
        const int n_valid = k < K ? N - n : 0;
        gemm_copy_chunk(lds, b_off + swz_n(r, c), B + (long)k * ldb + n, B, n_valid, vec_b);
    }
]])])


# hkm_gemm_b_frag()
# ----------------
# Shared -> registers (layout nn): B operands of n-tiles 2jp and 2jp+1 for
# k-step kk, one ldmatrix .x4 (words 0,1: n-tile 2jp; words 2,3: n-tile 2jp+1).
# Quoted thrice: it is expanded inside hkm_if_wgmma's argument.
m4_define([hkm_gemm_b_frag],
[[[            // [k][n], transposed: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
            const int k = kk + (lane & 7) + (((lane >> 3) & 1) << 3);
            const int c = (wave_n * WAVE_N + jp * 16) / 8 + (lane >> 4);
            b[jp] = hk_lds_load_mma_x4_trans(lds, b_off + swz_n(k, c));
]]])


# hkm_gemm_wg_n
# -------------
# Layout nt runs on wgmma (two warpgroups, each 64 x hkm_gemm_wg_n of C);
# layout nn on mma.sync.  tile_m 128: warpgroups split M; tile_m 64: they split N.
m4_define([hkm_gemm_wg_n],
          m4_ifelse(hkm_param([tile_m]), [128], hkm_param([tile_n]), m4_eval(hkm_param([tile_n]) / 2)))

# hkm_if_wgmma(IF-WGMMA, IF-MMA-SYNC)
# ----------------------------------
m4_define([hkm_if_wgmma], [hkm_if_param([layout], [nt], [$1], [$2])])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int GEMM_THREADS = ]hkm_block_size[;
static constexpr int TILE_M = ]hkm_param([tile_m])[;     // rows of C per block
static constexpr int TILE_N = ]hkm_param([tile_n])[;     // columns of C per block
]hkm_if_wgmma([[static constexpr int TILE_K = 64;      // k per shared-memory stage (128-byte rows; op_gemm.c GEMM_SM90_TILE_K)
static constexpr int COPY_THREADS = 128; // the producer warpgroup
static constexpr int CONSUMER_WARPS = 8; // two consumer warpgroups
static_assert(GEMM_THREADS == COPY_THREADS + 32 * CONSUMER_WARPS, "a producer and two consumer warpgroups");
]], [[static constexpr int TILE_K = 32;      // k per shared-memory stage (64-byte rows)
static constexpr int COPY_THREADS = GEMM_THREADS;
]])[static constexpr int GROUP_M = 8;      // m-tiles per block-renumbering group
static constexpr int WARPS_M = 2, WARPS_N = 4;
static constexpr int WAVE_M = TILE_M / WARPS_M;  // rows of C per warp
static constexpr int WAVE_N = TILE_N / WARPS_N;  // columns of C per warp
static constexpr int FRAG_M = WAVE_M / 16;       // 16x8 mma tiles per warp
static constexpr int FRAG_N = WAVE_N / 8;
// shared memory per stage: A as [TILE_M][TILE_K], B as [TILE_N][TILE_K] (nt)
// or [TILE_K][TILE_N] (nn), bf16, no padding (swizzled)
static constexpr int LDS_A_BYTES = TILE_M * TILE_K * 2;
static constexpr int LDS_B_BYTES = TILE_N * TILE_K * 2;
static constexpr int LDS_STAGE_BYTES = LDS_A_BYTES + LDS_B_BYTES;
]hkm_if_wgmma([[// wgmma: dynamic shared memory, the prologue's dynamic_lds bytes (op_gemm.c's formula:
// stages x stage bytes + BAR_BYTES of mbarriers + the alignment slack)
static constexpr int DYNAMIC_LDS = ]]hkm_dynamic_lds[[;
static constexpr int BAR_BYTES = 256;
static constexpr int STAGES = (DYNAMIC_LDS - HK_LDS_DYNAMIC_SLACK - BAR_BYTES) / LDS_STAGE_BYTES;
static_assert(STAGES * LDS_STAGE_BYTES + BAR_BYTES + HK_LDS_DYNAMIC_SLACK == DYNAMIC_LDS,
              "dynamic_lds must hold whole stages (op_gemm.c gemm_dynamic_lds)");
static_assert(STAGES >= 2 && 2 * STAGES * 8 <= BAR_BYTES, "stages and their mbarriers");
static constexpr int BAR_OFF = STAGES * LDS_STAGE_BYTES;
// mbarriers of stage s: `full' (its k-tile has landed), `empty' (consumers are done with it)
HK_DEVICE int full_bar(int s) { return BAR_OFF + 8 * s; }
HK_DEVICE int empty_bar(int s) { return BAR_OFF + 8 * (STAGES + s); }
]], [[static_assert(]]hkm_dynamic_lds[[ == 0, "mma.sync path: static shared memory only");
static constexpr int STAGES = 3;       // shared-memory stages (STAGES - 1 k-tiles in flight)
static constexpr int STAGES_AHEAD = STAGES - 1;
static_assert(STAGES * LDS_STAGE_BYTES <= 48 * 1024, "static shared memory budget");
]])[// 16-byte chunks per copying thread and stage
static constexpr int A_CHUNKS = TILE_M * TILE_K / 8 / COPY_THREADS;
static constexpr int B_CHUNKS = TILE_N * TILE_K / 8 / COPY_THREADS;
static_assert(TILE_M * TILE_K % (8 * COPY_THREADS) == 0 && TILE_N * TILE_K % (8 * COPY_THREADS) == 0,
              "tiles must split into 16-byte chunks evenly");
static_assert(FRAG_N % 2 == 0, "B operands are loaded two n-tiles at a time");
static_assert(TILE_K == 32 || TILE_K == 64, "swz_k: 64- or 128-byte rows");

// Byte offset of 16-byte chunk c of row r in a [rows][TILE_K] bf16 tile.
// TILE_K 32 (64-byte rows, 4 chunks): rows 2i and 2i+1 share a 128-byte line;
// the chunk is XORed with (r / 2) % 4 (the 64-byte swizzle).  TILE_K 64
// (128-byte rows, 8 chunks): the chunk is XORed with r % 8 (the 128-byte
// swizzle).  Either way 8 consecutive rows at one logical chunk hit 8
// different 16-byte bank groups.
HK_DEVICE int swz_k(int r, int c)
{
    return TILE_K == 64 ? r * 128 + ((c ^ (r & 7)) << 4) : r * (TILE_K * 2) + ((c ^ ((r >> 1) & 3)) << 4);
}
// The same for a [TILE_K][TILE_N] tile (rows of TILE_N bf16): chunk XOR r % 8.
HK_DEVICE int swz_n(int r, int c) { return r * (TILE_N * 2) + ((c ^ (r & 7)) << 4); }

// 8 bf16 at src (n_valid of them inside the matrix, <= 0: none) into 16 bytes
// of shared memory at off; `base' is any valid address of the same matrix.
HK_DEVICE void gemm_copy_chunk(hk_lds_t lds, int off, const hk_bf16 *src, const hk_bf16 *base, int n_valid,
                               bool vec)
{
    if (vec) {
        const int bytes = n_valid >= 8 ? 16 : n_valid > 0 ? 2 * n_valid : 0;
        hk_async_load_b128(lds, off, bytes > 0 ? (const void *)src : (const void *)base, bytes);
    } else {
        const hk_bf16x8 v = hk_global_load_bf16x8(src, n_valid, false);
        hk_u32x4 w;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            w[j] = (unsigned)v[2 * j] | ((unsigned)v[2 * j + 1] << 16);
        hk_lds_store_b128(lds, off, w);
    }
}

// ---- global -> shared: k-tile starting at k0 into the stage at a_off --------------
HK_DEVICE void gemm_copy_stage(hk_lds_t lds, int a_off, const hk_bf16 *A, const hk_bf16 *B, int lda,
                               int ldb, int M, int N, int K, int block_m, int block_n, int k0, bool vec_a,
                               bool vec_b)
{
    const int b_off = a_off + LDS_A_BYTES;
    // A is M x K: 8 consecutive k of one row m per 16-byte chunk
#pragma unroll
    for (int j = 0; j < A_CHUNKS; ++j) {
        const int v = hk_thread_id() + COPY_THREADS * j;
        const int r = v / (TILE_K / 8);
        const int c = v % (TILE_K / 8);
        const int m = block_m + r;
        const int k = k0 + c * 8;
        const int n_valid = m < M ? K - k : 0;
        gemm_copy_chunk(lds, a_off + swz_k(r, c), A + (long)m * lda + k, A, n_valid, vec_a);
    }
]hkm_gemm_b_copy()[}

]hkm_if_wgmma([], [[// ---- one stage x mma.sync: acc += A_tile * B_tile over TILE_K ----------------------
HK_DEVICE void gemm_mma_stage(hk_lds_t lds, int a_off, int wave_m, int wave_n,
                              hk_mma_acc_t (&acc)[FRAG_M][FRAG_N])
{
    const int lane = hk_lane_id();
    const int b_off = a_off + LDS_A_BYTES;
#pragma unroll
    for (int kk = 0; kk < TILE_K; kk += 16) {
        hk_u32x4 a[FRAG_M], b[FRAG_N / 2];
        // A: matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15)
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i) {
            const int m = wave_m * WAVE_M + i * 16 + (lane & 15);
            const int c = kk / 8 + (lane >> 4);
            a[i] = hk_lds_load_mma_x4(lds, a_off + swz_k(m, c));
        }
#pragma unroll
        for (int jp = 0; jp < FRAG_N / 2; ++jp) {
]]hkm_gemm_b_frag()[[        }
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j)
                hk_mma_16x8x16(a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1], acc[i][j]);
    }
}

]])[// C[m][n], C[m][n+1] = lo, hi (masked to M x N), one 4-byte store when allowed
HK_DEVICE void gemm_store_pair(hk_bf16 *C, int ldc, int m, int n, int M, int N, bool vec_c, float lo, float hi)
{
    if (m >= M)
        return;
    hk_bf16 *p = C + (long)m * ldc + n;
    if (vec_c && n + 1 < N) {
        hk_global_store_b32(p, hk_f32x2_to_bf16x2(lo, hi));
    } else {
        if (n < N)
            hk_global_store_bf16(p, hk_f32_to_bf16(lo));
        if (n + 1 < N)
            hk_global_store_bf16(p + 1, hk_f32_to_bf16(hi));
    }
}

]hkm_if_wgmma([[// ---- one stage x wgmma (warpgroup wg): acc += A_tile * B_tile over TILE_K ----------
// Both tiles are K-major, 128-byte rows, chunk c of row r at c ^ r % 8 (what
// swz_k writes and the copy engine's 128-byte swizzle produces; descriptor
// swizzle mode 1, 1024 bytes between 8-row groups).  A k step of 16 adds 32
// bytes.  Committed, not waited for: on return the previous stage's wgmma
// group is complete (wait<1>), this one may still run.
static constexpr int WG_M = 64;                 // rows of C per warpgroup
static constexpr int WG_N = ]]hkm_gemm_wg_n[[;  // columns of C per warpgroup
static constexpr int WG_SWIZZLE = TILE_K == 64 ? 1 : 2;  // descriptor swizzle mode
static constexpr int WG_SBO = TILE_K * 2 * 8;            // bytes between 8-row groups
HK_DEVICE void gemm_wgmma_stage(hk_lds_t lds, int a_off, int wg_row, int wg_col, hk_wgmma_acc]]hkm_gemm_wg_n[[_t &acc)
{
    const int b_off = a_off + LDS_A_BYTES;
    hk_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TILE_K; kk += 16) {
        const unsigned long long da = hk_wgmma_desc(lds, a_off + wg_row * (TILE_K * 2) + kk * 2, 16, WG_SBO, WG_SWIZZLE);
        const unsigned long long db = hk_wgmma_desc(lds, b_off + wg_col * (TILE_K * 2) + kk * 2, 16, WG_SBO, WG_SWIZZLE);
        hk_wgmma_64x]]hkm_gemm_wg_n[[x16(acc, da, db, 1);
    }
    hk_wgmma_commit();
    hk_wgmma_wait<1>();
}

]])[// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    const hk_bf16 *A = hk_a.A;
    const hk_bf16 *B = hk_a.B;
    hk_bf16 *C = hk_a.C;
    const int lda = hk_a.lda, ldb = hk_a.ldb, ldc = hk_a.ldc;

]hkm_if_wgmma([[    HK_LDS_DECLARE_DYNAMIC();
]], [[    HK_LDS_DECLARE(STAGES * LDS_STAGE_BYTES);
]])[
    // block renumbering: runs of GROUP_M m-tiles sweep the n-tiles together
    const int tiles_n = hk_grid_dim_x(), tiles_m = hk_grid_dim_y();
    const int id = hk_block_id_y() * tiles_n + hk_block_id_x();
    const int group = id / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_m = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
    const int tile_mi = first_m + (id % (GROUP_M * tiles_n)) % group_m;
    const int tile_ni = (id % (GROUP_M * tiles_n)) / group_m;
    const int block_m = tile_mi * TILE_M;
    const int block_n = tile_ni * TILE_N;

    const int wave = hk_wave_id();
    const int k_tiles = (K + TILE_K - 1) / TILE_K;

    // 16-byte copies need 8-element rows and 16-byte aligned bases
    const bool vec_a = (lda % 8 == 0) && ((unsigned long)A % 16 == 0);
    const bool vec_b = (ldb % 8 == 0) && ((unsigned long)B % 16 == 0);
    const int lane = hk_lane_id();
    const bool vec_c = (ldc % 2 == 0) && ((unsigned long)C % 4 == 0);

]hkm_if_wgmma([[    // The copy engine takes both matrices when both qualify (the runtime
    // built their tensor maps under the same conditions); otherwise the
    // producer warpgroup copies.
    const bool use_tma = vec_a && vec_b;
    if (hk_thread_id() == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hk_mbar_init(hk_lds, full_bar(s), use_tma ? 1 : COPY_THREADS);
            hk_mbar_init(hk_lds, empty_bar(s), CONSUMER_WARPS);
        }
        hk_mbar_init_fence();
    }
    hk_barrier();

    if (wave < 4) {
        // producer: k-tile t into stage t % STAGES, once the consumers have
        // released that stage's previous k-tile (t - STAGES)
        if (use_tma) {
            if (hk_thread_id() != 0)
                return;
            hk_tmap_prefetch(&hk_a.tmap_a);
            hk_tmap_prefetch(&hk_a.tmap_b);
        }
        for (int t = 0; t < k_tiles; ++t) {
            const int s = t % STAGES;
            if (t >= STAGES)
                hk_mbar_wait(hk_lds, empty_bar(s), (t / STAGES + 1) & 1);
            if (use_tma) {
                hk_mbar_arrive_expect_tx(hk_lds, full_bar(s), LDS_STAGE_BYTES);
                hk_tma_load_2d(hk_lds, s * LDS_STAGE_BYTES, &hk_a.tmap_a, t * TILE_K, block_m, full_bar(s));
                hk_tma_load_2d(hk_lds, s * LDS_STAGE_BYTES + LDS_A_BYTES, &hk_a.tmap_b, t * TILE_K, block_n,
                               full_bar(s));
            } else {
                gemm_copy_stage(hk_lds, s * LDS_STAGE_BYTES, A, B, lda, ldb, M, N, K, block_m, block_n, t * TILE_K,
                                vec_a, vec_b);
                hk_async_commit();
                hk_async_wait<0>();
                hk_fence_proxy_async(); // written by this thread (generic proxy), read by wgmma (async proxy)
                hk_mbar_arrive(hk_lds, full_bar(s));
            }
        }
        return;
    }

    // consumer warpgroup c owns rows wg_row.. (tile_m 128) or columns wg_col.. (tile_m 64)
    const int c = wave / 4 - 1;
    const int wg_row = TILE_M == 128 ? c * WG_M : 0;
    const int wg_col = TILE_M == 128 ? 0 : c * WG_N;
    hk_wgmma_acc]]hkm_gemm_wg_n[[_t acc;
#pragma unroll
    for (int i = 0; i < WG_N / 2; ++i)
        acc[i] = 0.0f;
    for (int t = 0; t < k_tiles; ++t) {
        const int s = t % STAGES;
        hk_mbar_wait(hk_lds, full_bar(s), (t / STAGES) & 1);
        gemm_wgmma_stage(hk_lds, s * LDS_STAGE_BYTES, wg_row, wg_col, acc);
        // k-tile t-1's wgmma group is complete: its stage goes back to the producer
        if (t > 0 && lane == 0)
            hk_mbar_arrive(hk_lds, empty_bar((t - 1) % STAGES));
    }
    hk_wgmma_wait<0>();

    // epilogue: warp w of the warpgroup holds rows 16 (w % 4) + g (+8), n8
    // tile i in acc[4i..4i+3] (g = lane / 4, t = lane % 4: columns 2t, 2t+1);
    // bf16 pairs as 4-byte stores when inside C and 4-byte aligned
#pragma unroll
    for (int i = 0; i < WG_N / 8; ++i) {
        const int n = block_n + wg_col + i * 8 + (lane & 3) * 2;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = block_m + wg_row + (wave % 4) * 16 + (lane >> 2) + h * 8;
            gemm_store_pair(C, ldc, m, n, M, N, vec_c, acc[4 * i + 2 * h], acc[4 * i + 2 * h + 1]);
        }
    }
]], [[    const int wave_m = wave / WARPS_N, wave_n = wave % WARPS_N;
    hk_mma_acc_t acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            acc[i][j] = hk_mma_acc_zero();

    // prologue: k-tiles 0 .. STAGES_AHEAD-1 in flight (one copy group each, empty past K)
#pragma unroll
    for (int s = 0; s < STAGES_AHEAD; ++s) {
        if (s < k_tiles)
            gemm_copy_stage(hk_lds, s * LDS_STAGE_BYTES, A, B, lda, ldb, M, N, K, block_m, block_n, s * TILE_K,
                            vec_a, vec_b);
        hk_async_commit();
    }

    // main loop: wait for k-tile t, one barrier (everyone is done with
    // k-tile t-1, whose stage is refilled with k-tile t+STAGES_AHEAD),
    // multiply k-tile t
    int stage = 0;                 // stage of k-tile t
    int fill = STAGES_AHEAD;       // stage of k-tile t + STAGES_AHEAD
    for (int t = 0; t < k_tiles; ++t) {
        hk_async_wait<STAGES_AHEAD - 1>();
        hk_barrier();
        if (t + STAGES_AHEAD < k_tiles)
            gemm_copy_stage(hk_lds, fill * LDS_STAGE_BYTES, A, B, lda, ldb, M, N, K, block_m, block_n,
                            (t + STAGES_AHEAD) * TILE_K, vec_a, vec_b);
        hk_async_commit();
        gemm_mma_stage(hk_lds, stage * LDS_STAGE_BYTES, wave_m, wave_n, acc);
        stage = stage == STAGES - 1 ? 0 : stage + 1;
        fill = fill == STAGES - 1 ? 0 : fill + 1;
    }
    hk_async_wait<0>();

    // epilogue: lane l (g = l / 4, t = l % 4) holds C[g][2t, 2t+1] and
    // C[g+8][2t, 2t+1] of each 16x8 tile; bf16 pairs as 4-byte stores when
    // the pair is inside C and 4-byte aligned
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int n = block_n + wave_n * WAVE_N + j * 8 + (lane & 3) * 2;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int m = block_m + wave_m * WAVE_M + i * 16 + (lane >> 2) + h * 8;
                gemm_store_pair(C, ldc, m, n, M, N, vec_c, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
            }
        }
]])[}
]hkm_output_end()