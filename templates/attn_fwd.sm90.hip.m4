m4_divert(-1)                                                   -*- C -*-
# attn_fwd.sm90.hip.m4 - attention forward, FlashAttention-2 style, NVIDIA
# Hopper (sm_90a) version of attn_fwd.hip.m4: the same parameters, kernel
# arguments, grid, block and semantics.
#
#   O[b][i][h][:] = sum_j softmax_j(scale * q_i . k_j) v_j     (keys j of KV head h / (Hq/Hk))
#   LSE[b][h][i]  = log sum_j exp(scale * q_i . k_j)          (fp32, [batch][heads_q][seqlen_q])
#   causal: key j visible iff j <= i + (seqlen_k - seqlen_q) (bottom-right aligned);
#   a row with no visible key gives O = 0 and LSE = -inf.
#
# Parameters (hkm_p_*): dtype (bf16), head_dim (64|128), causal (baked bool),
# batch, seqlen_q, seqlen_k, heads_q, heads_k (baked or `any').  Kernel
# arguments (hkm_kernarg_struct): Q, K, V, O, LSE (may be null), element
# strides {q,k,v,o}_stride_{b,s,h} (head_dim contiguous), scale, then the
# run-time ones of the dimensions.
#
# Grid: x = cdiv(seqlen_q, 128) (walked last tile first, so that the longest
# causal tiles start first), y = heads_q, z = batch.  Block: 256 threads =
# 8 warps; warp w owns queries q0 + 16 w .. q0 + 16 w + 15.
#
# Per warp and K/V block of BLOCK_N = 64 keys, mma.sync m16n8k16 bf16 -> fp32:
#   S = Q K^T      A = Q from registers (ldmatrix'ed once from shared memory),
#                  B = K rows from shared memory (ldmatrix, k = d innermost).
#                  Lane l (g = l/4, t = l%4) holds rows g and g+8 of S, keys
#                  8j + 2t, 8j + 2t + 1 of each n8 tile j: the row max and
#                  sum are in-lane reductions plus two shuffles in the quad.
#   online softmax in base 2 (log2(e) folded into the scale), fp32, exp2.
#   O += P V       A = P: the S accumulator rounded to bf16, as is (the D
#                  layout of two n8 tiles is the A layout of one k16 step),
#                  B = V rows from shared memory through ldmatrix .trans.
#
# Shared memory (static, <= 48 KiB): three tiles of BLOCK_N x D bf16: K[0],
# K[1] (double buffer) and V; rows are 16-byte chunks XOR-swizzled by row % 8
# (ldmatrix conflict-free).  The 128 x D Q tile passes through K[1] and V
# before the loop.  Asynchronous copies (cp.async, zero fill past seqlen):
#   iteration t:  wait K(t); barrier; issue V(t) -> V, K(t+1) -> K[(t+1)%2];
#                 S = Q K(t)^T, softmax; wait V(t); barrier; O += P V(t).
# Keys past seqlen_k are zero rows and are masked to -inf; queries past
# seqlen_q are zero rows and are not stored.  Strides that are not multiples
# of 8 (or unaligned bases) take element loads into the same tiles.
# Causal: blocks past the diagonal are never loaded; a warp whose rows see no
# key of a block skips it (warp-uniform); masking code runs only for blocks
# that straddle the causal diagonal or seqlen_k.

hkm_check_one_of([dtype], [bf16])
hkm_check_one_of([head_dim], [64], [128])
hkm_if_true([causal], [], [])
hkm_param([batch])hkm_param([seqlen_q])hkm_param([seqlen_k])hkm_param([heads_q])hkm_param([heads_k])
m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([attn_fwd needs hkm_block_size 256, got ]hkm_block_size)])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr bool CAUSAL = ]hkm_if_true([causal], [true], [false])[;
static constexpr int WARPS = ATTN_THREADS / HK_WAVE_SIZE;
static constexpr int BLOCK_M = 16 * WARPS;                 // queries per block
static constexpr int BLOCK_N = 64;                         // keys per K/V tile
static constexpr int ROW_BYTES = D * 2;                    // one row of a tile
static constexpr int CHUNKS = D / 8;                       // 16-byte chunks per row
static constexpr int TILE_BYTES = BLOCK_N * ROW_BYTES;     // one K or V tile
static constexpr int K0_OFF = 0, K1_OFF = TILE_BYTES, V_OFF = 2 * TILE_BYTES;
static constexpr int Q_OFF = TILE_BYTES;                   // Q (BLOCK_M rows) over K[1] and V
static constexpr int LDS_BYTES = 3 * TILE_BYTES;
static constexpr int KV_CHUNKS = BLOCK_N * CHUNKS / ATTN_THREADS;   // 16-byte copies per thread and tile
static constexpr int Q_CHUNKS = BLOCK_M * CHUNKS / ATTN_THREADS;
static constexpr int K_STEPS = D / 16;                     // k16 steps of Q K^T
static constexpr int S_TILES = BLOCK_N / 8;                // n8 tiles of S per warp
static constexpr int PV_STEPS = BLOCK_N / 16;              // k16 steps of P V
static constexpr int O_TILES = D / 8;                      // n8 tiles of O per warp
static constexpr float LOG2E = 1.44269504088896340736f;
static constexpr float LN2 = 0.693147180559945309417f;

static_assert(BLOCK_M == 128, "the grid (op_attn.c) assumes 128 queries per block");
static_assert(BLOCK_M * ROW_BYTES <= 2 * TILE_BYTES, "Q fits over K[1] and V");
static_assert(BLOCK_N * CHUNKS % ATTN_THREADS == 0, "tiles split into 16-byte chunks evenly");
static_assert(LDS_BYTES <= 48 * 1024, "static shared memory budget");
static_assert(TILE_BYTES % 256 == 0 && (ROW_BYTES % 256 == 0 || D / 16 <= 4),
              "ldmatrix offsets: k16 steps XOR bits 5..7 that tile and row bases leave clear");

// Byte offset of 16-byte chunk c of row r in a tile of D-wide rows: chunk
// XOR r % 8, so the 8 rows one ldmatrix phase reads hit 8 bank groups.
HK_DEVICE int swz(int r, int c) { return r * ROW_BYTES + ((c ^ (r & 7)) << 4); }

// 8 bf16 at src (n_valid of them in range, <= 0: none) into 16 bytes of
// shared memory at off; `base' is any valid address of the same tensor.
template <bool VEC>
HK_DEVICE void attn_copy_chunk(hk_lds_t lds, int off, const hk_bf16 *src, const hk_bf16 *base, bool valid)
{
    if (VEC) {
        hk_async_load_b128(lds, off, valid ? (const void *)src : (const void *)base, valid ? 16 : 0);
    } else {
        const hk_bf16x8 v = hk_global_load_bf16x8(src, valid ? 8 : 0, false);
        hk_u32x4 w;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            w[j] = (unsigned)v[2 * j] | ((unsigned)v[2 * j + 1] << 16);
        hk_lds_store_b128(lds, off, w);
    }
}

// rows row0 .. row0 + ROWS - 1 of a [seq][D] head (row stride ss, rows >= n
// read as zeros) into the tile at off.  Thread tid copies chunk tid % CHUNKS
// of rows tid / CHUNKS + j * ROWS_PER_J: its source advances by ROWS_PER_J
// rows and its destination by as many tile rows (a multiple of 8: the same
// swizzle), so only the first address is computed.
static constexpr int ROWS_PER_J = ATTN_THREADS / CHUNKS;
static_assert(ATTN_THREADS % CHUNKS == 0 && ROWS_PER_J % 8 == 0, "copy rows keep the swizzle");
template <bool VEC, int ROWS>
HK_DEVICE void attn_copy_tile(hk_lds_t lds, int off, const hk_bf16 *head, long ss, int row0, int n)
{
    constexpr int PER_THREAD = ROWS * CHUNKS / ATTN_THREADS;
    const int tid = hk_thread_id();
    const int r = tid / CHUNKS, c = tid % CHUNKS;
    const hk_bf16 *src = head + (long)(row0 + r) * ss + c * 8;
    const int dst = off + swz(r, c);
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j)
        attn_copy_chunk<VEC>(lds, dst + j * ROWS_PER_J * ROW_BYTES, src + (long)j * ROWS_PER_J * ss, head,
                             row0 + r + j * ROWS_PER_J < n);
}

// ---- one K/V block for one warp ------------------------------------------------
// S = Q K^T from the K tile at k_off; online softmax (MASKED: keys > klim[h]
// of row h (g, g + 8) are -inf); then, after the V tile is ready (wait_v),
// O += P V.  m_run: running max of the scaled scores (base 2) of rows g, g+8;
// l_run: this lane's partial sums (its keys; the quad is added at the end).
template <bool MASKED>
HK_DEVICE void attn_scores(hk_lds_t lds, int k_off, const hk_u32x4 (&qf)[K_STEPS], float c, int kb,
                           const int (&klim)[2], float (&m_run)[2], float (&l_run)[2],
                           hk_mma_acc_t (&o)[O_TILES], hk_u32x4 (&p)[PV_STEPS])
{
    const int lane = hk_lane_id();
    const float neg_inf = -__builtin_huge_valf();

    hk_mma_acc_t s[S_TILES];
#pragma unroll
    for (int j = 0; j < S_TILES; ++j)
        s[j] = hk_mma_acc_zero();
    // [key][d]: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
    // Chunk 2 kk + bit of row n is at (2 kk + bit) ^ (n % 8): the k16 step kk
    // XORs kk << 5 into the offset of step 0 (the tile and row bases have
    // bits 4..7 clear), and n-tile pair jp adds 16 rows.
    const int k_base = k_off + swz((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
#pragma unroll
    for (int kk = 0; kk < K_STEPS; ++kk) {
#pragma unroll
        for (int jp = 0; jp < S_TILES / 2; ++jp) {
            const hk_u32x4 b = hk_lds_load_mma_x4(lds, (k_base ^ (kk << 5)) + jp * 16 * ROW_BYTES);
            hk_mma_16x8x16(qf[kk], b[0], b[1], s[2 * jp]);
            hk_mma_16x8x16(qf[kk], b[2], b[3], s[2 * jp + 1]);
        }
    }

    // scale (base 2), mask, row max: in lane, then over the quad
    float mx[2] = {neg_inf, neg_inf};
#pragma unroll
    for (int j = 0; j < S_TILES; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            float x = s[j][e] * c;
            if (MASKED) {
                const int key = kb + j * 8 + (lane & 3) * 2 + (e & 1);
                if (key > klim[e >> 1])
                    x = neg_inf;
            }
            s[j][e] = x;
            mx[e >> 1] = hk_maxf(mx[e >> 1], x);
        }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        mx[h] = hk_maxf(mx[h], hk_shfl_xor_f32(mx[h], 1));
        mx[h] = hk_maxf(mx[h], hk_shfl_xor_f32(mx[h], 2));
    }
    float neg_m[2], alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const float m_new = hk_maxf(m_run[h], mx[h]);
        const float m_use = m_new == neg_inf ? 0.0f : m_new;  // no key seen yet: keep exp2 finite
        alpha[h] = hk_exp2f(m_run[h] - m_use);
        neg_m[h] = -m_use;
        m_run[h] = m_new;
    }

    // P = exp2(S - m) in bf16, straight into the A operands of P V:
    // step st = n8 tiles 2st (words 0, 1) and 2st + 1 (words 2, 3)
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) {
        const float e0 = hk_exp2f(s[j][0] + neg_m[0]);
        const float e1 = hk_exp2f(s[j][1] + neg_m[0]);
        const float e2 = hk_exp2f(s[j][2] + neg_m[1]);
        const float e3 = hk_exp2f(s[j][3] + neg_m[1]);
        sum[0] += e0 + e1;
        sum[1] += e2 + e3;
        p[j / 2][(j % 2) * 2] = hk_f32x2_to_bf16x2(e0, e1);
        p[j / 2][(j % 2) * 2 + 1] = hk_f32x2_to_bf16x2(e2, e3);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
        l_run[h] = l_run[h] * alpha[h] + sum[h];
#pragma unroll
    for (int i = 0; i < O_TILES; ++i) {
        o[i][0] *= alpha[0];
        o[i][1] *= alpha[0];
        o[i][2] *= alpha[1];
        o[i][3] *= alpha[1];
    }
}

// O += P V from the V tile at v_off
HK_DEVICE void attn_pv(hk_lds_t lds, int v_off, const hk_u32x4 (&p)[PV_STEPS], hk_mma_acc_t (&o)[O_TILES])
{
    const int lane = hk_lane_id();
    // [key][d], transposed: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15);
    // d-tile pair ip XORs ip << 5 into the offset (as for K), step st adds 16 rows
    const int v_base = v_off + swz((lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
#pragma unroll
    for (int st = 0; st < PV_STEPS; ++st) {
#pragma unroll
        for (int ip = 0; ip < O_TILES / 2; ++ip) {
            const hk_u32x4 b = hk_lds_load_mma_x4_trans(lds, (v_base ^ (ip << 5)) + st * 16 * ROW_BYTES);
            hk_mma_16x8x16(p[st], b[0], b[1], o[2 * ip]);
            hk_mma_16x8x16(p[st], b[2], b[3], o[2 * ip + 1]);
        }
    }
}

// ---- the K/V loop of one block ---------------------------------------------------
// warp_last: the last key any row of the warp sees; warp_full: the last key
// every row of the warp sees (both warp-uniform); klim: per row.
template <bool VEC>
HK_DEVICE void attn_kv_loop(hk_lds_t lds, const hk_bf16 *Qh, const hk_bf16 *Kh, const hk_bf16 *Vh, long q_ss,
                            long k_ss, long v_ss, int q0, int Sq, int Sk, int n_blocks, int warp_last,
                            int warp_full, const int (&klim)[2], float c, float (&m_run)[2],
                            float (&l_run)[2], hk_mma_acc_t (&o)[O_TILES])
{
    const int lane = hk_lane_id();
    const int warp = hk_wave_id();

    // prologue: Q over K[1] and V, K(0) into K[0]
    attn_copy_tile<VEC, BLOCK_M>(lds, Q_OFF, Qh, q_ss, q0, Sq);
    hk_async_commit();
    if (n_blocks > 0)
        attn_copy_tile<VEC, BLOCK_N>(lds, K0_OFF, Kh, k_ss, 0, Sk);
    hk_async_commit();
    hk_async_wait<1>();
    hk_barrier();
    // Q as A operands, once: matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15)
    hk_u32x4 qf[K_STEPS];
#pragma unroll
    for (int kk = 0; kk < K_STEPS; ++kk)
        qf[kk] = hk_lds_load_mma_x4(lds, Q_OFF + swz(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)));

    for (int t = 0; t < n_blocks; ++t) {
        const int kb = t * BLOCK_N;
        const int k_off = (t & 1) ? K1_OFF : K0_OFF;
        // K(t) has landed (for t = 0 this also orders the Q reads above
        // before the copies into K[1] and V below)
        hk_async_wait<0>();
        hk_barrier();
        attn_copy_tile<VEC, BLOCK_N>(lds, V_OFF, Vh, v_ss, kb, Sk);
        hk_async_commit();
        if (t + 1 < n_blocks)
            attn_copy_tile<VEC, BLOCK_N>(lds, (t & 1) ? K0_OFF : K1_OFF, Kh, k_ss, kb + BLOCK_N, Sk);
        hk_async_commit();

        const bool active = kb <= warp_last;              // warp-uniform
        hk_u32x4 p[PV_STEPS];
        if (active) {
            if (kb + BLOCK_N - 1 > warp_full)
                attn_scores<true>(lds, k_off, qf, c, kb, klim, m_run, l_run, o, p);
            else
                attn_scores<false>(lds, k_off, qf, c, kb, klim, m_run, l_run, o, p);
        }
        hk_async_wait<1>();                                // V(t) has landed
        hk_barrier();
        if (active)
            attn_pv(lds, V_OFF, p, o);
    }
    hk_async_wait<0>();
}

// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    (void)head_dim;
    (void)causal;
    (void)batch;
    const int Sq = seqlen_q, Sk = seqlen_k;
    const int q0 = (hk_grid_dim_x() - 1 - hk_block_id_x()) * BLOCK_M;
    const int hq = hk_block_id_y();
    const int b = hk_block_id_z();
    const int hkv = hq / (heads_q / heads_k);
    const int warp = hk_wave_id();
    const int lane = hk_lane_id();

    const hk_bf16 *Qh = hk_a.Q + (long)b * hk_a.q_stride_b + (long)hq * hk_a.q_stride_h;
    const hk_bf16 *Kh = hk_a.K + (long)b * hk_a.k_stride_b + (long)hkv * hk_a.k_stride_h;
    const hk_bf16 *Vh = hk_a.V + (long)b * hk_a.v_stride_b + (long)hkv * hk_a.v_stride_h;
    hk_bf16 *Oh = hk_a.O + (long)b * hk_a.o_stride_b + (long)hq * hk_a.o_stride_h;

    // 16-byte copies need 8-element strides and 16-byte aligned bases
    const bool vec = (hk_a.q_stride_b % 8 == 0) && (hk_a.q_stride_s % 8 == 0) && (hk_a.q_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.Q % 16 == 0) && (hk_a.k_stride_b % 8 == 0) &&
                     (hk_a.k_stride_s % 8 == 0) && (hk_a.k_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.K % 16 == 0) && (hk_a.v_stride_b % 8 == 0) &&
                     (hk_a.v_stride_s % 8 == 0) && (hk_a.v_stride_h % 8 == 0) &&
                     ((unsigned long)hk_a.V % 16 == 0);

    HK_LDS_DECLARE(LDS_BYTES);

    // keys the block, this warp and this lane's rows may see
    const int diag = Sk - Sq;                            // causal: key j visible iff j <= i + diag
    const int kend = CAUSAL ? (q0 + BLOCK_M + diag < Sk ? q0 + BLOCK_M + diag : Sk) : Sk;
    const int n_blocks = kend > 0 ? (kend + BLOCK_N - 1) / BLOCK_N : 0;
    const int wq0 = q0 + warp * 16;                      // warp-uniform
    const int warp_last = CAUSAL ? (wq0 + 15 + diag < Sk - 1 ? wq0 + 15 + diag : Sk - 1) : Sk - 1;
    const int warp_full = CAUSAL ? (wq0 + diag < Sk - 1 ? wq0 + diag : Sk - 1) : Sk - 1;
    const int row0 = wq0 + (lane >> 2);                  // this lane's rows: row0, row0 + 8
    int klim[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int qi = row0 + 8 * h;
        klim[h] = CAUSAL ? (qi + diag < Sk - 1 ? qi + diag : Sk - 1) : Sk - 1;
    }

    const float c = hk_a.scale * LOG2E;                  // scores in base 2

    hk_mma_acc_t o[O_TILES];
#pragma unroll
    for (int i = 0; i < O_TILES; ++i)
        o[i] = hk_mma_acc_zero();
    const float neg_inf = -__builtin_huge_valf();
    float m_run[2] = {neg_inf, neg_inf}, l_run[2] = {0.0f, 0.0f};

    if (vec)
        attn_kv_loop<true>(hk_lds, Qh, Kh, Vh, hk_a.q_stride_s, hk_a.k_stride_s, hk_a.v_stride_s, q0, Sq, Sk,
                           n_blocks, warp_last, warp_full, klim, c, m_run, l_run, o);
    else
        attn_kv_loop<false>(hk_lds, Qh, Kh, Vh, hk_a.q_stride_s, hk_a.k_stride_s, hk_a.v_stride_s, q0, Sq, Sk,
                            n_blocks, warp_last, warp_full, klim, c, m_run, l_run, o);

    // epilogue: the quad's sums, normalise, store rows row0 and row0 + 8
    // (lane holds O[row][8i + 2t, 8i + 2t + 1] of each n8 tile i)
    const bool vec_o = (hk_a.o_stride_b % 2 == 0) && (hk_a.o_stride_s % 2 == 0) && (hk_a.o_stride_h % 2 == 0) &&
                       ((unsigned long)hk_a.O % 4 == 0);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float l = l_run[h];
        l += hk_shfl_xor_f32(l, 1);
        l += hk_shfl_xor_f32(l, 2);
        const int qi = row0 + 8 * h;
        if (qi >= Sq)
            continue;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        hk_bf16 *Oq = Oh + (long)qi * hk_a.o_stride_s + (lane & 3) * 2;
#pragma unroll
        for (int i = 0; i < O_TILES; ++i) {
            const float lo = o[i][2 * h] * inv, hi = o[i][2 * h + 1] * inv;
            if (vec_o) {
                hk_global_store_b32(Oq + i * 8, hk_f32x2_to_bf16x2(lo, hi));
            } else {
                hk_global_store_bf16(Oq + i * 8, hk_f32_to_bf16(lo));
                hk_global_store_bf16(Oq + i * 8 + 1, hk_f32_to_bf16(hi));
            }
        }
        if (hk_a.LSE && (lane & 3) == 0)
            hk_global_store_f32(hk_a.LSE + ((long)b * heads_q + hq) * Sq + qi,
                                l > 0.0f ? (m_run[h] + hk_log2f(l)) * LN2 : neg_inf);
    }
}
]hkm_output_end()