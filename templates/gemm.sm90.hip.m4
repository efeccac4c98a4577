m4_divert(-1)                                                   -*- C -*-
# gemm.sm90.hip.m4 - bf16 GEMM with fp32 accumulation and bf16 output (RNE),
# NVIDIA Hopper (sm_90a) version of gemm.hip.m4: the same parameters, kernel
# arguments and grid, plus two tensor maps the runtime builds.
#
#   C[M][N] = A[M][K] * op(B)     layout nt: op(B) = B^T, B is N x K row-major
#                                 layout nn: op(B) = B,   B is K x N row-major
#
# Parameters (hkm_p_*): M, N, K (baked or `any'), layout (nt|nn), tile_m
# (64|128), tile_n (64|128|256).  Kernel arguments (hkm_kernarg_struct): A, B,
# C, lda, ldb, ldc, the run-time ones of M, N, K, then tmap_a and tmap_b
# (tensor maps, built by libhkrt from the manifest's recipes: op_gemm.c).
# Grid: x = cdiv(N, tile_n), y = cdiv(M, tile_m); the kernel renumbers the
# blocks so that groups of GROUP_M consecutive m-tiles run together (A and B
# tiles are reused from L2).
#
# Block: a producer warpgroup and tile_m / 64 consumer warpgroups (384 or
# 256 threads); consumer c owns rows 64 c .. 64 c + 63 and all tile_n
# columns of the block's C tile, in registers (wgmma m64 x tile_n x k16).
# K advances 64 per shared-memory stage; STAGES stages in dynamic shared
# memory (the plan's stages: gen/op_gemm.c gemm_plan_wgmma), each with a `full'
# and an `empty' mbarrier.  The producer fills stage t % STAGES with k-tile t
# once the consumers have released that stage: one thread issues bulk tensor
# copies (TMA; past the matrix they read zeros) when A and B are both 16-byte
# aligned with rows a multiple of 8 elements apart, else all 128 producer
# threads copy with cp.async (element loads for unaligned rows).  Consumers
# wait for `full', multiply (four k16 steps), keep one wgmma group in flight
# and release the previous k-tile's stage.
#
# Shared memory per stage, 128-byte rows with the 128-byte swizzle (16-byte
# chunk c of row r at c ^ r % 8, tiles on 1024-byte boundaries), the layout
# both the copy engine and wgmma use:
#   A: [tile_m][64], k innermost (K-major);
#   B, nt: [tile_n][64], k innermost (K-major);
#   B, nn: tile_n / 64 tiles of [64 k][64 n], n innermost (MN-major: the
#          transpose bit of wgmma's B).
# Any M, N, K: loads past the matrix read zeros, stores are masked.

hkm_check_one_of([layout], [nt], [nn])
hkm_check_one_of([tile_m], [64], [128])
hkm_check_one_of([tile_n], [64], [128], [256])
hkm_check_one_of([epilogue], [direct], [tma])
hkm_param([M])hkm_param([N])hkm_param([K])
m4_include([gemm_tma_c.m4])
m4_ifelse(hkm_block_size, m4_eval(128 + 2 * hkm_param([tile_m])), [],
      [hkm_fatal([gemm.sm90 needs hkm_block_size 128 + 2 tile_m, got ]hkm_block_size)])

# hkm_gemm_if_nt(IF-NT, IF-NN)
# ----------------------------
m4_define([hkm_gemm_if_nt], [hkm_if_param([layout], [nt], [$1], [$2])])

# hkm_gemm_if_sched(IF-SCHED, ELSE)
# ---------------------------------
# IF-SCHED for the work-unit kernels (split_k > 1, persistent or stream_k:
# the plan then holds the tunables split_k, persistent and stream_k,
# gen/op_gemm.c gemm_plan_sched), ELSE for one block per C tile.
m4_define([hkm_gemm_if_sched], [m4_ifdef([hkm_t_split_k], [$1], [$2])])

# hkm_gemm_if_move_regs(IF-MOVED, ELSE)
# -------------------------------------
# IF-MOVED where the plan moves registers from the producer warpgroup to the
# consumers (tunable move_regs: 128 x 256 stream-K, whose partial sums need
# more than the 168 a thread has otherwise; gen/op_gemm.c gemm_plan_sched).
m4_define([hkm_gemm_if_move_regs],
          [m4_ifdef([hkm_t_move_regs], [m4_ifelse(hkm_tune([move_regs]), 1, [$1], [$2])], [$2])])

# hkm_gemm_copy_unroll
# --------------------
# The producer's copy loops: rolled within PROD_REGS where registers move.
m4_define([hkm_gemm_copy_unroll], [hkm_gemm_if_move_regs([[#pragma unroll 1]], [[#pragma unroll]])])

# ---- work units: split-K and persistent blocks (the gemm_sched section) ----
# A unit is k-tiles [kb, ke) of one C tile, units = tiles x SPLIT_K, unit u
# = tile * SPLIT_K + z (the splits of a tile side by side); block b takes
# units b, b + gridDim, ... (one each unless persistent). The producer's and
# consumers' stage counter runs on across units, so the producer fills the
# next unit's stages while the consumers store. SPLIT_K > 1: the consumers
# store their fp32 partial (register order: float4 i of consumer thread t at
# (i * CONSUMER_THREADS + t) * 4 of the unit's TILE_M x TILE_N slot; rows past
# M not stored), fence, and one thread counts the tile; the block that
# completes the count adds the partials in split order 0..SPLIT_K-1 (its own
# from registers: the same value it stored) and stores C. Stream-K: block b
# takes iterations b L .. (b + 1) L - 1 of the flattened tiles x k-tiles (L =
# cdiv(tiles x k-tiles, gridDim)); a tile several blocks share is summed the
# same way in k order, from two partial slots per block (gemm_stream_slot).
# With at most STREAM_LANES m-tiles the blocks form one lane per m-tile
# (block b: lane b % lanes, place b / lanes in it) and each lane shares out
# its own row of tiles: the lanes' blocks at one place then read the same
# panel of B at about the same time, so that B comes from DRAM once.
m4_define([hkm_gemm_sched_config], [[
// ---- work units (split-K, persistent) ----------------------------------------
static constexpr int SPLIT_K = ]hkm_tune([split_k])[;
static constexpr bool PERSISTENT = ]hkm_tune([persistent])[;
static constexpr bool STREAM_K = ]hkm_tune([stream_k])[; // block b: iterations b L .. (b + 1) L - 1 of tiles x k-tiles
static constexpr int STREAM_LANES = ]hkm_tune([stream_lanes])[; // stream-K: up to this many m-tiles, one lane of blocks each
static constexpr int CONSUMER_THREADS = 128 * CONSUMERS;
]hkm_gemm_if_move_regs([[// registers a thread once the producer warpgroup has handed most of its own to the consumers
static constexpr int PROD_REGS = 40, CONS_REGS = 232;
// the pool is what the launch gave the block (168 a thread at 384), not the
// register file: asking for more leaves setmaxnreg.inc waiting for ever
static_assert(COPY_THREADS * PROD_REGS + CONSUMER_THREADS * CONS_REGS <= GEMM_THREADS * (65536 / GEMM_THREADS / 8 * 8),
              "setmaxnreg budget");
]])[static constexpr int SLOT_FLOATS = TILE_M * TILE_N;  // one split's partial tile
static constexpr int FLAG_OFF = BAR_OFF + BAR_BYTES - 16; // "this block sums the tile", after the mbarriers
static_assert(2 * STAGES * 8 <= BAR_BYTES - 16, "the flag word after the mbarriers");

struct gemm_unit {
    int block_m, block_n; // the C tile's first row and column
    long tile;            // its index (workspace slots, counters)
    int z, kb, ke;        // split z: k-tiles kb .. ke - 1
    int parts;            // stream-K: blocks adding to the tile (this one is part z), the first being c_first
    long c_first;
};

// The work of this block: split-K and persistent blocks walk units b,
// b + gridDim, ... (unit = tile * SPLIT_K + split); stream-K blocks walk the
// tiles their iterations it0 .. it1 - 1 of their lane's flattened tiles x
// k-tiles touches (unit u: the lane's u-th tile, tile u * lanes + lane).
struct gemm_walk {
    long units, it0, it1, span; // span: stream-K iterations per block
    int k_tiles;
    int lanes, lane, place;     // stream-K: this block is at place in lane (block place * lanes + lane)
};

// Stream-K: the lanes (one, when there are more m-tiles than STREAM_LANES
// or than blocks) and this block's share of its lane's iterations; blocks
// past the last whole set of lanes (at most lanes - 1) stay idle.
HK_DEVICE gemm_walk gemm_walk_stream(int tiles_m, int tiles_n, int k_tiles)
{
    gemm_walk g;
    g.k_tiles = k_tiles;
    g.lanes = tiles_m <= STREAM_LANES && tiles_m <= (int)hk_grid_dim_x() ? tiles_m : 1;
    g.lane = (int)(hk_block_id_x() % g.lanes);
    g.place = (int)(hk_block_id_x() / g.lanes);
    const int places = (int)(hk_grid_dim_x() / g.lanes);
    const long iters = (long)(tiles_m / g.lanes) * tiles_n * k_tiles;
    g.units = iters / k_tiles;
    g.span = (iters + places - 1) / places;
    g.it0 = g.place < places ? (long)g.place * g.span : iters;
    g.it1 = g.it0 + g.span < iters ? g.it0 + g.span : iters;
    return g;
}
HK_DEVICE long gemm_walk_first(const gemm_walk &g)
{
    return STREAM_K ? g.it0 / g.k_tiles : (long)hk_block_id_x();
}
HK_DEVICE bool gemm_walk_more(const gemm_walk &g, long u)
{
    return STREAM_K ? g.it0 < g.it1 && u * g.k_tiles < g.it1 : u < g.units;
}
HK_DEVICE long gemm_walk_next(long u)
{
    return STREAM_K ? u + 1 : u + hk_grid_dim_x();
}

// unit u: its tile renumbered as the one-block-per-tile kernel does (runs of
// GROUP_M m-tiles sweep the n-tiles), and split z's share of the k-tiles
HK_DEVICE gemm_unit gemm_unit_of(long u, int tiles_m, int tiles_n, int k_tiles)
{
    gemm_unit w;
    w.tile = u / SPLIT_K;
    w.z = (int)(u % SPLIT_K);
    const long span = (long)GROUP_M * tiles_n;
    const int first_m = (int)(w.tile / span) * GROUP_M;
    const int group_m = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
    const int tile_mi = first_m + (int)(w.tile % span) % group_m;
    const int tile_ni = (int)(w.tile % span) / group_m;
    w.block_m = tile_mi * TILE_M;
    w.block_n = tile_ni * TILE_N;
    w.kb = (int)((long)w.z * k_tiles / SPLIT_K);
    w.ke = (int)((long)(w.z + 1) * k_tiles / SPLIT_K);
    w.parts = SPLIT_K;
    w.c_first = 0;
    return w;
}

// Stream-K: the lane's tile u, its share of this block's range, and which
// places of the lane add to the tile (c_first .. c_first + parts - 1, in k
// order; this block is part z). With lanes = tiles_m <= GROUP_M, tile
// u * lanes + lane is m-tile lane, n-tile u (gemm_unit_of).
HK_DEVICE gemm_unit gemm_unit_stream(long u, const gemm_walk &g, int tiles_m, int tiles_n)
{
    static_assert(STREAM_LANES <= GROUP_M, "a lane's tiles share its m-tile");
    gemm_unit w = gemm_unit_of(u * g.lanes + g.lane, tiles_m, tiles_n, g.k_tiles); // SPLIT_K is 1
    const long t0 = u * g.k_tiles, t1 = t0 + g.k_tiles;
    w.kb = (int)((g.it0 > t0 ? g.it0 : t0) - t0);
    w.ke = (int)((g.it1 < t1 ? g.it1 : t1) - t0);
    w.c_first = t0 / g.span;
    w.parts = (int)((t1 - 1) / g.span - w.c_first + 1);
    w.z = (int)(g.place - w.c_first);
    return w;
}

// Stream-K workspace: two slots per block, 0 for the tile its range starts
// in, 1 for the one it ends in (one tile: slot 0); c is a place in this
// block's lane, tile a global tile index (the lane's tile tile / lanes).
HK_DEVICE long gemm_stream_slot(const gemm_walk &g, long c, long tile)
{
    return 2 * (c * g.lanes + g.lane) + (c * g.span / g.k_tiles == tile / g.lanes ? 0 : 1);
}

// Split-K (consumer threads, all of them): stores this split's partial and
// counts it. Returns whether this block completed the tile's count (then it
// sums and stores the tile: gemm_split_store).
HK_DEVICE bool gemm_split_count(hk_lds_t lds, float *ws, int *counters, const gemm_unit &w, long own_slot,
                                bool row_ok, const gemm_acc_t &acc)
{
    const int t = hk_thread_id() - COPY_THREADS;
    float *slot = ws + own_slot * SLOT_FLOATS + (long)t * 4;
    if (row_ok) {
#pragma unroll
        for (int i = 0; i < TILE_N / 8; ++i) {
            hk_u32x4 v;
#pragma unroll
            for (int j = 0; j < 4; ++j)
                v[j] = hk_f32_as_u32(acc[4 * i + j]);
            hk_global_store_b128(slot + i * CONSUMER_THREADS * 4, v);
        }
    }
    hk_fence_device(); // the partial, before the count
    hk_barrier_part(1, CONSUMER_THREADS);
    if (t == 0) {
        int *cnt = counters + w.tile;
        const bool last = hk_atomic_add_i32(cnt, 1) == w.parts - 1;
        if (last)
            hk_global_store_b32(cnt, 0u); // for the next launch
        hk_lds_store_b32(lds, FLAG_OFF, last ? 1u : 0u);
    }
    hk_barrier_part(1, CONSUMER_THREADS);
    const bool last = hk_lds_load_b32(lds, FLAG_OFF) != 0;
    if (last)
        hk_fence_device(); // the other splits' partials, after the count
    return last;
}

// The tile's sum, split 0 first (this block's own split from registers: the
// value it stored), stored as bf16 pairs n8 tile by n8 tile. The others'
// partials are loaded SUM_BATCH n8 tiles at a time, every split's before
// any is added, so that a batch costs one round trip to L2. acc is only
// read (ptxas serialises wgmma whose accumulators are written outside it).
// registers for a batch: 64 floats, 16 where 384 threads hold 128 x 256 (168 registers
// each) or two blocks share an SM (128)
static constexpr int BATCH_F4 = (GEMM_THREADS > 256 && TILE_N == 256) || BLOCKS_PER_SM > 1 ? 4 : 16;
// n8 tiles per batch: the largest power of two within BATCH_F4 / SPLIT_K and TILE_N / 8
HK_DEVICE constexpr int gemm_pow2_floor(int x) { return x >= 2 ? 2 * gemm_pow2_floor(x / 2) : 1; }
static constexpr int SUM_BATCH = gemm_pow2_floor(BATCH_F4 / SPLIT_K < TILE_N / 8 ? BATCH_F4 / SPLIT_K : TILE_N / 8);
static_assert((TILE_N / 8) % SUM_BATCH == 0, "whole batches of n8 tiles");
// stream-K holds a batch's sums and one part's loads: 8 floats per n8 tile
static constexpr int STREAM_F4 = BLOCKS_PER_SM > 1 ? 4 : 8;
static constexpr int STREAM_BATCH = gemm_pow2_floor(STREAM_F4 < TILE_N / 8 ? STREAM_F4 : TILE_N / 8);
HK_DEVICE void gemm_split_store(const float *ws, const gemm_unit &w, int r0, int lane, hk_bf16 *C, int ldc, int M,
                                int N, bool vec_c, const gemm_acc_t &acc)
{
    if (r0 >= M)
        return;
    const float *slots = ws + w.tile * SPLIT_K * SLOT_FLOATS + (long)(hk_thread_id() - COPY_THREADS) * 4;
#pragma unroll
    for (int i0 = 0; i0 < TILE_N / 8; i0 += SUM_BATCH) {
        hk_u32x4 v[SPLIT_K][SUM_BATCH];
#pragma unroll
        for (int z = 0; z < SPLIT_K; ++z)
#pragma unroll
            for (int b = 0; b < SUM_BATCH; ++b)
                if (z != w.z)
                    v[z][b] = hk_global_load_b128_l2(slots + (long)z * SLOT_FLOATS + (i0 + b) * CONSUMER_THREADS * 4);
#pragma unroll
        for (int b = 0; b < SUM_BATCH; ++b) {
            const int i = i0 + b;
            float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int z = 0; z < SPLIT_K; ++z)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    s[j] += z == w.z ? acc[4 * i + j] : hk_u32_as_f32(v[z][b][j]);
            const int n = w.block_n + i * 8 + (lane & 3) * 2;
            gemm_store_pair(C, ldc, r0, n, M, N, vec_c, s[0], s[1]);
            gemm_store_pair(C, ldc, r0 + 8, n, M, N, vec_c, s[2], s[3]);
        }
    }
}

// Stream-K: the same with a run-time number of parts, in k order (place
// c_first first), every part from the workspace (this block's own too: the
// same thread stored it, so acc need not stay live); a part's STREAM_BATCH
// loads go out together.
HK_DEVICE void gemm_stream_store(const float *ws, const gemm_walk &g, const gemm_unit &w, int r0, int lane,
                                 hk_bf16 *C, int ldc, int M, int N, bool vec_c)
{
    if (r0 >= M)
        return;
    const long t = hk_thread_id() - COPY_THREADS;
#pragma unroll
    for (int i0 = 0; i0 < TILE_N / 8; i0 += STREAM_BATCH) {
        float s[STREAM_BATCH][4] = {};
        for (int q = 0; q < w.parts; ++q) {
            hk_u32x4 v[STREAM_BATCH];
            const float *slot = ws + gemm_stream_slot(g, w.c_first + q, w.tile) * SLOT_FLOATS + t * 4;
#pragma unroll
            for (int b = 0; b < STREAM_BATCH; ++b)
                v[b] = hk_global_load_b128_l2(slot + (i0 + b) * CONSUMER_THREADS * 4);
#pragma unroll
            for (int b = 0; b < STREAM_BATCH; ++b)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    s[b][j] += hk_u32_as_f32(v[b][j]);
        }
#pragma unroll
        for (int b = 0; b < STREAM_BATCH; ++b) {
            const int n = w.block_n + (i0 + b) * 8 + (lane & 3) * 2;
            gemm_store_pair(C, ldc, r0, n, M, N, vec_c, s[b][0], s[b][1]);
            gemm_store_pair(C, ldc, r0 + 8, n, M, N, vec_c, s[b][2], s[b][3]);
        }
    }
}
]])

# The kernel body of the work-unit kernels, after the arguments and the
# alignment tests (the one-block-per-tile body's names: vec_a ... use_tma).
m4_define([hkm_gemm_sched_body], [[
    const int tiles_n = (N + TILE_N - 1) / TILE_N, tiles_m = (M + TILE_M - 1) / TILE_M;
    const int wave = hk_wave_id();
    const int lane = hk_lane_id();
    const int k_tiles = (K + TILE_K - 1) / TILE_K;
    gemm_walk walk;
    if (STREAM_K) {
        walk = gemm_walk_stream(tiles_m, tiles_n, k_tiles);
    } else {
        walk.units = (long)tiles_m * tiles_n * SPLIT_K;
        walk.k_tiles = k_tiles;
    }

    if (hk_thread_id() == 0) {
        for (int s = 0; s < STAGES; ++s) {
            hk_mbar_init(hk_lds, full_bar(s), use_tma ? 1 : COPY_THREADS);
            hk_mbar_init(hk_lds, empty_bar(s), CONSUMER_WARPS);
        }
        hk_mbar_init_fence();
    }
    hk_barrier();

    if (wave < 4) {
        // producer: the i-th k-tile it loads goes to stage i % STAGES once the
        // consumers have released that stage's previous k-tile (i - STAGES)
]hkm_gemm_if_move_regs([[        hk_regs_shrink<PROD_REGS>();
]])[        if (use_tma) {
            if (hk_thread_id() != 0)
                return;
            hk_tmap_prefetch(&hk_a.tmap_a);
            hk_tmap_prefetch(&hk_a.tmap_b);
        }
        int it = 0;
        for (long u = gemm_walk_first(walk); gemm_walk_more(walk, u); u = gemm_walk_next(u)) {
            const gemm_unit w = STREAM_K ? gemm_unit_stream(u, walk, tiles_m, tiles_n)
                                         : gemm_unit_of(u, tiles_m, tiles_n, k_tiles);
            for (int t = w.kb; t < w.ke; ++t, ++it) {
                const int s = it % STAGES;
                if (it >= STAGES)
                    hk_mbar_wait(hk_lds, empty_bar(s), (it / STAGES + 1) & 1);
                if (use_tma) {
                    gemm_tma_stage(hk_lds, s * LDS_STAGE_BYTES, &hk_a.tmap_a, &hk_a.tmap_b, w.block_m, w.block_n,
                                   t * TILE_K, full_bar(s));
                } else {
                    gemm_copy_stage(hk_lds, s * LDS_STAGE_BYTES, A, B, lda, ldb, M, N, K, w.block_m, w.block_n,
                                    t * TILE_K, vec_a, vec_b);
                    hk_async_commit();
                    hk_async_wait<0>();
                    hk_fence_proxy_async(); // written by this thread (generic proxy), read by wgmma (async proxy)
                    hk_mbar_arrive(hk_lds, full_bar(s));
                }
            }
        }
        return;
    }

    // consumer c: rows 64 c .. 64 c + 63 of each unit's tile
]hkm_gemm_if_move_regs([[    hk_regs_grow<CONS_REGS>();
]])[    const int c = wave / 4 - 1;
    int it = 0;
    for (long u = gemm_walk_first(walk); gemm_walk_more(walk, u); u = gemm_walk_next(u)) {
        const gemm_unit w = STREAM_K ? gemm_unit_stream(u, walk, tiles_m, tiles_n)
                                     : gemm_unit_of(u, tiles_m, tiles_n, k_tiles);
        gemm_acc_t acc;
#pragma unroll
        for (int i = 0; i < TILE_N / 2; ++i)
            acc[i] = 0.0f;
        for (int t = w.kb; t < w.ke; ++t, ++it) {
            const int s = it % STAGES;
            hk_mbar_wait(hk_lds, full_bar(s), (it / STAGES) & 1);
            gemm_wgmma_stage(hk_lds, s * LDS_STAGE_BYTES, c, acc);
            // the k-tile before's wgmma group is complete: its stage goes back to the producer
            if (t > w.kb && lane == 0)
                hk_mbar_arrive(hk_lds, empty_bar((it - 1) % STAGES));
        }
        hk_wgmma_wait<0>();
        hk_wgmma_rs_fence_acc]hkm_param([tile_n])[(acc); // no read of acc above the wait
        if (w.ke > w.kb && lane == 0)
            hk_mbar_arrive(hk_lds, empty_bar((it - 1) % STAGES));

        // rows of this thread: r0 and r0 + 8 (r0 inside M whenever r0 + 8 is)
        const int r0 = w.block_m + c * 64 + (wave % 4) * 16 + (lane >> 2);
]m4_ifelse(hkm_tune([split_k]), 1, [], [[        const long slot = w.tile * SPLIT_K + w.z;
        if (gemm_split_count(hk_lds, hk_a.workspace, hk_a.counters, w, slot, r0 < M, acc))
            gemm_split_store(hk_a.workspace, w, r0, lane, C, ldc, M, N, vec_c, acc);
        continue;
]])m4_ifelse(hkm_tune([stream_k]), 0, [], [[        // a tile shared with other blocks (alike for the block's threads)
        if (w.parts > 1) {
            if (gemm_split_count(hk_lds, hk_a.workspace, hk_a.counters, w,
                                 gemm_stream_slot(walk, walk.place, w.tile), r0 < M, acc))
                gemm_stream_store(hk_a.workspace, walk, w, r0, lane, C, ldc, M, N, vec_c);
            continue;
        }
]])[
        // epilogue as in the one-block-per-tile kernel
        if (tma_c) {
            gemm_c_tma(hk_lds, &hk_a.]hkm_if_param([epilogue], [tma], [tmap_c], [tmap_a])[, c, w.block_m, w.block_n, [&](int i, int h, float &lo, float &hi) {
                lo = acc[4 * i + 2 * h];
                hi = acc[4 * i + 2 * h + 1];
            });
            continue;
        }
#pragma unroll
        for (int i = 0; i < TILE_N / 8; ++i) {
            const int n = w.block_n + i * 8 + (lane & 3) * 2;
#pragma unroll
            for (int h = 0; h < 2; ++h)
                gemm_store_pair(C, ldc, r0 + h * 8, n, M, N, vec_c, acc[4 * i + 2 * h], acc[4 * i + 2 * h + 1]);
        }
    }
    if (tma_c && hk_thread_id() % 128 == 0)
        hk_bulk_wait<0>(); // C written (and its source read) before the block leaves
]])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
]m4_ifdef([hkm_t_blocks_per_sm], [[#undef HK_BLOCKS_PER_SM
#define HK_BLOCKS_PER_SM ]hkm_tune([blocks_per_sm])[ // registers for that many per SM
static constexpr int BLOCKS_PER_SM = ]hkm_tune([blocks_per_sm])[;
]], [[static constexpr int BLOCKS_PER_SM = 1;
]])[static constexpr int GEMM_THREADS = ]hkm_block_size[;
static constexpr int TILE_M = ]hkm_param([tile_m])[;     // rows of C per block
static constexpr int TILE_N = ]hkm_param([tile_n])[;     // columns of C per block
static constexpr bool NT = ]hkm_gemm_if_nt([true], [false])[;
static constexpr int TILE_K = ]hkm_tune([tile_k])[;        // k per stage: 128-byte rows
static constexpr int GROUP_M = 8;        // m-tiles per block-renumbering group
static constexpr int COPY_THREADS = 128; // the producer warpgroup
static constexpr int CONSUMERS = TILE_M / 64;
static constexpr int CONSUMER_WARPS = 4 * CONSUMERS;
static_assert(GEMM_THREADS == COPY_THREADS + 32 * CONSUMER_WARPS, "a producer and tile_m / 64 consumer warpgroups");
static constexpr int LDS_A_BYTES = TILE_M * TILE_K * 2;
static constexpr int LDS_B_BYTES = TILE_N * TILE_K * 2;
static constexpr int LDS_STAGE_BYTES = LDS_A_BYTES + LDS_B_BYTES;
static constexpr int NN_TILE_BYTES = 64 * 128;  // nn: one [64 k][64 n] tile of B
// dynamic shared memory, the plan's dynamic_lds bytes (gen/op_gemm.c:
// stages x stage bytes + BAR_BYTES of mbarriers + the alignment slack)
static constexpr int DYNAMIC_LDS = ]hkm_dynamic_lds[;
static constexpr int BAR_BYTES = ]hkm_tune([bar_bytes])[;
static constexpr int STAGES = ]hkm_tune([stages])[;
static constexpr int C_STAGE_BYTES = ]hkm_tune([c_stage_bytes])[; // persistent epilogue tma: C's staging
static_assert(STAGES * LDS_STAGE_BYTES + C_STAGE_BYTES + BAR_BYTES + HK_LDS_DYNAMIC_SLACK == DYNAMIC_LDS,
              "dynamic_lds must hold whole stages (gen/op_gemm.c gemm_plan_wgmma)");
static_assert(STAGES >= 2 && 2 * STAGES * 8 <= BAR_BYTES, "stages and their mbarriers");
static constexpr bool EPI_TMA = ]hkm_if_param([epilogue], [tma], [true], [false])[; // C by bulk tensor stores
static constexpr int C_OFF = STAGES * LDS_STAGE_BYTES;
static constexpr int BAR_OFF = C_OFF + C_STAGE_BYTES;
// mbarriers of stage s: `full' (its k-tile has landed), `empty' (consumers are done with it)
HK_DEVICE int full_bar(int s) { return BAR_OFF + 8 * s; }
HK_DEVICE int empty_bar(int s) { return BAR_OFF + 8 * (STAGES + s); }
// 16-byte chunks per producer thread and stage (the cp.async path)
static constexpr int A_CHUNKS = TILE_M * TILE_K / 8 / COPY_THREADS;
static constexpr int B_CHUNKS = TILE_N * TILE_K / 8 / COPY_THREADS;
static_assert(TILE_M * TILE_K % (8 * COPY_THREADS) == 0 && TILE_N * TILE_K % (8 * COPY_THREADS) == 0,
              "tiles must split into 16-byte chunks evenly");

// Byte offset of 16-byte chunk c of row r in a tile of 128-byte rows (the 128-byte swizzle).
HK_DEVICE int swz(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }
]hkm_gemm_tma_c()[
// nn: chunk c (8 consecutive n) of k-row r of the B stage: its 64-column tile, then swz.
HK_DEVICE int swz_nn(int r, int c) { return (c >> 3) * NN_TILE_BYTES + swz(r, c & 7); }

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

// ---- global -> shared by the producer's threads (when the copy engine cannot) ----
HK_DEVICE void gemm_copy_stage(hk_lds_t lds, int a_off, const hk_bf16 *A, const hk_bf16 *B, int lda,
                               int ldb, int M, int N, int K, int block_m, int block_n, int k0, bool vec_a,
                               bool vec_b)
{
    const int b_off = a_off + LDS_A_BYTES;
    // A is M x K: 8 consecutive k of one row m per chunk
]hkm_gemm_copy_unroll[
    for (int j = 0; j < A_CHUNKS; ++j) {
        const int v = hk_thread_id() + COPY_THREADS * j;
        const int r = v / (TILE_K / 8), c = v % (TILE_K / 8);
        const int m = block_m + r, k = k0 + c * 8;
        gemm_copy_chunk(lds, a_off + swz(r, c), A + (long)m * lda + k, A, m < M ? K - k : 0, vec_a);
    }
]hkm_gemm_copy_unroll[
    for (int j = 0; j < B_CHUNKS; ++j) {
        const int v = hk_thread_id() + COPY_THREADS * j;
        if (NT) {
            // B is N x K: 8 consecutive k of one row n per chunk
            const int r = v / (TILE_K / 8), c = v % (TILE_K / 8);
            const int n = block_n + r, k = k0 + c * 8;
            gemm_copy_chunk(lds, b_off + swz(r, c), B + (long)n * ldb + k, B, n < N ? K - k : 0, vec_b);
        } else {
            // B is K x N: 8 consecutive n of one row k per chunk
            const int r = v / (TILE_N / 8), c = v % (TILE_N / 8);
            const int k = k0 + r, n = block_n + c * 8;
            gemm_copy_chunk(lds, b_off + swz_nn(r, c), B + (long)k * ldb + n, B, k < K ? N - n : 0, vec_b);
        }
    }
}

// ---- global -> shared by the copy engine: one thread, the stage's bytes on `full' ----
HK_DEVICE void gemm_tma_stage(hk_lds_t lds, int a_off, const hk_tmap *ta, const hk_tmap *tb, int block_m,
                              int block_n, int k0, int bar)
{
    hk_mbar_arrive_expect_tx(lds, bar, LDS_STAGE_BYTES);
    hk_tma_load_2d(lds, a_off, ta, k0, block_m, bar);
    if (NT) {
        hk_tma_load_2d(lds, a_off + LDS_A_BYTES, tb, k0, block_n, bar);
    } else {
#pragma unroll
        for (int j = 0; j < TILE_N / 64; ++j)
            hk_tma_load_2d(lds, a_off + LDS_A_BYTES + j * NN_TILE_BYTES, tb, block_n + 64 * j, k0, bar);
    }
}

// C[m][n], C[m][n+1] = lo, hi (masked to M x N), one 4-byte store when allowed
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

// ---- one stage x wgmma (consumer c): acc += A rows 64c.. x B over TILE_K ---------
// Descriptors: swizzle mode 1 (128-byte), 1024 bytes between 8-row groups.
// A k step of 16 adds 32 bytes on a K-major tile and 16 rows (2048 bytes) on
// nn's MN-major B, whose 64-column tiles are NN_TILE_BYTES apart (lbo).
// Committed, not waited for: on return the previous stage's wgmma group is
// complete (wait<1>), this one may still run.
typedef hk_wgmma_acc]hkm_param([tile_n])[_t gemm_acc_t;
HK_DEVICE void gemm_wgmma_stage(hk_lds_t lds, int a_off, int c, gemm_acc_t &acc)
{
    const int b_off = a_off + LDS_A_BYTES;
    hk_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TILE_K; kk += 16) {
        const unsigned long long da = hk_wgmma_desc(lds, a_off + c * 64 * 128 + kk * 2, 16, 1024, 1);
]hkm_gemm_if_nt([[        hk_wgmma_64x]]hkm_param([tile_n])[[x16(acc, da, hk_wgmma_desc(lds, b_off + kk * 2, 16, 1024, 1), 1);
]], [[        hk_wgmma_64x]]hkm_param([tile_n])[[x16_tb(acc, da, hk_wgmma_desc(lds, b_off + kk * 128, NN_TILE_BYTES, 1024, 1), 1);
]])[    }
    hk_wgmma_commit();
    hk_wgmma_wait<1>();
}

]hkm_gemm_if_sched([hkm_gemm_sched_config])[
// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    const hk_bf16 *A = hk_a.A;
    const hk_bf16 *B = hk_a.B;
    hk_bf16 *C = hk_a.C;
    const int lda = hk_a.lda, ldb = hk_a.ldb, ldc = hk_a.ldc;

    HK_LDS_DECLARE_DYNAMIC();
]hkm_gemm_if_sched([[
    const bool vec_a = (lda % 8 == 0) && ((unsigned long)A % 16 == 0);
    const bool vec_b = (ldb % 8 == 0) && ((unsigned long)B % 16 == 0);
    const bool use_tma = vec_a && vec_b;
    const bool vec_c = (ldc % 2 == 0) && ((unsigned long)C % 4 == 0);
    // epilogue tma where the runtime built tmap_c (the same conditions: rows a
    // multiple of 16 bytes apart, a 16-byte aligned base)
    const bool tma_c = EPI_TMA && ldc % 8 == 0 && (unsigned long)C % 16 == 0;
]hkm_gemm_sched_body[}
]hkm_output_end()]], [[

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
    const int lane = hk_lane_id();
    const int k_tiles = (K + TILE_K - 1) / TILE_K;

    // 16-byte copies need 8-element rows and 16-byte aligned bases; the copy
    // engine takes both matrices when both qualify (the runtime built their
    // tensor maps under the same conditions), else the producer copies
    const bool vec_a = (lda % 8 == 0) && ((unsigned long)A % 16 == 0);
    const bool vec_b = (ldb % 8 == 0) && ((unsigned long)B % 16 == 0);
    const bool use_tma = vec_a && vec_b;
    const bool vec_c = (ldc % 2 == 0) && ((unsigned long)C % 4 == 0);
    const bool tma_c = EPI_TMA && ldc % 8 == 0 && (unsigned long)C % 16 == 0; // as the runtime built tmap_c

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
                gemm_tma_stage(hk_lds, s * LDS_STAGE_BYTES, &hk_a.tmap_a, &hk_a.tmap_b, block_m, block_n,
                               t * TILE_K, full_bar(s));
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

    // consumer c: rows 64 c .. 64 c + 63 of the block's tile
    const int c = wave / 4 - 1;
    gemm_acc_t acc;
#pragma unroll
    for (int i = 0; i < TILE_N / 2; ++i)
        acc[i] = 0.0f;
    for (int t = 0; t < k_tiles; ++t) {
        const int s = t % STAGES;
        hk_mbar_wait(hk_lds, full_bar(s), (t / STAGES) & 1);
        gemm_wgmma_stage(hk_lds, s * LDS_STAGE_BYTES, c, acc);
        // k-tile t-1's wgmma group is complete: its stage goes back to the producer
        if (t > 0 && lane == 0)
            hk_mbar_arrive(hk_lds, empty_bar((t - 1) % STAGES));
    }
    hk_wgmma_wait<0>();

    // epilogue: warp w of the warpgroup holds rows 16 (w % 4) + g (+8), n8
    // tile i in acc[4i..4i+3] (g = lane / 4, t = lane % 4: columns 2t, 2t+1);
    // by bulk tensor stores, or bf16 pairs as 4-byte stores when inside C and
    // 4-byte aligned
    if (tma_c) {
        gemm_c_tma(hk_lds, &hk_a.]hkm_if_param([epilogue], [tma], [tmap_c], [tmap_a])[, c, block_m, block_n, [&](int i, int h, float &lo, float &hi) {
            lo = acc[4 * i + 2 * h];
            hi = acc[4 * i + 2 * h + 1];
        });
        if (hk_thread_id() % 128 == 0)
            hk_bulk_wait<0>(); // C written (and its source read) before the block leaves
        return;
    }
#pragma unroll
    for (int i = 0; i < TILE_N / 8; ++i) {
        const int n = block_n + i * 8 + (lane & 3) * 2;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = block_m + c * 64 + (wave % 4) * 16 + (lane >> 2) + h * 8;
            gemm_store_pair(C, ldc, m, n, M, N, vec_c, acc[4 * i + 2 * h], acc[4 * i + 2 * h + 1]);
        }
    }
}
]hkm_output_end()])
