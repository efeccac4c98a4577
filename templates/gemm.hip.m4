m4_divert(-1)                                                   -*- C -*-
# gemm.hip.m4 - bf16 GEMM with fp32 accumulation and bf16 output (RNE), AMD.
#
#   C[M][N] = A[M][K] * op(B)     layout nt: op(B) = B^T, B is N x K row-major
#                                 layout nn: op(B) = B,   B is K x N row-major
#
# Parameters (hkm_p_*): M, N, K (baked or `any'), layout (nt|nn), tile_m and
# tile_n (64|128|256).  Tunables (hkm_t_*, gen/op_gemm.c decides them per
# target): tile_k (64, or 32 with the ping-pong), stages (1, 2 or 3),
# pingpong and lds_dma, waves_m x waves_n (the wave grid), lds_swizzle_shift,
# group_m, waves_per_simd, mma_a_group(_staged), lds_bytes.  Kernel
# arguments (hkm_kernarg_struct): A, B, C, lda, ldb, ldc, then the run-time
# ones of M, N, K.
#
# Block: waves_m x waves_n waves; each owns a (tile_m / waves_m) x
# (tile_n / waves_n) block of C made of 16x16 MFMA tiles.
# Grid: cdiv(N, tile_n) x cdiv(M, tile_m) workgroups; the kernel renumbers
# them (hk_xcd_remap, then groups of group_m tile rows) so that the
# workgroups one XCD runs share rows of A and columns of B in its L2.
#
# LDS: per stage an A tile [tile_m][tile_k] and a B tile [tile_n][tile_k],
# k innermost, in 128-byte lines of 8 16-byte slots: a line is one row
# (tile_k 64, slot = chunk) or two (tile_k 32, slot = (row % 2) * 4 +
# chunk); slot s of line L lies at s ^ key(L), key(L) = (L >> shift) % 8
# (tile_k 64) or ((L >> shift) % 4) * 2 (tile_k 32), shift 0 for 32 banks,
# 1 for 64 (tgt_mem).  With AMD's lane groups per pass (docs/EMULATOR.md)
# every read and write site of the kernel is conflict-free: `hkgen test
# --stats` counts 1.00x on gfx90a, gfx942 and gfx950 (tests/emu/stats.sh).
#  - MFMA operand reads (ds_read_b128): lane l reads row base + l % 16,
#    chunk c0 + l / 16; the rows of one pass fall on distinct slots, or
#    (64 banks) on pairs of slots 128 bytes apart.
#  - Stores (ds_write_b128): 8 consecutive lanes write one line's 8 slots;
#    layout-nn B (ds_write_b64): 16 lanes the 16 halves of one line.
#
# Steps (k advances tile_k each):
#  - stages 1 (gfx942): tile t + 1 from global into registers during the
#    multiply of the one stage, stored after a barrier; two barriers a step.
#  - stages 2 (gfx950 layout nn): tile t + 1 into registers during the
#    multiply of stage t % 2, then into the other stage; one barrier.
#  - pingpong (gfx950 layout nt): 8-wave ping-pong, see gemm_step_pp: tile
#    t + 1 goes global -> LDS directly (no registers) into stage (t + 1) % 3
#    in phase X, tile t is multiplied in phase Y at raised priority; wave
#    group 1 runs one phase behind group 0, so each SIMD's two waves take
#    turns on the matrix unit.
# The 16x16 MFMA of 4 k per lane takes two per 16-byte LDS read: lane group g
# (l / 16) holds k = 8g..8g+7 of each 32; the first MFMA sums k 8g..8g+3, the
# second 8g+4..8g+7; A and B use the same placement, so together they sum
# every k of the 32 once.
#
# Bounds: a k-tile is `fast' when its 16-byte vectors are wholly inside K,
# rows of A and B are 8-element aligned (ld % 8, 16-byte bases) and a tile's
# rows span less than 2^31 bytes; fast tiles load with buffer loads whose
# range check zeroes the rows past M (A) and N (layout nt) at no cost; layout
# nn also needs the workgroup's columns inside N.  Every other tile (the K
# tail, unaligned matrices, layout-nn edge columns) takes element-wise
# masked loads in a separate loop, so the main loop holds no bounds logic.
# Stores are masked.

hkm_check_one_of([layout], [nt], [nn])
hkm_check_one_of([tile_m], [64], [128], [256])
hkm_check_one_of([tile_n], [64], [128], [256])
hkm_param([M])hkm_param([N])hkm_param([K])
m4_ifelse(hkm_block_size, m4_eval(64 * hkm_tune([waves_m]) * hkm_tune([waves_n])), [],
      [hkm_fatal([gemm needs hkm_block_size 64 x waves_m x waves_n, got ]hkm_block_size)])


# hkm_gemm_b_fast()
# ----------------
# Buffer loads of the B k-tile at k0 (a fast tile).
m4_define([hkm_gemm_b_fast], [hkm_if_param([layout], [nt],
[[    // B is N x K: like A; rows past N read 0
    const hk_buffer_t b = hk_buffer_make(g.B + (long)g.block_n * g.ldb + k0, g.b_bytes);
#pragma unroll
    for (int j = 0; j < B_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        s->b[j] = hk_buffer_load_b128(b, ((v / CHUNKS) * g.ldb + (v % CHUNKS) * 8) * 2);
    }
]],
[[    // B is K x N: KG rows k of 8 consecutive n each, this k-tile's rows
    const hk_buffer_t bk = hk_buffer_make(g.B + (long)k0 * g.ldb + g.block_n, TILE_K * g.ldb * 2);
#pragma unroll
    for (int u = 0; u < B_UNITS_PER_THREAD; ++u) {
        const int w = hk_thread_id() + GEMM_THREADS * u;
        if (B_UNITS % GEMM_THREADS == 0 || w < B_UNITS) {
#pragma unroll
            for (int i = 0; i < KG; ++i)
                s->b[u * KG + i] = hk_buffer_load_b128(bk, ((w % KGROUPS) * KG + i) * g.ldb * 2 + (w / KGROUPS) * 16);
        }
    }
]])])


# hkm_gemm_b_edge()
# ----------------
# Element-wise masked loads of the B k-tile at k0 (tail tiles).
m4_define([hkm_gemm_b_edge], [hkm_if_param([layout], [nt],
[[#pragma unroll
    for (int j = 0; j < B_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int n = g.block_n + v / CHUNKS;
        const int k = k0 + (v % CHUNKS) * 8;
        s->b[j] = __builtin_bit_cast(hk_u32x4, hk_global_load_bf16x8(g.B + (long)n * g.ldb + k, n < N ? K - k : 0, g.vec_b));
    }
]],
[[#pragma unroll
    for (int u = 0; u < B_UNITS_PER_THREAD; ++u) {
        const int w = hk_thread_id() + GEMM_THREADS * u;
        if (B_UNITS % GEMM_THREADS == 0 || w < B_UNITS) {
            const int n = g.block_n + (w / KGROUPS) * 8;
#pragma unroll
            for (int i = 0; i < KG; ++i) {
                const int k = k0 + (w % KGROUPS) * KG + i;
                s->b[u * KG + i] = __builtin_bit_cast(hk_u32x4, hk_global_load_bf16x8(g.B + (long)k * g.ldb + n, k < K ? N - n : 0, g.vec_b));
            }
        }
    }
]])])


# hkm_gemm_b_store()
# -----------------
# Registers -> LDS for the B k-tile, always as [n][k] (k innermost).
m4_define([hkm_gemm_b_store], [hkm_if_param([layout], [nt],
[[#pragma unroll
    for (int j = 0; j < B_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        hk_lds_store_b128(lds, b_off + gemm_lds_off(v / CHUNKS, v % CHUNKS), s->b[j]);
    }
]],
[[    // KG = 4 rows k of 8 n -> for each n, 4 consecutive k (8 bytes)
#pragma unroll
    for (int u = 0; u < B_UNITS_PER_THREAD; ++u) {
        const int w = hk_thread_id() + GEMM_THREADS * u;
        if (B_UNITS % GEMM_THREADS == 0 || w < B_UNITS) {
            const int n8 = (w / KGROUPS) * 8, kq = (w % KGROUPS) * KG;
            const hk_u32x4 *r = &s->b[u * KG];
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int sh = (j % 2) * 16;
                const unsigned e0 = (r[0][j / 2] >> sh) & 0xffffu, e1 = (r[1][j / 2] >> sh) & 0xffffu;
                const unsigned e2 = (r[2][j / 2] >> sh) & 0xffffu, e3 = (r[3][j / 2] >> sh) & 0xffffu;
                const hk_u32x2 pk = {e0 | (e1 << 16), e2 | (e3 << 16)};
                hk_lds_store_b64(lds, b_off + gemm_lds_off(n8 + j, kq / 8) + (kq % 8) * 2, pk);
            }
        }
    }
]])])

# ---- split-K (split_k > 1; the plan then holds the tunable split_k) ----
# Grid z is the split: workgroup z multiplies k-tiles kb .. ke - 1 as a GEMM
# of its own (A and B moved to its first k, K its range), stores its fp32
# partial tile to the workspace (register order: 16 bytes per 16x16
# fragment and lane, (f * GEMM_THREADS + thread) * 4 floats into its tile's
# slot, f = i * FRAG_N + j), fences and counts; the workgroup that completes
# the tile's count adds the partials in split order and stores C, then sets
# the counter back to 0 (gen/op_gemm.c gemm_plan_split_amd).
#
# hkm_gemm_if_split(IF-SPLIT, ELSE)
m4_define([hkm_gemm_if_split], [m4_ifdef([hkm_t_split_k], [$1], [$2])])

m4_define([hkm_gemm_split_config], [[
// ---- split-K -------------------------------------------------------------------
static constexpr int SPLIT_K = ]hkm_tune([split_k])[;
static constexpr int SLOT_FLOATS = TILE_M * TILE_N; // one split's partial tile

// Stores this split's partial, counts it; in the workgroup that completed
// the tile's count, adds every split's partial in split order (its own from
// registers, the value it stored) and stores C. acc is only read.
HK_DEVICE void gemm_split_epilogue(hk_lds_t lds, float *ws, int *counters, long tile, hk_bf16 *C, int ldc, int M,
                                   int N, int block_m, int block_n, int wave_m, int wave_n,
                                   const hk_mfma16_acc_t (&acc)[FRAG_M][FRAG_N])
{
    const int tid = hk_thread_id(), lane = hk_lane_id(), z = hk_block_id_z();
    float *slots = ws + tile * SPLIT_K * SLOT_FLOATS + (long)tid * 4;
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            hk_u32x4 v;
#pragma unroll
            for (int r = 0; r < 4; ++r)
                v[r] = hk_f32_as_u32(acc[i][j][r]);
            hk_global_store_b128(slots + (long)z * SLOT_FLOATS + (i * FRAG_N + j) * GEMM_THREADS * 4, v);
        }
    hk_fence_device(); // the partial, before the count
    hk_barrier();      // also: every wave is done with the LDS stages
    if (tid == 0) {
        int *cnt = counters + tile;
        const bool last = hk_atomic_add_i32(cnt, 1) == SPLIT_K - 1;
        if (last)
            hk_global_store_b32(cnt, 0u); // for the next launch
        hk_lds_store_b32(lds, 0, last ? 1u : 0u);
    }
    hk_barrier();
    if (!hk_uniform_i32((int)hk_lds_load_b32(lds, 0)))
        return;
    hk_fence_device(); // the other splits' partials, after the count
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int q = 0; q < SPLIT_K; ++q) {
                if (q == z) {
#pragma unroll
                    for (int r = 0; r < 4; ++r)
                        s[r] += acc[i][j][r];
                } else {
                    const hk_u32x4 v = hk_global_load_b128(slots + (long)q * SLOT_FLOATS + (i * FRAG_N + j) * GEMM_THREADS * 4);
#pragma unroll
                    for (int r = 0; r < 4; ++r)
                        s[r] += hk_u32_as_f32(v[r]);
                }
            }
            // element r of lane l: C[(l / 16) * 4 + r][l % 16] of the 16x16 fragment
            const int n = block_n + wave_n * WAVE_N + j * 16 + lane % 16;
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int m = block_m + wave_m * WAVE_M + i * 16 + (lane / 16) * 4 + r;
                if (m < M && n < N)
                    hk_global_store_bf16(C + (long)m * ldc + n, hk_f32_to_bf16(s[r]));
            }
        }
}
]])

# The split's k range: A and B moved to its first k, then (in a scope
# opened here and closed after the split epilogue) K is the range's length.
m4_define([hkm_gemm_split_range], [[
    // split-K: k-tiles kb .. ke - 1 of this workgroup's split (grid z)
    const int k_all = (K + TILE_K - 1) / TILE_K;
    const int kb = (int)((long)hk_block_id_z() * k_all / SPLIT_K);
    const int ke = (int)((long)(hk_block_id_z() + 1) * k_all / SPLIT_K);
    const int k_split = (ke * TILE_K < K ? ke * TILE_K : K) - kb * TILE_K;
    g.A += (long)kb * TILE_K;
    g.B += ]hkm_if_param([layout], [nt], [[(long)kb * TILE_K]], [[(long)kb * TILE_K * g.ldb]])[;
    {
    const int K = k_split; // the rest of the kernel multiplies this range
]])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
#undef HK_WAVES_PER_SIMD
#define HK_WAVES_PER_SIMD ]hkm_tune([waves_per_simd])[
static constexpr int GEMM_THREADS = ]hkm_block_size[;
static constexpr int TILE_M = ]hkm_param([tile_m])[;     // rows of C per workgroup
static constexpr int TILE_N = ]hkm_param([tile_n])[;     // columns of C per workgroup
static constexpr int TILE_K = ]hkm_tune([tile_k])[;      // k per LDS stage
static constexpr int STAGES = ]hkm_tune([stages])[;      // LDS buffers
static constexpr int WAVES_M = ]hkm_tune([waves_m])[, WAVES_N = ]hkm_tune([waves_n])[;
static constexpr int SWIZZLE_SHIFT = ]hkm_tune([lds_swizzle_shift])[;
static constexpr int GROUP_M = ]hkm_tune([group_m])[;    // tile rows per L2 group
static constexpr bool LDS_DMA = ]hkm_tune([lds_dma])[;    // fast tiles global -> LDS directly (ping-pong)
static constexpr int NWAVES = WAVES_M * WAVES_N;
static constexpr bool PINGPONG = ]hkm_tune([pingpong])[;  // wave groups offset by one phase
static constexpr int WAVE_M = TILE_M / WAVES_M;
static constexpr int WAVE_N = TILE_N / WAVES_N;
static constexpr int FRAG_M = WAVE_M / 16; // 16x16 MFMA tiles per wave
static constexpr int FRAG_N = WAVE_N / 16;
// A fragments read per LDS wait (gemm_mma_stage): in steps that hold no
// next tile in registers across the multiply, and in those that do
static constexpr int A_GROUP = ]hkm_tune([mma_a_group])[;
static constexpr int A_GROUP_STAGED = ]hkm_tune([mma_a_group_staged])[;
static constexpr int CHUNKS = TILE_K / 8;  // 16-byte chunks per LDS row
static constexpr int ROW_BYTES = TILE_K * 2;
static constexpr int LDS_A_BYTES = TILE_M * ROW_BYTES;
static constexpr int LDS_STAGE_BYTES = (TILE_M + TILE_N) * ROW_BYTES;
static constexpr int KSTEP = 32;           // k per operand read: 4 lane groups x 8
// global -> register staging: 16-byte vectors per thread
static constexpr int A_VECS = TILE_M * CHUNKS / GEMM_THREADS;
]hkm_if_param([layout], [nt],
[[static constexpr int B_VECS = TILE_N * CHUNKS / GEMM_THREADS;
]],
[[static constexpr int KG = 4;                        // rows k per load unit
static constexpr int KGROUPS = TILE_K / KG;
static constexpr int B_UNITS = KGROUPS * (TILE_N / 8); // units of KG x 8
static constexpr int B_UNITS_PER_THREAD = (B_UNITS + GEMM_THREADS - 1) / GEMM_THREADS;
static constexpr int B_VECS = B_UNITS_PER_THREAD * KG;
]])[
static_assert(GEMM_THREADS == 64 * WAVES_M * WAVES_N, "one wave per 64 threads");
static_assert(WAVE_M % 16 == 0 && WAVE_N % 16 == 0, "wave tiles of whole 16x16 MFMAs");
static_assert(TILE_M * CHUNKS % GEMM_THREADS == 0, "A tile must split into 16-byte vectors evenly");
static_assert(FRAG_M % A_GROUP == 0 && (A_GROUP_STAGED == 0 || FRAG_M % A_GROUP_STAGED == 0),
              "A fragments in whole groups");
static_assert(CHUNKS == 8 || CHUNKS == 4, "the swizzle permutes the 8 chunks of 128 bytes");
static_assert(TILE_K % KSTEP == 0 && KSTEP == 4 * 8, "a 16-byte read per lane covers 32 k");
static_assert(HK_MFMA16_PER_B128 * HK_MFMA16_K == KSTEP, "16-byte reads feed whole MFMAs");
static_assert(!LDS_DMA || (TILE_M * ROW_BYTES % (1024 * NWAVES) == 0 && TILE_N * ROW_BYTES % (1024 * NWAVES) == 0),
              "direct LDS loads: 1024 bytes per wave instruction");
static_assert(PINGPONG == LDS_DMA && (!PINGPONG || (STAGES == 3 && WAVES_M == 2)),
              "direct loads go with the ping-pong: three stages, two wave groups");
static_assert(STAGES * LDS_STAGE_BYTES <= ]hkm_tune([lds_bytes])[, "LDS budget of the plan");

struct gemm_stage {
    hk_u32x4 a[A_VECS];
    hk_u32x4 b[B_VECS];
};

// what every load needs; a_bytes (b_bytes, layout nt) cover the
// workgroup's rows of A (B), so that rows past M (N) read 0
struct gemm_src {
    const hk_bf16 *A, *B;
    unsigned a_bytes, b_bytes;
    int lda, ldb, block_m, block_n;
    bool vec_a, vec_b;
};

// byte offset of 16-byte chunk c of LDS row r inside a tile. A 128-byte
// line holds one row (TILE_K 64) or two (TILE_K 32: slot = (r % 2) * 4 + c);
// its 8 slots are permuted by a key of the line number
HK_DEVICE int gemm_lds_key(int line)
{
    return CHUNKS == 8 ? (line >> SWIZZLE_SHIFT) % 8 : ((line >> SWIZZLE_SHIFT) % 4) * 2;
}
HK_DEVICE int gemm_lds_off(int r, int c)
{
    const int line = CHUNKS == 8 ? r : r / 2, slot = CHUNKS == 8 ? c : (r % 2) * 4 + c;
    return line * 128 + (slot ^ gemm_lds_key(line)) * 16;
}

// ---- global -> registers: k-tile at k0 ---------------------------------------
HK_DEVICE void gemm_load_fast_a(gemm_stage *s, const gemm_src &g, int k0)
{
    // the buffers start at column k0: the lanes' offsets stay the same every step
    const hk_buffer_t a = hk_buffer_make(g.A + (long)g.block_m * g.lda + k0, g.a_bytes);
    // A is M x K: chunk v % CHUNKS of row v / CHUNKS, 8 lanes per 128-byte row
#pragma unroll
    for (int j = 0; j < A_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        s->a[j] = hk_buffer_load_b128(a, ((v / CHUNKS) * g.lda + (v % CHUNKS) * 8) * 2);
    }
}

HK_DEVICE void gemm_load_fast_b(gemm_stage *s, const gemm_src &g, int k0)
{
]hkm_gemm_b_fast()[}

HK_DEVICE void gemm_load_edge(gemm_stage *s, const gemm_src &g, int M, int N, int K, int k0)
{
#pragma unroll
    for (int j = 0; j < A_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int m = g.block_m + v / CHUNKS;
        const int k = k0 + (v % CHUNKS) * 8;
        s->a[j] = __builtin_bit_cast(hk_u32x4, hk_global_load_bf16x8(g.A + (long)m * g.lda + k, m < M ? K - k : 0, g.vec_a));
    }
]hkm_gemm_b_edge()[}

HK_DEVICE void gemm_load_fast(gemm_stage *s, const gemm_src &g, int k0)
{
    gemm_load_fast_a(s, g, k0);
    gemm_load_fast_b(s, g, k0);
}

// ---- registers -> LDS stage at byte offset a_off -------------------------------
HK_DEVICE void gemm_store_lds_b(hk_lds_t lds, int b_off, const gemm_stage *s)
{
]hkm_gemm_b_store()[}

HK_DEVICE void gemm_store_lds(hk_lds_t lds, int a_off, const gemm_stage *s)
{
#pragma unroll
    for (int j = 0; j < A_VECS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        hk_lds_store_b128(lds, a_off + gemm_lds_off(v / CHUNKS, v % CHUNKS), s->a[j]);
    }
    gemm_store_lds_b(lds, a_off + LDS_A_BYTES, s);
}

// ---- global -> LDS directly (fast tiles, LDS_DMA): k-tile at k0 into the stage at a_off
// A wave instruction fills 1024 contiguous bytes, 8 whole lines; lane l the
// slot l % 8 of line l / 8, so it loads the row and chunk the swizzle puts there.
HK_DEVICE void gemm_dma_rows(hk_lds_t lds, int off, hk_buffer_t buf, int ld, int wave, int rows)
{
    const int lane = hk_lane_id();
#pragma unroll
    for (int j = 0; j < rows * ROW_BYTES / (1024 * NWAVES); ++j) {
        const int line0 = (wave + NWAVES * j) * 8, line = line0 + lane / 8;
        const int slot = (lane % 8) ^ gemm_lds_key(line);
        const int r = CHUNKS == 8 ? line : line * 2 + slot / 4, c = CHUNKS == 8 ? slot : slot % 4;
        hk_buffer_load_lds_b128(buf, (r * ld + c * 8) * 2, lds, off + line0 * 128);
    }
}

// ---- one LDS stage x MFMA: acc += A_tile * B_tile over TILE_K -------------------
// A_GROUP > 0: A fragments A_GROUP at a time, one wait for their operands,
// then an uninterrupted run of MFMAs (the other wave on the SIMD covers the
// wait); 0: all operands read first, waits placed by the compiler (fewer
// registers live at once)
template <int A_GROUP>
HK_DEVICE void gemm_mma_stage(hk_lds_t lds, int a_off, int wave_m, int wave_n,
                              hk_mfma16_acc_t (&acc)[FRAG_M][FRAG_N])
{
    constexpr int AG = A_GROUP > 0 ? A_GROUP : FRAG_M;
    const int lane = hk_lane_id();
    const int b_off = a_off + LDS_A_BYTES;
    // lane l reads row l % 16 of a fragment, chunk (k / 8) + l / 16
    const int row = lane % 16, cq = lane / 16;
#pragma unroll
    for (int kk = 0; kk < TILE_K; kk += KSTEP) {
        hk_u32x4 b[FRAG_N];
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            b[j] = hk_lds_load_b128(lds, b_off + gemm_lds_off(wave_n * WAVE_N + j * 16 + row, kk / 8 + cq));
#pragma unroll
        for (int i0 = 0; i0 < FRAG_M; i0 += AG) {
            hk_u32x4 a[AG];
#pragma unroll
            for (int i = 0; i < AG; ++i)
                a[i] = hk_lds_load_b128(lds, a_off + gemm_lds_off(wave_m * WAVE_M + (i0 + i) * 16 + row, kk / 8 + cq));
            if (A_GROUP > 0) {
                hk_sched_barrier(); // keeps the reads above the wait
                hk_waitcnt_lds();
                hk_sched_barrier();
            }
#pragma unroll
            for (int p = 0; p < HK_MFMA16_PER_B128; ++p)
#pragma unroll
                for (int i = 0; i < AG; ++i)
#pragma unroll
                    for (int j = 0; j < FRAG_N; ++j)
                        acc[i0 + i][j] = hk_mfma_16x16(hk_mfma16_ab_part(a[i], p), hk_mfma16_ab_part(b[j], p),
                                                       acc[i0 + i][j]);
        }
    }
}

// ---- one k step: multiply tile t's stage, bring tile t + 1 in ---------------------
// FAST: tile t + 1 by buffer loads; else masked loads (or none when LOAD is
// false). STAGE: the stage tile t is in (0 or 1), or -1: found from t.
template <bool FAST, int STAGE>
HK_DEVICE void gemm_step(hk_lds_t lds, const gemm_src &g, int M, int N, int K, int t, bool load,
                         int wave_m, int wave_n, hk_mfma16_acc_t (&acc)[FRAG_M][FRAG_N])
{
    gemm_stage s;
    const int st = STAGES == 1 ? 0 : STAGE >= 0 ? STAGE : t & 1;
    if (load) {
        if (FAST)
            gemm_load_fast(&s, g, (t + 1) * TILE_K);
        else
            gemm_load_edge(&s, g, M, N, K, (t + 1) * TILE_K);
    }
    gemm_mma_stage<STAGES == 2 ? A_GROUP_STAGED : A_GROUP>(lds, st * LDS_STAGE_BYTES, wave_m, wave_n, acc);
    if (STAGES == 1)
        hk_barrier(); // every wave is done reading the one stage
    if (load)
        gemm_store_lds(lds, STAGES == 1 ? 0 : (1 - st) * LDS_STAGE_BYTES, &s);
    hk_barrier();
}

// PINGPONG: each step is two phases, X (issue tile t + 1 into its stage) and
// Y (multiply tile t), each ended by a barrier. Wave group 1 (wave_m 1) runs
// one barrier behind group 0, so that on each SIMD, which holds one wave of
// each group, one wave multiplies while the other issues loads; Y raises the
// wave's priority. Three stages make it safe: stage (t + 1) % 3 was last read
// in Y of step t - 2, which group 1 ends two phases before group 0 issues X
// of step t; tile t + 1 has landed (each wave waits for its own loads at the
// end of its Y) a phase before group 0 first reads it.
// STAGE: tile t's stage (t % 3) when known, else -1.
template <bool FAST, int STAGE>
HK_DEVICE void gemm_step_pp(hk_lds_t lds, const gemm_src &g, int M, int N, int K, int t, int k_tiles, int wave,
                            int wave_m, int wave_n, hk_mfma16_acc_t (&acc)[FRAG_M][FRAG_N])
{
    const int st = STAGE >= 0 ? STAGE : t % 3, next = (st + 1) % 3 * LDS_STAGE_BYTES, k0 = (t + 1) * TILE_K;
    if (FAST) {
        gemm_dma_rows(lds, next, hk_buffer_make(g.A + (long)g.block_m * g.lda + k0, g.a_bytes), g.lda, wave, TILE_M);
        gemm_dma_rows(lds, next + LDS_A_BYTES, hk_buffer_make(g.B + (long)g.block_n * g.ldb + k0, g.b_bytes),
                      g.ldb, wave, TILE_N);
    } else if (t + 1 < k_tiles) {
        gemm_stage s;
        gemm_load_edge(&s, g, M, N, K, k0);
        gemm_store_lds(lds, next, &s);
    }
    if (FAST)
        hk_barrier_acquire(); // the loads stay in flight across it
    else
        hk_barrier();
    HK_SETPRIO(1);
    gemm_mma_stage<A_GROUP>(lds, st * LDS_STAGE_BYTES, wave_m, wave_n, acc);
    HK_SETPRIO(0);
    hk_waitcnt_all();
    hk_barrier();
}

]hkm_gemm_if_split([hkm_gemm_split_config])[
// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    hk_bf16 *C = hk_a.C;
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
    // 16-byte vectors need 8-element rows and 16-byte aligned bases
    g.vec_a = (g.lda % 8 == 0) && ((unsigned long)g.A % 16 == 0);
    g.vec_b = (g.ldb % 8 == 0) && ((unsigned long)g.B % 16 == 0);
]hkm_gemm_if_split([hkm_gemm_split_range])[    const int rows_a = M - g.block_m < TILE_M ? M - g.block_m : TILE_M;
    g.a_bytes = (unsigned)rows_a * (unsigned)g.lda * 2u;
]hkm_if_param([layout], [nt],
[[    const int rows_b = N - g.block_n < TILE_N ? N - g.block_n : TILE_N;
    g.b_bytes = (unsigned)rows_b * (unsigned)g.ldb * 2u;
    const bool fast_b = (long)TILE_N * g.ldb < (1L << 30);
]],
[[    g.b_bytes = 0; // layout nn: a buffer per k-tile, made in the fast loads
    const bool fast_b = (long)TILE_K * g.ldb < (1L << 30) && g.block_n + TILE_N <= N;
]])[    // buffer offsets are 32-bit: a tile's rows must span less than 2^31 bytes
    const bool fast = g.vec_a && g.vec_b && (long)TILE_M * g.lda < (1L << 30) && fast_b;

    const int wave = hk_wave_id();
    const int wave_m = wave / WAVES_N, wave_n = wave % WAVES_N;
    const int k_tiles = (K + TILE_K - 1) / TILE_K;
    const int k_fast = fast ? K / TILE_K : 0; // tiles whose loads need no bounds logic

    hk_mfma16_acc_t acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            acc[i][j] = hk_mfma16_acc_zero();

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
    if (PINGPONG) {
        if (wave_m == 1)
            hk_barrier(); // group 1 starts one phase behind
        // three steps per trip: the stages are constants; fast steps left over join the tail
        for (; t + 3 < k_fast; t += 3) {
            gemm_step_pp<true, 0>(hk_lds, g, M, N, K, t, k_tiles, wave, wave_m, wave_n, acc);
            gemm_step_pp<true, 1>(hk_lds, g, M, N, K, t + 1, k_tiles, wave, wave_m, wave_n, acc);
            gemm_step_pp<true, 2>(hk_lds, g, M, N, K, t + 2, k_tiles, wave, wave_m, wave_n, acc);
        }
        for (; t < k_tiles; ++t)
            gemm_step_pp<false, -1>(hk_lds, g, M, N, K, t, k_tiles, wave, wave_m, wave_n, acc);
        if (wave_m == 0)
            hk_barrier(); // and group 0 makes up for it at the end
    } else if (STAGES == 2)
        for (; t + 2 < k_fast; t += 2) {
            gemm_step<true, 0>(hk_lds, g, M, N, K, t, true, wave_m, wave_n, acc);
            gemm_step<true, 1>(hk_lds, g, M, N, K, t + 1, true, wave_m, wave_n, acc);
        }
    else
        for (; t + 1 < k_fast; ++t)
            gemm_step<true, -1>(hk_lds, g, M, N, K, t, true, wave_m, wave_n, acc);
    // an odd fast step left over joins the tail: one copy of the multiply less to compile
    if (!PINGPONG)
        for (; t < k_tiles; ++t)
            gemm_step<false, -1>(hk_lds, g, M, N, K, t, t + 1 < k_tiles, wave_m, wave_n, acc);

]hkm_gemm_if_split([[    // the tile's slots and counter by its launch index (grid x, y)
    gemm_split_epilogue(hk_lds, hk_a.workspace, hk_a.counters, (long)hk_block_id_y() * tiles_n + hk_block_id_x(), C,
                        ldc, M, N, g.block_m, g.block_n, wave_m, wave_n, acc);
    }
}
]hkm_output_end()]], [[    // epilogue: accumulator element r of lane l is
    // C[(l / 16) * 4 + r][l % 16] of its 16x16 tile
    const int lane = hk_lane_id();
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int n = g.block_n + wave_n * WAVE_N + j * 16 + lane % 16;
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int m = g.block_m + wave_m * WAVE_M + i * 16 + (lane / 16) * 4 + r;
                if (m < M && n < N)
                    hk_global_store_bf16(C + (long)m * ldc + n, hk_f32_to_bf16(acc[i][j][r]));
            }
        }
}
]hkm_output_end()])
