m4_divert(-1)                                                   -*- C -*-
# gemm_fp8.hip.m4 - scaled fp8 GEMM with fp32 accumulation, AMD (gfx942 FNUZ,
# gfx950 OCP): the fp8 variant of gemm.hip.m4 (gen/op_gemm.c picks it for the
# fp8 dtypes, gemm_skeleton_of).
#
#   C[m][n] = sum_k (A[m][k] sa(m, k)) (B[n][k] sb(n, k))     layout nt only
#
# A (M x K) and B (N x K) are fp8 codes of one format (dtype), row-major,
# k contiguous.  Scales (float, docs/FP8.md):
#   tensor: sa = scale_a[0], sb = scale_b[0], applied in the epilogue;
#   row:    sa = scale_a[m], sb = scale_b[n], applied in the epilogue;
#   block:  sa = scale_a[(k / 128) * M + m] (1 x 128 blocks of A),
#           sb = scale_b[(n / 128) * (K / 128) + k / 128] (128 x 128 blocks of B);
#           each k-tile (128 = one block) is multiplied into a partial
#           accumulator, then added to the running one times sa * sb.
# C is bf16 (RNE) or fp32 (out), M x N with leading dimension ldc.
#
# Parameters (hkm_p_*): M, N, K (baked or `any'), dtype, scale, out, tile_m
# (64|128|256), tile_n (128|256).  Tunables (hkm_t_*, gen/op_gemm.c
# gemm_plan_amd_fp8): tile_k (128), stages (1 or 2), waves_m x waves_n,
# lds_swizzle_shift, group_m, waves_per_simd, lds_bytes, scale_block.
# Kernel arguments: A, B, C, lda, ldb, ldc, the run-time ones of M, N, K,
# scale_a, scale_b, and for row and block scales scale_a_rows, scale_a_cols,
# scale_b_rows, scale_b_cols (their shapes, checked by libhkrt at launch).
#
# Block: waves_m x waves_n waves; each owns a (tile_m / waves_m) x
# (tile_n / waves_n) block of C made of 32x32 fp8 MFMA tiles.  Grid and
# workgroup order as gemm.hip.m4 (XCD ranges, then groups of group_m rows).
#
# LDS: per stage an A tile [tile_m][128] and a B tile [tile_n][128] of codes,
# one 128-byte line per row, 16-byte slot c of line r at c ^ key(r), key(r) =
# (r >> shift) % 8, as gemm.hip.m4's k-64 bf16 tiles (the same bytes).
#  - MFMA operand reads (ds_read_b128): lane l reads row base + l % 32, chunk
#    c0 + l / 32: 16 codes, two 32x32x16 MFMA operands.  The first MFMA sums
#    k = 16g .. 16g + 7 of each 32 (g = l / 32), the second 16g + 8 .. 16g + 15;
#    A and B use the same placement, so together they sum every k once.
#  - Stores (ds_write_b128): 8 consecutive lanes write one line's 8 slots.
#
# Steps (k advances 128 each), as gemm.hip.m4's non-ping-pong ones:
#  - stages 1 (gfx942): tile t + 1 from global into registers during the
#    multiply of the one stage, stored after a barrier; two barriers a step.
#  - stages 2 (gfx950): tile t + 1 into registers during the multiply of
#    stage t % 2, then into the other stage; one barrier.
# Bounds: `fast' k-tiles (wholly inside K, 16-byte aligned rows) load with
# buffer loads whose range check zeroes rows past M and N; the K tail and
# unaligned matrices take element-wise masked loads.  Stores are masked.

hkm_check_one_of([layout], [nt])
hkm_check_one_of([scale], [tensor], [row], [block])
hkm_check_one_of([out], [bf16], [f32])
hkm_check_one_of([tile_m], [64], [128], [256])
hkm_check_one_of([tile_n], [128], [256])
hkm_param([M])hkm_param([N])hkm_param([K])
m4_ifelse(hkm_block_size, m4_eval(64 * hkm_tune([waves_m]) * hkm_tune([waves_n])), [],
      [hkm_fatal([gemm_fp8 needs hkm_block_size 64 x waves_m x waves_n, got ]hkm_block_size)])

# hkm_gemm_fmt(): the tile header's token of the dtype's format
m4_define([hkm_gemm_fmt], [m4_ifelse(hkm_param([dtype]), [fp8_e4m3], [E4M3_OCP],
    hkm_param([dtype]), [fp8_e5m2], [E5M2_OCP],
    hkm_param([dtype]), [fp8_e4m3_fnuz], [E4M3_FNUZ],
    hkm_param([dtype]), [fp8_e5m2_fnuz], [E5M2_FNUZ],
    [hkm_fatal([gemm_fp8: dtype `]hkm_param([dtype])[' is not an fp8 format])])])
# hkm_gemm_scale_mode(): 0 tensor, 1 row, 2 block
m4_define([hkm_gemm_scale_mode], [hkm_if_param([scale], [tensor], [0], [hkm_if_param([scale], [row], [1], [2])])])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
#undef HK_WAVES_PER_SIMD
#define HK_WAVES_PER_SIMD ]hkm_tune([waves_per_simd])[
#define GEMM_FMT ]hkm_gemm_fmt()[
typedef ]hkm_if_param([out], [f32], [float], [hk_bf16])[ gemm_out_t;
static constexpr int GEMM_THREADS = ]hkm_block_size[;
static constexpr int TILE_M = ]hkm_param([tile_m])[;     // rows of C per workgroup
static constexpr int TILE_N = ]hkm_param([tile_n])[;     // columns of C per workgroup
static constexpr int TILE_K = ]hkm_tune([tile_k])[;      // k (codes, bytes) per LDS stage
static constexpr int STAGES = ]hkm_tune([stages])[;      // LDS buffers
static constexpr int WAVES_M = ]hkm_tune([waves_m])[, WAVES_N = ]hkm_tune([waves_n])[;
static constexpr int SWIZZLE_SHIFT = ]hkm_tune([lds_swizzle_shift])[;
static constexpr int GROUP_M = ]hkm_tune([group_m])[;    // tile rows per L2 group
static constexpr int SCALE_BLOCK = ]hkm_tune([scale_block])[; // k (and B's n) per block scale
static constexpr int SCALE_MODE = ]hkm_gemm_scale_mode()[;    // 0 tensor, 1 row, 2 block
static constexpr bool LDS_DMA = ]hkm_tune([lds_dma])[;    // fast tiles global -> LDS directly (no staging registers)
static constexpr int NWAVES = WAVES_M * WAVES_N;
static constexpr int WAVE_M = TILE_M / WAVES_M;
static constexpr int WAVE_N = TILE_N / WAVES_N;
static constexpr int FRAG_M = WAVE_M / 32; // 32x32 MFMA tiles per wave
static constexpr int FRAG_N = WAVE_N / 32;
// block scales loaded a k-tile ahead (gemm_bscale: 16 registers a fragment
// row) where a wave holds two accumulator tiles (the 8 waves' 64x32 or 32x64
// of 128x128 and 64x256 tiles: 13-30% faster by the estimate on gfx942 and
// gfx950, 2026-12-02); with four (128x256) gfx942 spilled, with one (64x128)
// it was 2-8% slower
static constexpr bool SCALE_AHEAD = SCALE_MODE == 2 && FRAG_M * FRAG_N == 2;
static constexpr int CHUNKS = TILE_K / 16; // 16-byte chunks per LDS row
static constexpr int ROW_BYTES = TILE_K;
static constexpr int LDS_A_BYTES = TILE_M * ROW_BYTES;
static constexpr int LDS_STAGE_BYTES = (TILE_M + TILE_N) * ROW_BYTES;
static constexpr int KSTEP = 32;           // k per operand read: 2 lane groups x 16
// global -> register staging: 16-byte vectors per thread
static constexpr int A_VECS = TILE_M * CHUNKS / GEMM_THREADS;
static constexpr int B_VECS = TILE_N * CHUNKS / GEMM_THREADS;
static_assert(GEMM_THREADS == 64 * WAVES_M * WAVES_N, "one wave per 64 threads");
static_assert(WAVE_M % 32 == 0 && WAVE_N % 32 == 0, "wave tiles of whole 32x32 MFMAs");
static_assert(TILE_M * CHUNKS % GEMM_THREADS == 0 && TILE_N * CHUNKS % GEMM_THREADS == 0,
              "tiles must split into 16-byte vectors evenly");
static_assert(CHUNKS == 8, "the swizzle permutes the 8 chunks of a 128-byte line");
static_assert(TILE_K == SCALE_BLOCK, "a k-tile is one block scale's k");
static_assert(2 * HK_MFMA_F8_K == KSTEP && 2 * HK_MFMA_F8_KPL == 16, "a 16-byte read feeds two fp8 MFMAs");
static_assert(SCALE_MODE != 2 || (WAVE_N <= SCALE_BLOCK && SCALE_BLOCK % WAVE_N == 0),
              "block scales: a wave's columns inside one 128-column block of B");
static_assert(STAGES * LDS_STAGE_BYTES <= ]hkm_tune([lds_bytes])[, "LDS budget of the plan");
static_assert(!LDS_DMA || (STAGES == 2 && TILE_M * ROW_BYTES % (1024 * NWAVES) == 0 &&
                           TILE_N * ROW_BYTES % (1024 * NWAVES) == 0),
              "direct LDS loads: two stages, 1024 bytes per wave instruction");

struct gemm_stage {
    hk_u32x4 a[A_VECS];
    hk_u32x4 b[B_VECS];
};

// what every load needs; a_bytes (b_bytes) cover the workgroup's rows of A
// (B), so that rows past M (N) read 0
struct gemm_src {
    const hk_fp8 *A, *B;
    unsigned a_bytes, b_bytes;
    int lda, ldb, block_m, block_n;
    bool vec_a, vec_b;
};

// byte offset of 16-byte chunk c of LDS row r inside a tile: one 128-byte
// line per row, its 8 slots permuted by a key of the row
HK_DEVICE int gemm_lds_off(int r, int c)
{
    return r * 128 + (c ^ ((r >> SWIZZLE_SHIFT) % 8)) * 16;
}

// ---- global -> registers: k-tile at k0 ---------------------------------------
HK_DEVICE void gemm_load_fast(gemm_stage *s, const gemm_src &g, int k0)
{
    // the buffers start at column k0: the lanes' offsets stay the same every step
    const hk_buffer_t a = hk_buffer_make(g.A + (long)g.block_m * g.lda + k0, g.a_bytes);
    const hk_buffer_t b = hk_buffer_make(g.B + (long)g.block_n * g.ldb + k0, g.b_bytes);
    // chunk v % CHUNKS of row v / CHUNKS, 8 lanes per 128-byte row
#pragma unroll
    for (int j = 0; j < A_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        s->a[j] = hk_buffer_load_b128(a, (v / CHUNKS) * g.lda + (v % CHUNKS) * 16);
    }
#pragma unroll
    for (int j = 0; j < B_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        s->b[j] = hk_buffer_load_b128(b, (v / CHUNKS) * g.ldb + (v % CHUNKS) * 16);
    }
}

HK_DEVICE void gemm_load_edge(gemm_stage *s, const gemm_src &g, int M, int N, int K, int k0)
{
#pragma unroll
    for (int j = 0; j < A_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int m = g.block_m + v / CHUNKS, k = k0 + (v % CHUNKS) * 16;
        s->a[j] = hk_global_load_u8x16(g.A + (long)m * g.lda + k, m < M ? K - k : 0, g.vec_a);
    }
#pragma unroll
    for (int j = 0; j < B_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int n = g.block_n + v / CHUNKS, k = k0 + (v % CHUNKS) * 16;
        s->b[j] = hk_global_load_u8x16(g.B + (long)n * g.ldb + k, n < N ? K - k : 0, g.vec_b);
    }
}

// ---- registers -> LDS stage at byte offset a_off -------------------------------
HK_DEVICE void gemm_store_lds(hk_lds_t lds, int a_off, const gemm_stage *s)
{
#pragma unroll
    for (int j = 0; j < A_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        hk_lds_store_b128(lds, a_off + gemm_lds_off(v / CHUNKS, v % CHUNKS), s->a[j]);
    }
#pragma unroll
    for (int j = 0; j < B_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        hk_lds_store_b128(lds, a_off + LDS_A_BYTES + gemm_lds_off(v / CHUNKS, v % CHUNKS), s->b[j]);
    }
}

// ---- global -> LDS directly (fast tiles, LDS_DMA): k-tile at k0 into the stage at a_off
// A wave instruction fills 1024 contiguous bytes, 8 whole lines; lane l the
// slot l % 8 of line l / 8, so it loads the chunk the swizzle puts there.
HK_DEVICE void gemm_dma_rows(hk_lds_t lds, int off, hk_buffer_t buf, int ld, int rows)
{
    const int lane = hk_lane_id(), wave = hk_wave_id();
#pragma unroll
    for (int j = 0; j < rows * ROW_BYTES / (1024 * NWAVES); ++j) {
        const int line0 = (wave + NWAVES * j) * 8, r = line0 + lane / 8;
        const int c = (lane % 8) ^ ((r >> SWIZZLE_SHIFT) % 8);
        hk_buffer_load_lds_b128(buf, r * ld + c * 16, lds, off + line0 * 128);
    }
}

HK_DEVICE void gemm_dma_tile(hk_lds_t lds, int a_off, const gemm_src &g, int k0)
{
    gemm_dma_rows(lds, a_off, hk_buffer_make(g.A + (long)g.block_m * g.lda + k0, g.a_bytes), g.lda, TILE_M);
    gemm_dma_rows(lds, a_off + LDS_A_BYTES, hk_buffer_make(g.B + (long)g.block_n * g.ldb + k0, g.b_bytes), g.ldb,
                  TILE_N);
}

// ---- one LDS stage x MFMA: acc += A_tile * B_tile over TILE_K -------------------
typedef hk_mfma_acc_t gemm_acc_t[FRAG_M][FRAG_N];
HK_DEVICE void gemm_mma_stage(hk_lds_t lds, int a_off, int wave_m, int wave_n, gemm_acc_t &acc)
{
    const int lane = hk_lane_id();
    const int b_off = a_off + LDS_A_BYTES;
    // lane l reads row l % 32 of a fragment, chunk (k / 16) + l / 32
    const int row = lane % 32, cq = lane / 32;
#pragma unroll
    for (int kk = 0; kk < TILE_K; kk += KSTEP) {
        hk_u32x4 a[FRAG_M], b[FRAG_N];
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            b[j] = hk_lds_load_b128(lds, b_off + gemm_lds_off(wave_n * WAVE_N + j * 32 + row, kk / 16 + cq));
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
            a[i] = hk_lds_load_b128(lds, a_off + gemm_lds_off(wave_m * WAVE_M + i * 32 + row, kk / 16 + cq));
#pragma unroll
        for (int p = 0; p < 2; ++p)
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j)
                    acc[i][j] = hk_mfma_32x32_fp8(GEMM_FMT, GEMM_FMT, hk_mfma_f8_ab_part(a[i], p),
                                                  hk_mfma_f8_ab_part(b[j], p), acc[i][j]);
        // block scales hold two accumulators: the next step's operands are
        // read after this step's MFMAs, not all steps' at once (spills)
        if (SCALE_MODE == 2)
            hk_sched_barrier();
    }
}

// accumulator element r of lane l: row (r / 4) * 8 + (l / 32) * 4 + r % 4, column l % 32
HK_DEVICE int gemm_acc_row(int lane, int r) { return (r / 4) * 8 + (lane / 32) * 4 + r % 4; }

// block scales of k-tile kb, loaded a step ahead of their use (waited for
// with the next tile's operands, not right after the MFMAs): sa(m, kb) of a
// lane's 16 rows of each fragment, 4 runs of 4 consecutive ones
// (gemm_acc_row), one 16-byte buffer load each from a buffer of the k-tile's
// M scales, so rows past M read 0 (their stores are masked) and no 64-bit
// address per row is needed; sb(nb, kb) of the wave's 128-column block.
struct gemm_bscale {
    hk_u32x4 sa[FRAG_M][4];
    float sb;
};

HK_DEVICE void gemm_block_scale_load(gemm_bscale &bs, const float *sa, const float *sb, int M, int K, int kb, int m0,
                                     int n0)
{
    const int lane = hk_lane_id();
    bs.sb = hk_global_load_f32(sb + (long)(n0 / SCALE_BLOCK) * (K / SCALE_BLOCK) + kb);
    const hk_buffer_t sa_k = hk_buffer_make(sa + (long)kb * M, (unsigned)M * 4u);
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int q = 0; q < 4; ++q)
            bs.sa[i][q] = hk_buffer_load_b128(sa_k, (m0 + i * 32 + gemm_acc_row(lane, 4 * q)) * 4);
}

// acc += part * sa(m, kb) * sb(nb, kb) for the k-tile whose scales bs holds
HK_DEVICE void gemm_block_scale_add(gemm_acc_t &acc, const gemm_acc_t &part, const gemm_bscale &bs)
{
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float s = hk_u32_as_f32(bs.sa[i][q][e]) * bs.sb;
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j)
                    acc[i][j][4 * q + e] += part[i][j][4 * q + e] * s;
            }
}

HK_DEVICE void gemm_acc_zero(gemm_acc_t &acc)
{
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            acc[i][j] = hk_mfma_acc_zero();
}

// what the scaling needs (block: the block scales, the wave's first row and column)
struct gemm_scaling {
    const float *sa, *sb;
    int m0, n0;
};

// the multiply of k-tile t in the stage at a_off: into acc directly, or
// (block scales) into a partial accumulator added with its scales, bs (and
// tile t + 1's loaded into bs when `next`)
HK_DEVICE void gemm_mma_tile(hk_lds_t lds, int a_off, int wave_m, int wave_n, const gemm_scaling &sc, int M, int K,
                             int t, bool next, gemm_bscale &bs, gemm_acc_t &acc)
{
    if (SCALE_MODE == 2) {
        // SCALE_AHEAD: tile t's scales came a step ago, tile t + 1's go out
        // now; else tile t's are loaded after the MFMAs and waited for at once
        gemm_bscale now = bs;
        if (SCALE_AHEAD && next)
            gemm_block_scale_load(bs, sc.sa, sc.sb, M, K, t + 1, sc.m0, sc.n0);
        gemm_acc_t part;
        gemm_acc_zero(part);
        gemm_mma_stage(lds, a_off, wave_m, wave_n, part);
        if (!SCALE_AHEAD)
            gemm_block_scale_load(now, sc.sa, sc.sb, M, K, t, sc.m0, sc.n0);
        gemm_block_scale_add(acc, part, now);
    } else {
        (void)t;
        (void)next;
        (void)bs;
        gemm_mma_stage(lds, a_off, wave_m, wave_n, acc);
    }
}

// ---- one k step: multiply tile t's stage, bring tile t + 1 in ---------------------
// FAST: tile t + 1 by buffer loads; else masked loads (or none when LOAD is
// false). STAGE: the stage tile t is in (0 or 1), or -1: found from t.
template <bool FAST, int STAGE>
HK_DEVICE void gemm_step(hk_lds_t lds, const gemm_src &g, const gemm_scaling &sc, int M, int N, int K, int t,
                         bool load, int wave_m, int wave_n, gemm_bscale &bs, gemm_acc_t &acc)
{
    gemm_stage s;
    const int st = STAGES == 1 ? 0 : STAGE >= 0 ? STAGE : t & 1;
    if (FAST && LDS_DMA) {
        // tile t + 1 straight into the other stage (read last in step t - 1,
        // which every wave ended with a barrier); landed at this step's end
        gemm_dma_tile(lds, (1 - st) * LDS_STAGE_BYTES, g, (t + 1) * TILE_K);
        gemm_mma_tile(lds, st * LDS_STAGE_BYTES, wave_m, wave_n, sc, M, K, t, load, bs, acc);
        hk_waitcnt_all();
        hk_barrier();
        return;
    }
    if (load) {
        if (FAST)
            gemm_load_fast(&s, g, (t + 1) * TILE_K);
        else
            gemm_load_edge(&s, g, M, N, K, (t + 1) * TILE_K);
    }
    gemm_mma_tile(lds, st * LDS_STAGE_BYTES, wave_m, wave_n, sc, M, K, t, load, bs, acc);
    if (STAGES == 1)
        hk_barrier(); // every wave is done reading the one stage
    if (load)
        gemm_store_lds(lds, STAGES == 1 ? 0 : (1 - st) * LDS_STAGE_BYTES, &s);
    hk_barrier();
}

HK_DEVICE void gemm_store(gemm_out_t *p, float v)
{
]hkm_if_param([out], [f32], [[    hk_global_store_f32(p, v);
]], [[    hk_global_store_bf16(p, hk_f32_to_bf16(v));
]])[}

// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    gemm_out_t *C = hk_a.C;
    const int ldc = hk_a.ldc;

    HK_LDS_DECLARE(STAGES * LDS_STAGE_BYTES);

    // workgroup -> tile: XCD ranges, then column-major groups of GROUP_M tile rows
    const int tiles_n = (N + TILE_N - 1) / TILE_N, tiles_m = (M + TILE_M - 1) / TILE_M;
    const long nblocks = (long)tiles_n * tiles_m;
    int tm = hk_block_id_y(), tn = hk_block_id_x();
    if (nblocks <= 0x7fffffffL) {
        const int id = hk_xcd_remap(tm * tiles_n + tn, (int)nblocks);
        const int per_group = GROUP_M * tiles_n, first = (id / per_group) * GROUP_M;
        const int rows = tiles_m - first < GROUP_M ? tiles_m - first : GROUP_M;
        tm = first + (id % per_group) % rows;
        tn = (id % per_group) / rows;
    }

    gemm_src g;
    g.A = hk_a.A;
    g.B = hk_a.B;
    g.lda = hk_a.lda;
    g.ldb = hk_a.ldb;
    g.block_m = tm * TILE_M;
    g.block_n = tn * TILE_N;
    // 16-byte vectors need 16-code rows and 16-byte aligned bases
    g.vec_a = (g.lda % 16 == 0) && ((unsigned long)g.A % 16 == 0);
    g.vec_b = (g.ldb % 16 == 0) && ((unsigned long)g.B % 16 == 0);
    const int rows_a = M - g.block_m < TILE_M ? M - g.block_m : TILE_M;
    const int rows_b = N - g.block_n < TILE_N ? N - g.block_n : TILE_N;
    g.a_bytes = (unsigned)rows_a * (unsigned)g.lda;
    g.b_bytes = (unsigned)rows_b * (unsigned)g.ldb;
    // buffer offsets are 32-bit: a tile's rows must span less than 2^31 bytes
    const bool fast = g.vec_a && g.vec_b && (long)TILE_M * g.lda < (1L << 30) && (long)TILE_N * g.ldb < (1L << 30);

    const int wave = hk_wave_id();
    const int wave_m = wave / WAVES_N, wave_n = wave % WAVES_N;
    const int k_tiles = (K + TILE_K - 1) / TILE_K;
    const int k_fast = fast ? K / TILE_K : 0; // tiles whose loads need no bounds logic

    gemm_scaling sc;
    sc.sa = hk_a.scale_a;
    sc.sb = hk_a.scale_b;
    sc.m0 = g.block_m + wave_m * WAVE_M;
    sc.n0 = g.block_n + wave_n * WAVE_N;

    gemm_acc_t acc;
    gemm_acc_zero(acc);
    gemm_bscale bs; // block scales of the tile being multiplied (SCALE_AHEAD)
    if (SCALE_AHEAD)
        gemm_block_scale_load(bs, sc.sa, sc.sb, M, K, 0, sc.m0, sc.n0);

    // prologue: k-tile 0 into LDS stage 0
    {
        gemm_stage s;
        if (k_fast > 0)
            gemm_load_fast(&s, g, 0);
        else
            gemm_load_edge(&s, g, M, N, K, 0);
        gemm_store_lds(hk_lds, 0, &s);
        hk_barrier();
    }

    // main loop: tile t + 1 is a fast tile, two steps per trip with two
    // stages (LDS offsets constant in each); then the tail, masked
    int t = 0;
    if (STAGES == 2)
        for (; t + 2 < k_fast; t += 2) {
            gemm_step<true, 0>(hk_lds, g, sc, M, N, K, t, true, wave_m, wave_n, bs, acc);
            gemm_step<true, 1>(hk_lds, g, sc, M, N, K, t + 1, true, wave_m, wave_n, bs, acc);
        }
    else
        for (; t + 1 < k_fast; ++t)
            gemm_step<true, -1>(hk_lds, g, sc, M, N, K, t, true, wave_m, wave_n, bs, acc);
    for (; t < k_tiles; ++t)
        gemm_step<false, -1>(hk_lds, g, sc, M, N, K, t, t + 1 < k_tiles, wave_m, wave_n, bs, acc);

    // epilogue: tensor and row scales, then the masked stores; rows outer,
    // so that only the FRAG_N column masks stay live (a mask per row spilled)
    const int lane = hk_lane_id();
    const float s_t = SCALE_MODE == 0 ? hk_global_load_f32(sc.sa) * hk_global_load_f32(sc.sb) : 1.0f;
    float s_n[FRAG_N];
#pragma unroll
    for (int j = 0; j < FRAG_N; ++j) {
        const int n = sc.n0 + j * 32 + lane % 32;
        s_n[j] = SCALE_MODE == 1 && n < N ? hk_global_load_f32(sc.sb + n) : s_t;
    }
    // row scales of A: a lane's 16 rows of a fragment are 4 runs of 4 (gemm_acc_row), one
    // 16-byte buffer load each (rows past M read 0)
    const hk_buffer_t sa_rows = hk_buffer_make(sc.sa, SCALE_MODE == 1 ? (unsigned)M * 4u : 4u);
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            hk_u32x4 w = {0u, 0u, 0u, 0u};
            if (SCALE_MODE == 1)
                w = hk_buffer_load_b128(sa_rows, (sc.m0 + i * 32 + gemm_acc_row(lane, 4 * q)) * 4);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = 4 * q + e, m = sc.m0 + i * 32 + gemm_acc_row(lane, r);
                if (m >= M)
                    continue;
                const float s_m = SCALE_MODE == 1 ? hk_u32_as_f32(w[e]) : 1.0f;
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) {
                    const int n = sc.n0 + j * 32 + lane % 32;
                    if (n < N)
                        gemm_store(C + (long)m * ldc + n, acc[i][j][r] * (s_m * s_n[j]));
                }
            }
        }
}
]hkm_output_end()
