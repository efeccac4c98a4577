m4_divert(-1)                                                   -*- C -*-
# gemm_fp8.sm90.hip.m4 - scaled fp8 GEMM with fp32 accumulation, NVIDIA Hopper
# (sm_90a): the fp8 variant of gemm.sm90.hip.m4 (gen/op_gemm.c picks it for
# the fp8 dtypes, gemm_skeleton_of), with wgmma m64nNk32 on OCP e4m3 / e5m2.
#
#   C[m][n] = sum_k (A[m][k] sa(m, k)) (B[n][k] sb(n, k))     layout nt only
#
# Scales (float, docs/FP8.md), as gemm_fp8.hip.m4:
#   tensor: scale_a[0], scale_b[0];  row: scale_a[m], scale_b[n] (epilogue);
#   block:  scale_a[(k / 128) * M + m], scale_b[(n / 128) * (K / 128) + k / 128]:
#           each k-tile (128 = one block) goes into a second accumulator
#           (wgmma's own accumulation), which is then added to the running
#           one in fp32 times sa * sb (DeepSeek-V3's promotion).
# C is bf16 (RNE) or fp32 (out).
#
# Parameters (hkm_p_*): M, N, K (baked or `any'), dtype (fp8_e4m3|fp8_e5m2),
# scale, out, tile_m (64|128), tile_n (64|128|256; block: 64|128), maxnreg
# (setmaxnreg: producer 40, consumers 232 registers a thread), promote (block:
# serial | overlap: two partial accumulators, k-tile t + 1's wgmma in flight
# while t is scaled into the running one), group_m (m-tiles per group of the
# block order), epilogue (direct: stores from
# registers | tma: C through the idle stage memory and bulk tensor stores of
# 64 x 64 boxes, bf16).  Kernel arguments: A, B, C, lda, ldb, ldc, the
# run-time ones of M, N, K, scale_a, scale_b, for row and block scales
# scale_a_rows, scale_a_cols, scale_b_rows, scale_b_cols, then tmap_a and
# tmap_b (tensor maps of fp8 codes, built by libhkrt from the manifest's
# recipes) and for epilogue tma tmap_c (bf16).  Grid, block order, producer and
# consumer warpgroups, stages and mbarriers as gemm.sm90.hip.m4, with k-tiles
# of 128 codes: the same 128-byte rows and 128-byte swizzle
# (A: [tile_m][128], B: [tile_n][128], k innermost).  A and B go through the
# copy engine when both have 16-byte aligned bases and rows a multiple of 16
# codes apart, else the producer copies (cp.async, or byte loads for
# unaligned rows).  Loads past the matrix read zeros, stores are masked.

hkm_check_one_of([layout], [nt])
hkm_check_one_of([dtype], [fp8_e4m3], [fp8_e5m2])
hkm_check_one_of([scale], [tensor], [row], [block])
hkm_check_one_of([out], [bf16], [f32])
hkm_check_one_of([tile_m], [64], [128])
hkm_check_one_of([tile_n], [64], [128], [256])
hkm_check_one_of([promote], [serial], [alternate], [overlap])
hkm_check_one_of([epilogue], [direct], [tma])
hkm_param([M])hkm_param([N])hkm_param([K])
m4_include([gemm_tma_c.m4])
m4_ifelse(hkm_block_size, m4_eval(128 + 2 * hkm_param([tile_m])), [],
      [hkm_fatal([gemm_fp8.sm90 needs hkm_block_size 128 + 2 tile_m, got ]hkm_block_size)])

# hkm_gemm_scale_mode(): 0 tensor, 1 row, 2 block
m4_define([hkm_gemm_scale_mode], [hkm_if_param([scale], [tensor], [0], [hkm_if_param([scale], [row], [1], [2])])])

hkm_output_begin()m4_dnl
hkm_file_head()m4_ifelse(hkm_param([cluster]), [1], [], [[
#undef HK_KERNEL_CLUSTER
#define HK_KERNEL_CLUSTER HK_CLUSTER_DIMS(]]hkm_param([cluster])[[)
]])[
// ---- configuration -----------------------------------------------------
typedef ]hkm_if_param([out], [f32], [float], [hk_bf16])[ gemm_out_t;
static constexpr bool OUT_F32 = ]hkm_if_param([out], [f32], [true], [false])[;
static constexpr int GEMM_THREADS = ]hkm_block_size[;
static constexpr int TILE_M = ]hkm_param([tile_m])[;     // rows of C per block
static constexpr int TILE_N = ]hkm_param([tile_n])[;     // columns of C per block
static constexpr int TILE_K = ]hkm_tune([tile_k])[;       // k (codes, bytes) per stage: 128-byte rows
static constexpr int SCALE_BLOCK = ]hkm_tune([scale_block])[; // k (and B's n) per block scale
static constexpr int SCALE_MODE = ]hkm_gemm_scale_mode()[;    // 0 tensor, 1 row, 2 block
static constexpr bool MAXNREG = ]hkm_if_true([maxnreg], [true], [false])[;  // setmaxnreg: producer PROD_REGS, consumers CONS_REGS
static constexpr int PROD_REGS = 40, CONS_REGS = 232;
static constexpr bool OVERLAP = ]hkm_if_param([promote], [overlap], [true], [false])[;  // block scales: two partial accumulators
static constexpr bool ALTERNATE = ]hkm_if_param([promote], [alternate], [true], [false])[; // block scales: the consumers issue in turn
static constexpr bool EPI_TMA = ]hkm_if_param([epilogue], [tma], [true], [false])[;    // C through shared memory and bulk tensor stores
static constexpr bool PERSISTENT = ]hkm_if_true([persistent], [true], [false])[;
static constexpr int CLUSTER = ]hkm_param([cluster])[; // blocks per cluster: m-tiles sharing B (TMA multicast)
static constexpr int GROUP_M = ]hkm_param([group_m])[; // m-tiles per block-renumbering group
static constexpr int COPY_THREADS = 128; // the producer warpgroup
static constexpr int CONSUMERS = TILE_M / 64;
static constexpr int CONSUMER_WARPS = 4 * CONSUMERS;
static_assert(GEMM_THREADS == COPY_THREADS + 32 * CONSUMER_WARPS, "a producer and tile_m / 64 consumer warpgroups");
static_assert(TILE_K == 128 && TILE_K == SCALE_BLOCK, "a k-tile is one 128-byte row, one block scale's k");
static_assert(SCALE_MODE != 2 || (TILE_N <= SCALE_BLOCK && SCALE_BLOCK % TILE_N == 0),
              "block scales: a tile's columns inside one 128-column block of B");
static constexpr int LDS_A_BYTES = TILE_M * TILE_K;
static constexpr int LDS_B_BYTES = TILE_N * TILE_K;
static constexpr int LDS_STAGE_BYTES = LDS_A_BYTES + LDS_B_BYTES;
// dynamic shared memory, the plan's dynamic_lds bytes (gen/op_gemm.c:
// stages x stage bytes + BAR_BYTES of mbarriers + the alignment slack)
static constexpr int DYNAMIC_LDS = ]hkm_dynamic_lds[;
static constexpr int BAR_BYTES = ]hkm_tune([bar_bytes])[;
static constexpr int STAGES = ]hkm_tune([stages])[;
static_assert(STAGES * LDS_STAGE_BYTES + ]hkm_tune([c_stage_bytes])[ + BAR_BYTES + HK_LDS_DYNAMIC_SLACK == DYNAMIC_LDS,
              "dynamic_lds must hold whole stages (gen/op_gemm.c gemm_plan_wgmma)");
static_assert(STAGES >= 2 && 2 * STAGES * 8 <= BAR_BYTES, "stages and their mbarriers");
static constexpr int C_OFF = STAGES * LDS_STAGE_BYTES; // persistent epilogue tma: C's staging
static constexpr int BAR_OFF = C_OFF + ]hkm_tune([c_stage_bytes])[;
// mbarriers of stage s: `full' (its k-tile has landed), `empty' (consumers are done with it)
HK_DEVICE int full_bar(int s) { return BAR_OFF + 8 * s; }
HK_DEVICE int empty_bar(int s) { return BAR_OFF + 8 * (STAGES + s); }
// 16-byte chunks per producer thread and stage (the producer's copy path)
static constexpr int A_CHUNKS = TILE_M * TILE_K / 16 / COPY_THREADS;
static constexpr int B_CHUNKS = TILE_N * TILE_K / 16 / COPY_THREADS;
static_assert(TILE_M * TILE_K % (16 * COPY_THREADS) == 0 && TILE_N * TILE_K % (16 * COPY_THREADS) == 0,
              "tiles must split into 16-byte chunks evenly");
static_assert(!MAXNREG || COPY_THREADS * PROD_REGS + 32 * CONSUMER_WARPS * CONS_REGS <=
                              GEMM_THREADS * (65536 / GEMM_THREADS / 8 * 8),
              "setmaxnreg budget: what the launch gave the block (168 a thread at 384)");
static_assert(!OVERLAP || (SCALE_MODE == 2 && MAXNREG), "promote overlap: block scales, maxnreg");
static_assert(!ALTERNATE || (SCALE_MODE == 2 && CONSUMERS == 2), "promote alternate: block scales, two consumers");
static constexpr int C_STAGE_BYTES = ]hkm_tune([c_stage_bytes])[;
static_assert(C_STAGE_BYTES == (PERSISTENT && EPI_TMA ? TILE_M * (TILE_N < 128 ? TILE_N : 128) * 2 : 0),
              "persistent epilogue tma: a staging of 64 x min(tile_n, 128) bf16 per consumer");
static_assert(!EPI_TMA || !OUT_F32, "epilogue tma: bf16");
// the producer's copy loops: rolled within the 40 registers of maxnreg
static constexpr int COPY_UNROLL = MAXNREG ? 1 : 16;

// Byte offset of 16-byte chunk c of row r in a tile of 128-byte rows (the 128-byte swizzle).
HK_DEVICE int swz(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }
]hkm_gemm_tma_c()[

// 16 codes at src (n_valid of them inside the matrix, <= 0: none) into 16
// bytes of shared memory at off; `base' is any valid address of the same matrix.
HK_DEVICE void gemm_copy_chunk(hk_lds_t lds, int off, const hk_fp8 *src, const hk_fp8 *base, int n_valid, bool vec)
{
    if (vec) {
        const int bytes = n_valid >= 16 ? 16 : n_valid > 0 ? n_valid : 0;
        hk_async_load_b128(lds, off, bytes > 0 ? (const void *)src : (const void *)base, bytes);
    } else {
        hk_lds_store_b128(lds, off, hk_global_load_u8x16(src, n_valid, false));
    }
}

// ---- global -> shared by the producer's threads (when the copy engine cannot) ----
HK_DEVICE void gemm_copy_stage(hk_lds_t lds, int a_off, const hk_fp8 *A, const hk_fp8 *B, int lda, int ldb, int M,
                               int N, int K, int block_m, int block_n, int k0, bool vec_a, bool vec_b)
{
    const int b_off = a_off + LDS_A_BYTES;
    // 16 consecutive k of one row per chunk
#pragma unroll(COPY_UNROLL)
    for (int j = 0; j < A_CHUNKS; ++j) {
        const int v = hk_thread_id() + COPY_THREADS * j;
        const int r = v / (TILE_K / 16), c = v % (TILE_K / 16);
        const int m = block_m + r, k = k0 + c * 16;
        gemm_copy_chunk(lds, a_off + swz(r, c), A + (long)m * lda + k, A, m < M ? K - k : 0, vec_a);
    }
#pragma unroll(COPY_UNROLL)
    for (int j = 0; j < B_CHUNKS; ++j) {
        const int v = hk_thread_id() + COPY_THREADS * j;
        const int r = v / (TILE_K / 16), c = v % (TILE_K / 16);
        const int n = block_n + r, k = k0 + c * 16;
        gemm_copy_chunk(lds, b_off + swz(r, c), B + (long)n * ldb + k, B, n < N ? K - k : 0, vec_b);
    }
}

// ---- global -> shared by the copy engine: one thread, the stage's bytes on `full' ----
// With clusters, A is the block's own and its 1 / CLUSTER of B goes to every
// block of the cluster (the stage's bytes still all land on each's `full').
HK_DEVICE void gemm_tma_stage(hk_lds_t lds, int a_off, const hk_tmap *ta, const hk_tmap *tb, int block_m,
                              int block_n, int k0, int bar, int rank)
{
    hk_mbar_arrive_expect_tx(lds, bar, LDS_STAGE_BYTES);
    hk_tma_load_2d(lds, a_off, ta, k0, block_m, bar);
    if (CLUSTER == 1) {
        hk_tma_load_2d(lds, a_off + LDS_A_BYTES, tb, k0, block_n, bar);
    } else {
        constexpr int PART = TILE_N / CLUSTER;
        hk_tma_load_2d_multicast(lds, a_off + LDS_A_BYTES + rank * PART * TILE_K, tb, k0, block_n + rank * PART, bar,
                                 (unsigned short)((1u << CLUSTER) - 1));
    }
}

// C[m][n], C[m][n+1] = lo, hi (masked to M x N), one 4-byte (bf16) or
// 8-byte (f32, two 4-byte) store when allowed
HK_DEVICE void gemm_store_pair(gemm_out_t *C, int ldc, int m, int n, int M, int N, bool vec_c, float lo, float hi)
{
    if (m >= M)
        return;
    gemm_out_t *p = C + (long)m * ldc + n;
    if (OUT_F32) {
        if (n < N)
            hk_global_store_f32((float *)p, lo);
        if (n + 1 < N)
            hk_global_store_f32((float *)p + 1, hi);
    } else if (vec_c && n + 1 < N) {
        hk_global_store_b32(p, hk_f32x2_to_bf16x2(lo, hi));
    } else {
        if (n < N)
            hk_global_store_bf16((hk_bf16 *)p, hk_f32_to_bf16(lo));
        if (n + 1 < N)
            hk_global_store_bf16((hk_bf16 *)p + 1, hk_f32_to_bf16(hi));
    }
}

// ---- one stage x wgmma (consumer c): acc (+)= A rows 64c.. x B over TILE_K ---------
// Descriptors: swizzle mode 1 (128-byte), 1024 bytes between 8-row groups; a
// k step of 32 codes adds 32 bytes.  ACCUMULATE false: the stage's first
// wgmma overwrites acc (block scales' partial accumulator).  Committed, not
// waited for.
typedef hk_wgmma_acc]hkm_param([tile_n])[_t gemm_acc_t;
template <bool ACCUMULATE>
HK_DEVICE void gemm_wgmma_stage(hk_lds_t lds, int a_off, int c, gemm_acc_t &acc)
{
    const int b_off = a_off + LDS_A_BYTES;
    hk_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TILE_K; kk += 32) {
        const unsigned long long da = hk_wgmma_desc(lds, a_off + c * 64 * 128 + kk, 16, 1024, 1);
        const unsigned long long db = hk_wgmma_desc(lds, b_off + kk, 16, 1024, 1);
        hk_wgmma_64x]hkm_param([tile_n])[x32_]hkm_if_param([dtype], [fp8_e5m2], [e5m2], [e4m3])[(acc, da, db, ACCUMULATE || kk > 0);
    }
    hk_wgmma_commit();
}

// a compiler fence on a block-scale partial accumulator (no instruction)
HK_DEVICE void gemm_fence_acc(gemm_acc_t &part)
{
]hkm_if_param([scale], [block], [[    hk_wgmma_rs_fence_acc]]hkm_param([tile_n])[[(part);
]], [[    (void)part;
]])[}

// ---- block scales: the block's k-tile gt into part (its wgmma group
// committed, not waited for), and part scaled into acc by s0 (row m_lo) and
// s1 (row m_lo + 8) once its group is complete
HK_DEVICE void gemm_part_issue(hk_lds_t lds, int gt, int c, gemm_acc_t &part)
{
    const int s = gt % STAGES;
    hk_mbar_wait(lds, full_bar(s), (gt / STAGES) & 1);
    gemm_wgmma_stage<false>(lds, s * LDS_STAGE_BYTES, c, part);
}
HK_DEVICE void gemm_part_promote(gemm_acc_t &acc, gemm_acc_t &part, float s0, float s1)
{
    gemm_fence_acc(part); // part's reads stay below the wait
#pragma unroll
    for (int i = 0; i < TILE_N / 8; ++i) {
        acc[4 * i] += part[4 * i] * s0;
        acc[4 * i + 1] += part[4 * i + 1] * s0;
        acc[4 * i + 2] += part[4 * i + 2] * s1;
        acc[4 * i + 3] += part[4 * i + 3] * s1;
    }
}

// block renumbering: runs of GROUP_M m-tiles sweep the n-tiles together;
// tile id u at rows block_m.., columns block_n..
// (units_m: m-units of CLUSTER m-tiles, the block's `rank' among them)
HK_DEVICE void gemm_tile_of(int u, int units_m, int tiles_n, int rank, int &block_m, int &block_n)
{
    const int group = u / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_m = units_m - first_m < GROUP_M ? units_m - first_m : GROUP_M;
    block_m = ((first_m + (u % (GROUP_M * tiles_n)) % group_m) * CLUSTER + rank) * TILE_M;
    block_n = ((u % (GROUP_M * tiles_n)) / group_m) * TILE_N;
}

// k-tile gt's stage goes back to the producer(s): of this block, and with
// clusters of every block (their copies write into it)
HK_DEVICE void gemm_release(hk_lds_t lds, int gt, int lane, int rank)
{
    if (lane == 0) {
        hk_mbar_arrive(lds, empty_bar(gt % STAGES));
#pragma unroll
        for (int r = 1; r < CLUSTER; ++r)
            hk_mbar_arrive_remote(lds, empty_bar(gt % STAGES), (rank + r) % CLUSTER);
    }
}

// ---- kernel ------------------------------------------------------------------
// Persistent: min(tiles, multiprocessors) blocks, block b taking tiles b,
// b + gridDim, ...; the stage ring runs on across them (k-tile number g of
// the block: stage g % STAGES, phase g / STAGES), so that the producer fills
// the next tile's stages while the consumers store this one's C.
]hkm_if_true([maxnreg], [[// One block per multiprocessor, said to ptxas: without a register count
// known at entry it may ignore setmaxnreg (C7508; the 128 x 64 block-scale
// kernel did until 2026-12-04).
#undef HK_BLOCKS_PER_SM
#define HK_BLOCKS_PER_SM 1
]])[]hkm_kernel_begin()[
    const hk_fp8 *A = hk_a.A;
    const hk_fp8 *B = hk_a.B;
    gemm_out_t *C = hk_a.C;
    const int lda = hk_a.lda, ldb = hk_a.ldb, ldc = hk_a.ldc;
    const float *scale_a = hk_a.scale_a, *scale_b = hk_a.scale_b;

    HK_LDS_DECLARE_DYNAMIC();

    // units: CLUSTER m-tiles at one n-tile (a cluster's); the grid is
    // one-dimensional with clusters or persistent blocks
    const int tiles_n = (N + TILE_N - 1) / TILE_N;
    const int units_m = ((M + TILE_M - 1) / TILE_M + CLUSTER - 1) / CLUSTER;
    const int rank = CLUSTER == 1 ? 0 : hk_cluster_rank();
    const bool linear = PERSISTENT || CLUSTER > 1;
    const int first = linear ? hk_block_id_x() / CLUSTER : hk_block_id_y() * tiles_n + hk_block_id_x();
    const int step = PERSISTENT ? hk_grid_dim_x() / CLUSTER : 1;
    const int last = PERSISTENT ? units_m * tiles_n : first + 1; // < 2^31 (a launch rule)

    const int wave = hk_wave_id();
    const int lane = hk_lane_id();
    const int k_tiles = (K + TILE_K - 1) / TILE_K;

    // 16-byte copies need 16-code rows and 16-byte aligned bases; the copy
    // engine takes both matrices when both qualify (the runtime built their
    // tensor maps under the same conditions), else the producer copies
    const bool vec_a = (lda % 16 == 0) && ((unsigned long)A % 16 == 0);
    const bool vec_b = (ldb % 16 == 0) && ((unsigned long)B % 16 == 0);
    const bool use_tma = vec_a && vec_b;
    const bool vec_c = (ldc % 2 == 0) && ((unsigned long)C % 4 == 0);
    // epilogue tma where the runtime built tmap_c (the same conditions: rows a
    // multiple of 16 bytes apart, a 16-byte aligned base)
    const bool tma_c = EPI_TMA && ldc % 8 == 0 && (unsigned long)C % 16 == 0;

    if (hk_thread_id() == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hk_mbar_init(hk_lds, full_bar(s), use_tma ? 1 : COPY_THREADS);
            hk_mbar_init(hk_lds, empty_bar(s), CONSUMER_WARPS * CLUSTER);
        }
        hk_mbar_init_fence();
    }
    if (CLUSTER == 1)
        hk_barrier();
    else
        hk_cluster_sync(); // every block's mbarriers are ready before any block reaches them

    if (wave < 4) {
        // producer: the block's k-tile g into stage g % STAGES, once the
        // consumers have released that stage's previous k-tile (g - STAGES)
        if (MAXNREG)
            hk_regs_shrink<PROD_REGS>();
        if (use_tma && hk_thread_id() != 0) {
            if (CLUSTER > 1)
                hk_cluster_sync(); // the cluster's exit barrier (below)
            return;
        }
        if (use_tma) {
            hk_tmap_prefetch(&hk_a.tmap_a);
            hk_tmap_prefetch(&hk_a.tmap_b);
        }
        int g = 0;
        for (int u = first; u < last; u += step) {
            int block_m, block_n;
            gemm_tile_of(u, units_m, tiles_n, rank, block_m, block_n);
            for (int t = 0; t < k_tiles; ++t, ++g) {
                const int s = g % STAGES;
                if (g >= STAGES)
                    hk_mbar_wait(hk_lds, empty_bar(s), (g / STAGES + 1) & 1);
                if (use_tma) {
                    gemm_tma_stage(hk_lds, s * LDS_STAGE_BYTES, &hk_a.tmap_a, &hk_a.tmap_b, block_m, block_n,
                                   t * TILE_K, full_bar(s), rank);
                } else {
                    gemm_copy_stage(hk_lds, s * LDS_STAGE_BYTES, A, B, lda, ldb, M, N, K, block_m, block_n,
                                    t * TILE_K, vec_a, vec_b);
                    hk_async_commit();
                    hk_async_wait<0>();
                    hk_fence_proxy_async(); // written by this thread (generic proxy), read by wgmma (async proxy)
                    hk_mbar_arrive(hk_lds, full_bar(s));
                }
            }
        }
        if (CLUSTER > 1)
            hk_cluster_sync(); // the cluster's exit barrier (below)
        return;
    }

    // consumer c: rows 64 c .. 64 c + 63 of the block's tile; this lane's
    // rows m_lo and m_lo + 8 (the accumulator layout, hk_sm90.h)
    if (MAXNREG)
        hk_regs_grow<CONS_REGS>();
    const int c = wave / 4 - 1;
    const bool leader = hk_thread_id() % 128 == 0; // issues consumer c's bulk stores
    int g = 0;
    for (int u = first; u < last; u += step, g += k_tiles) {
    int block_m, block_n;
    gemm_tile_of(u, units_m, tiles_n, rank, block_m, block_n);
    const int m_lo = block_m + c * 64 + (wave % 4) * 16 + (lane >> 2);
    gemm_acc_t acc;
#pragma unroll
    for (int i = 0; i < TILE_N / 2; ++i)
        acc[i] = 0.0f;
    if (SCALE_MODE == 2) {
        // block scales: k-tile t into part (wgmma), then acc += part * sa * sb;
        // rows past M read row M - 1's scales (their stores are masked)
        const long kb_n = K / SCALE_BLOCK;
        const float *sb_t = scale_b + (long)(block_n / SCALE_BLOCK) * kb_n;
        const int r0 = m_lo < M ? m_lo : M - 1, r1 = m_lo + 8 < M ? m_lo + 8 : M - 1;
        // the scales of k-tile t
        auto scales_of = [&](int t, float &s0, float &s1) {
            const float s_b = hk_global_load_f32(sb_t + t);
            s0 = hk_global_load_f32(scale_a + (long)t * M + r0) * s_b;
            s1 = hk_global_load_f32(scale_a + (long)t * M + r1) * s_b;
        };
        // k-tile t's stage goes back to the producer (its wgmma group is complete)
        auto release = [&](int t) { gemm_release(hk_lds, g + t, lane, rank); };
        if (OVERLAP) {
            // k-tile t + 1's wgmma issued before t's group is waited for and
            // promoted: part0 and part1 swap roles, in straight-line pairs (no
            // branch around a product that another's registers wait on); the
            // scales loaded two k-tiles ahead (a0, a1: k-tile t's; b0, b1: t + 1's)
            gemm_acc_t part0, part1;
            float a0, a1, b0, b1;
            auto scales_ahead = [&](int t, float &s0, float &s1) { // k-tile t + 2's (clamped)
                scales_of(t + 2 < k_tiles ? t + 2 : k_tiles - 1, s0, s1);
            };
            scales_of(0, a0, a1);
            scales_of(k_tiles > 1 ? 1 : 0, b0, b1);
            gemm_part_issue(hk_lds, g, c, part0);
            int t = 0;
            for (; t + 2 < k_tiles; t += 2) {
                float c0, c1, d0, d1;
                scales_ahead(t, c0, c1);
                gemm_part_issue(hk_lds, g + t + 1, c, part1);
                hk_wgmma_wait<1>();
                release(t);
                gemm_part_promote(acc, part0, a0, a1);
                scales_ahead(t + 1, d0, d1);
                gemm_part_issue(hk_lds, g + t + 2, c, part0);
                hk_wgmma_wait<1>();
                release(t + 1);
                gemm_part_promote(acc, part1, b0, b1);
                a0 = c0, a1 = c1, b0 = d0, b1 = d1;
            }
            // one or two k-tiles left, part0's in flight
            if (t + 1 < k_tiles) {
                gemm_part_issue(hk_lds, g + t + 1, c, part1);
                hk_wgmma_wait<1>();
                release(t);
                gemm_part_promote(acc, part0, a0, a1);
                hk_wgmma_wait<0>();
                release(t + 1);
                gemm_part_promote(acc, part1, b0, b1);
            } else {
                hk_wgmma_wait<0>();
                release(t);
                gemm_part_promote(acc, part0, a0, a1);
            }
        }
        gemm_acc_t part;
        for (int t = 0; t < (OVERLAP ? 0 : k_tiles); ++t) {
            // the scales first: their loads overlap the wait and the multiply
            float s0, s1;
            scales_of(t, s0, s1);
            const int gt = g + t, s = gt % STAGES;
            hk_mbar_wait(hk_lds, full_bar(s), (gt / STAGES) & 1);
            // alternate: consumer 0 issues after consumer 1 issued the block's
            // previous k-tile, consumer 1 after consumer 0 this one (barriers
            // 4 and 5), so that one's promotion overlaps the other's products
            if (ALTERNATE && c == 0 && gt > 0)
                hk_barrier_part(4, 256);
            if (ALTERNATE && c == 1)
                hk_barrier_part(5, 256);
            gemm_wgmma_stage<false>(hk_lds, s * LDS_STAGE_BYTES, c, part);
            if (ALTERNATE && c == 0)
                hk_barrier_arrive(5, 256);
            if (ALTERNATE && c == 1)
                hk_barrier_arrive(4, 256);
            hk_wgmma_wait<0>();
            release(t);
            gemm_part_promote(acc, part, s0, s1);
        }
    } else {
        for (int t = 0; t < k_tiles; ++t) {
            const int s = (g + t) % STAGES;
            hk_mbar_wait(hk_lds, full_bar(s), ((g + t) / STAGES) & 1);
            gemm_wgmma_stage<true>(hk_lds, s * LDS_STAGE_BYTES, c, acc);
            hk_wgmma_wait<1>();
            // k-tile t-1's wgmma group is complete: its stage goes back to the producer
            if (t > 0)
                gemm_release(hk_lds, g + t - 1, lane, rank);
        }
        hk_wgmma_wait<0>();
        gemm_release(hk_lds, g + k_tiles - 1, lane, rank); // the tile's last stage
        gemm_fence_acc(acc);
    }

    // epilogue: warp w of the warpgroup holds rows 16 (w % 4) + g (+8), n8
    // tile i in acc[4i..4i+3] (g = lane / 4, t = lane % 4: columns 2t, 2t+1);
    // tensor and row scales applied here: in place before any store (row
    // scales' loads all in flight) where the registers allow (maxnreg), else
    // as each pair is stored
    const float s_t = SCALE_MODE == 0 ? hk_global_load_f32(scale_a) * hk_global_load_f32(scale_b) : 1.0f;
    float s_m[2] = {s_t, s_t};
    if (SCALE_MODE == 1) {
        s_m[0] = m_lo < M ? hk_global_load_f32(scale_a + m_lo) : 0.0f;
        s_m[1] = m_lo + 8 < M ? hk_global_load_f32(scale_a + m_lo + 8) : 0.0f;
    }
    // the scales of columns n, n + 1 (row scales of B)
    auto col_scale = [&](int n, float &s_lo, float &s_hi) {
        s_lo = s_hi = 1.0f;
        if (SCALE_MODE == 1) {
            s_lo = n < N ? hk_global_load_f32(scale_b + n) : 0.0f;
            s_hi = n + 1 < N ? hk_global_load_f32(scale_b + n + 1) : 0.0f;
        }
    };
    constexpr bool SCALE_FIRST = SCALE_MODE == 0 || (SCALE_MODE == 1 && MAXNREG);
    if (SCALE_FIRST) {
#pragma unroll
        for (int i = 0; i < TILE_N / 8; ++i) {
            float s_lo, s_hi;
            col_scale(block_n + i * 8 + (lane & 3) * 2, s_lo, s_hi);
            acc[4 * i] *= s_m[0] * s_lo;
            acc[4 * i + 1] *= s_m[0] * s_hi;
            acc[4 * i + 2] *= s_m[1] * s_lo;
            acc[4 * i + 3] *= s_m[1] * s_hi;
        }
    }
    if (tma_c) {
        gemm_c_tma(hk_lds, &hk_a.]hkm_if_param([epilogue], [tma], [tmap_c], [tmap_a])[, c, block_m, block_n,
                   [&](int i, int h, float &lo, float &hi) {
                       float s_lo = 1.0f, s_hi = 1.0f;
                       if (!SCALE_FIRST && SCALE_MODE == 1) {
                           col_scale(block_n + i * 8 + (lane & 3) * 2, s_lo, s_hi);
                           s_lo *= s_m[h];
                           s_hi *= s_m[h];
                       }
                       lo = acc[4 * i + 2 * h] * s_lo;
                       hi = acc[4 * i + 2 * h + 1] * s_hi;
                   });
    } else {
#pragma unroll
        for (int i = 0; i < TILE_N / 8; ++i) {
            const int n = block_n + i * 8 + (lane & 3) * 2;
            float s_lo = 1.0f, s_hi = 1.0f;
            if (!SCALE_FIRST && SCALE_MODE == 1)
                col_scale(n, s_lo, s_hi);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float f = !SCALE_FIRST && SCALE_MODE == 1 ? s_m[h] : 1.0f;
                gemm_store_pair(C, ldc, m_lo + h * 8, n, M, N, vec_c, acc[4 * i + 2 * h] * (f * s_lo),
                                acc[4 * i + 2 * h + 1] * (f * s_hi));
            }
        }
    }
    } // tiles
    if (ALTERNATE && c == 0)
        hk_barrier_part(4, 256); // consumer 1's last arrival
    if (tma_c && leader)
        hk_bulk_wait<0>(); // C written (and its source read) before the block leaves
    if (CLUSTER > 1)
        hk_cluster_sync(); // no block leaves while another may still reach its shared memory
}
]hkm_output_end()
