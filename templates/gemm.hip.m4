m4_divert(-1)                                                   -*- C -*-
# gemm.hip.m4 - bf16 GEMM with fp32 accumulation and bf16 output (RNE).
#
#   C[M][N] = A[M][K] * op(B)     layout nt: op(B) = B^T, B is N x K row-major
#                                 layout nn: op(B) = B,   B is K x N row-major
#
# Parameters (hkm_p_*): M, N, K (baked or `any'), layout (nt|nn), tile_m and
# tile_n (64|128).  Kernel arguments (hkm_kernarg_struct): A, B, C, lda, ldb,
# ldc, then the run-time ones of M, N, K.
#
# Block: 256 threads = 4 waves in a 2 x 2 grid; each wave owns a
# (tile_m/2) x (tile_n/2) block of C made of 32x32 MFMA tiles.
# Grid: x = cdiv(N, tile_n), y = cdiv(M, tile_m).
# K advances 32 per LDS stage; two LDS stages (double buffering): the next
# k-tile is loaded from global into registers while the current stage is
# multiplied, then written to the other stage; one barrier per step.
# Any M, N, K: loads past the matrix read zeros, stores are masked.
# 16-byte global loads are used when the leading dimension is a multiple of 8
# elements and the base pointer is 16-byte aligned; otherwise element loads.

hkm_check_one_of([layout], [nt], [nn])
hkm_check_one_of([tile_m], [64], [128])
hkm_check_one_of([tile_n], [64], [128])
hkm_param([M])hkm_param([N])hkm_param([K])
m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([gemm needs hkm_block_size 256, got ]hkm_block_size)])


# hkm_gemm_b_load()
# ----------------
# Global -> registers for the B k-tile: the layout decides the shape.
m4_define([hkm_gemm_b_load], [hkm_if_param([layout], [nt],
[[    // B is N x K: like A, 8 consecutive k of one row n per vector
#pragma unroll
    for (int j = 0; j < B_REGS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int r = v / (TILE_K / 8);
        const int c = (v % (TILE_K / 8)) * 8;
        const int n = block_n + r;
        const int k = k0 + c;
        s->b[j] = hk_global_load_bf16x8(B + (long)n * ldb + k, n < N ? K - k : 0, vec_b);
    }
]],
[[    // B is K x N: rows k and k+1, 8 consecutive n each (transposed on the way to LDS)
    const int u = hk_thread_id();
    if (u < B_UNITS) {
        const int k = k0 + 2 * (u / (TILE_N / 8));
        const int n = block_n + (u % (TILE_N / 8)) * 8;
        s->b[0] = hk_global_load_bf16x8(B + (long)k * ldb + n, k < K ? N - n : 0, vec_b);
        s->b[1] = hk_global_load_bf16x8(B + (long)(k + 1) * ldb + n, k + 1 < K ? N - n : 0, vec_b);
    }
]])])


# hkm_gemm_b_store()
# -----------------
# Registers -> LDS for the B k-tile, always as [n][k] (k innermost).
m4_define([hkm_gemm_b_store], [hkm_if_param([layout], [nt],
[[#pragma unroll
    for (int j = 0; j < B_REGS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int r = v / (TILE_K / 8);
        const int c = (v % (TILE_K / 8)) * 8;
        hk_lds_store_b128(lds, b_off + r * LDS_PITCH + c * 2, __builtin_bit_cast(hk_u32x4, s->b[j]));
    }
]],
[[    const int u = hk_thread_id();
    if (u < B_UNITS) {
        const int kk = 2 * (u / (TILE_N / 8));
        const int nn = (u % (TILE_N / 8)) * 8;
        // one 32-bit word = B[k][n], B[k+1][n]: two consecutive k of LDS row n
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const unsigned w = (unsigned)s->b[0][j] | ((unsigned)s->b[1][j] << 16);
            hk_lds_store_b32(lds, b_off + (nn + j) * LDS_PITCH + kk * 2, w);
        }
    }
]])])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int GEMM_THREADS = ]hkm_block_size[;
static constexpr int TILE_M = ]hkm_param([tile_m])[;     // rows of C per workgroup
static constexpr int TILE_N = ]hkm_param([tile_n])[;     // columns of C per workgroup
static constexpr int TILE_K = 32;      // k per LDS stage
static constexpr int WAVE_M = TILE_M / 2;  // 2 x 2 waves
static constexpr int WAVE_N = TILE_N / 2;
static constexpr int FRAG_M = WAVE_M / 32; // 32x32 MFMA tiles per wave
static constexpr int FRAG_N = WAVE_N / 32;
// LDS rows hold TILE_K bf16 (k innermost) plus 16 bytes of padding
static constexpr int LDS_PITCH = TILE_K * 2 + 16;
static constexpr int LDS_A_BYTES = TILE_M * LDS_PITCH;
static constexpr int LDS_STAGE_BYTES = (TILE_M + TILE_N) * LDS_PITCH;
// global -> register staging: 8-bf16 vectors per thread
static constexpr int A_REGS = TILE_M * TILE_K / 8 / GEMM_THREADS;
]hkm_if_param([layout], [nt],
[[static constexpr int B_REGS = TILE_N * TILE_K / 8 / GEMM_THREADS;
]],
[[static constexpr int B_REGS = 2;                       // rows k, k+1
static constexpr int B_UNITS = TILE_K / 2 * TILE_N / 8; // threads with B work
]])[
static_assert(TILE_M * TILE_K % (8 * GEMM_THREADS) == 0, "A tile must split into 8-bf16 vectors evenly");
static_assert(TILE_K % HK_MFMA_K == 0, "TILE_K must be a multiple of the MFMA K");
static_assert(2 * LDS_STAGE_BYTES <= 48 * 1024, "LDS budget");

struct gemm_stage {
    hk_bf16x8 a[A_REGS];
    hk_bf16x8 b[B_REGS];
};

// ---- global -> registers: k-tile starting at k0 ----------------------------
HK_DEVICE void gemm_load(gemm_stage *s, const hk_bf16 *A, const hk_bf16 *B, int lda, int ldb,
                         int M, int N, int K, int block_m, int block_n, int k0,
                         bool vec_a, bool vec_b)
{
    // A is M x K: 8 consecutive k of one row m per vector
#pragma unroll
    for (int j = 0; j < A_REGS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int r = v / (TILE_K / 8);
        const int c = (v % (TILE_K / 8)) * 8;
        const int m = block_m + r;
        const int k = k0 + c;
        s->a[j] = hk_global_load_bf16x8(A + (long)m * lda + k, m < M ? K - k : 0, vec_a);
    }
]hkm_gemm_b_load()[}

// ---- registers -> LDS stage at byte offset a_off ----------------------------
HK_DEVICE void gemm_store_lds(hk_lds_t lds, int a_off, const gemm_stage *s)
{
    const int b_off = a_off + LDS_A_BYTES;
#pragma unroll
    for (int j = 0; j < A_REGS; ++j) {
        const int v = hk_thread_id() + GEMM_THREADS * j;
        const int r = v / (TILE_K / 8);
        const int c = (v % (TILE_K / 8)) * 8;
        hk_lds_store_b128(lds, a_off + r * LDS_PITCH + c * 2, __builtin_bit_cast(hk_u32x4, s->a[j]));
    }
]hkm_gemm_b_store()[}

// ---- one LDS stage x MFMA: acc += A_tile * B_tile over TILE_K ----------------
HK_DEVICE void gemm_mma_stage(hk_lds_t lds, int a_off, int wave_m, int wave_n,
                              hk_mfma_acc_t (&acc)[FRAG_M][FRAG_N])
{
    const int lane = hk_lane_id();
    const int b_off = a_off + LDS_A_BYTES;
    // lane l supplies row/column l % 32 and k = (l / 32) * HK_MFMA_KPL + j
    const int row = lane % 32;
    const int kq = (lane / 32) * HK_MFMA_KPL;
#pragma unroll
    for (int kk = 0; kk < TILE_K; kk += HK_MFMA_K) {
        hk_mfma_ab_t a[FRAG_M], b[FRAG_N];
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
            a[i] = hk_lds_load_mfma_ab(lds, a_off + (wave_m * WAVE_M + i * 32 + row) * LDS_PITCH + (kk + kq) * 2);
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            b[j] = hk_lds_load_mfma_ab(lds, b_off + (wave_n * WAVE_N + j * 32 + row) * LDS_PITCH + (kk + kq) * 2);
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j)
                acc[i][j] = hk_mfma_32x32(a[i], b[j], acc[i][j]);
    }
}

// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    const hk_bf16 *A = hk_a.A;
    const hk_bf16 *B = hk_a.B;
    hk_bf16 *C = hk_a.C;
    const int lda = hk_a.lda, ldb = hk_a.ldb, ldc = hk_a.ldc;

    HK_LDS_DECLARE(2 * LDS_STAGE_BYTES);

    const int block_m = hk_block_id_y() * TILE_M;
    const int block_n = hk_block_id_x() * TILE_N;
    const int wave = hk_wave_id();
    const int wave_m = wave / 2, wave_n = wave % 2;
    const int k_tiles = (K + TILE_K - 1) / TILE_K;

    // 16-byte global loads need 8-element rows and 16-byte aligned bases
    const bool vec_a = (lda % 8 == 0) && ((unsigned long)A % 16 == 0);
    const bool vec_b = (ldb % 8 == 0) && ((unsigned long)B % 16 == 0);

    hk_mfma_acc_t acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            acc[i][j] = hk_mfma_acc_zero();

    // prologue: k-tile 0 into LDS stage 0
    gemm_stage s;
    gemm_load(&s, A, B, lda, ldb, M, N, K, block_m, block_n, 0, vec_a, vec_b);
    gemm_store_lds(hk_lds, 0, &s);
    hk_barrier();

    // main loop: prefetch tile t+1 to registers, multiply stage t % 2,
    // write tile t+1 to the other stage, one barrier
    for (int t = 0; t < k_tiles; ++t) {
        const int cur = (t & 1) * LDS_STAGE_BYTES;
        const bool more = t + 1 < k_tiles;
        if (more)
            gemm_load(&s, A, B, lda, ldb, M, N, K, block_m, block_n, (t + 1) * TILE_K, vec_a, vec_b);
        gemm_mma_stage(hk_lds, cur, wave_m, wave_n, acc);
        if (more)
            gemm_store_lds(hk_lds, LDS_STAGE_BYTES - cur, &s);
        hk_barrier();
    }

    // epilogue: accumulator element r of lane l is
    // C[(r / 4) * 8 + (l / 32) * 4 + r % 4][l % 32] of its 32x32 tile
    const int lane = hk_lane_id();
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int n = block_n + wave_n * WAVE_N + j * 32 + lane % 32;
#pragma unroll
            for (int r = 0; r < 16; ++r) {
                const int m = block_m + wave_m * WAVE_M + i * 32 + (r / 4) * 8 + (lane / 32) * 4 + r % 4;
                if (m < M && n < N)
                    hk_global_store_bf16(C + (long)m * ldc + n, hk_f32_to_bf16(acc[i][j][r]));
            }
        }
}
]hkm_output_end()
