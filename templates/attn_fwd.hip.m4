m4_divert(-1)                                                   -*- C -*-
# attn_fwd.hip.m4 - attention forward, FlashAttention-2 style, bf16 in/out,
# fp32 softmax and accumulation, row log-sum-exp as a second output.
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
# Grid: x = cdiv(seqlen_q, 128), y = heads_q, z = batch.  Block: 256 threads =
# 4 waves; wave w owns queries q0 + 32 w .. q0 + 32 w + 31.
#
# Per wave and K/V block of BLOCK_N keys (32-key subtiles):
#   S^T = K Q^T    32x32 MFMA with A = K rows from LDS, B = Q^T from registers
#                  (loaded once).  D layout: lane l holds query l % 32 and keys
#                  (r/4)*8 + (l/32)*4 + r%4 of each subtile, so the row max and
#                  sum are in-lane reductions plus one exchange of the lane
#                  halves (hk_swap_halves); the sum is exchanged only at the end.
#   online softmax in base 2 (log2(e) folded into the scale), fp32.
#   O^T += V^T P^T  A = V^T from LDS (stored transposed, keys innermost),
#                  B = P^T: the S^T accumulator converted to bf16, as is.
#                  KPL 4: D registers 4s..4s+3 are keys 8s+4h..8s+4h+3, which is
#                  B's order for step s.  KPL 8: registers 8s..8s+7 of lane half
#                  h are keys 16s+4h+{0..3} and 16s+8+4h+{0..3}, while B's step s
#                  wants 16s+8h+{0..7}: V^T is stored in that permuted key order
#                  (key bits 2 and 3 swapped), the sum over keys does not care.
# Q . K over head_dim: lane half h holds d = 16u + 8h + 0..7 of chunk u, split
# into 8/KPL operands; K is read from LDS in the same d order.
#
# Pipelining as in gemm.hip.m4: two LDS stages; block t+1 is loaded from
# global into registers while block t is computed, then written to the other
# stage; one barrier per block.  Out-of-range keys and queries read the last
# valid row (no branches in the loads); such keys are masked to -inf, such
# queries are not stored.  The K/V loop is instantiated twice: 16-byte loads
# (all strides multiples of 8, aligned bases) and element loads.
# Waves whose queries see no key of a block skip it (wave-uniform); masking
# code runs only for blocks that straddle the causal diagonal or seqlen_k.

hkm_check_one_of([dtype], [bf16])
hkm_check_one_of([head_dim], [64], [128])
hkm_if_true([causal], [], [])
hkm_param([batch])hkm_param([seqlen_q])hkm_param([seqlen_k])hkm_param([heads_q])hkm_param([heads_k])
m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([attn_fwd needs hkm_block_size 256, got ]hkm_block_size)])

# hkm_attn_lds_limit
# ------------------
# LDS bytes a workgroup may use on the target.
m4_define([hkm_attn_lds_limit],
[m4_ifelse(hkm_target, [gfx950], [163840], [65536])])

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr bool CAUSAL = ]hkm_if_true([causal], [true], [false])[;
static constexpr int WAVES = ATTN_THREADS / HK_WAVE_SIZE;
static constexpr int BLOCK_M = 32 * WAVES;                 // queries per workgroup
static constexpr int LDS_LIMIT = ]hkm_attn_lds_limit[;
// LDS stage: K as [key][d] (d innermost), V^T as [d][key] (keys innermost),
// rows padded by 16 bytes
static constexpr int K_PITCH = D * 2 + 16;
static constexpr int attn_stage_bytes(int bn) { return bn * K_PITCH + D * (bn * 2 + 16); }
// keys per block: 64 when two stages fit the target's LDS, else 32
static constexpr int BLOCK_N = 2 * attn_stage_bytes(64) <= LDS_LIMIT ? 64 : 32;
static constexpr int SUB_N = BLOCK_N / 32;                  // 32-key subtiles
static constexpr int VT_PITCH = BLOCK_N * 2 + 16;
static constexpr int LDS_K_BYTES = BLOCK_N * K_PITCH;
static constexpr int LDS_STAGE_BYTES = attn_stage_bytes(BLOCK_N);
static constexpr int LDS_BYTES = 2 * LDS_STAGE_BYTES;
// MFMA plan
static constexpr int D_CHUNKS = D / 16;                     // Q K^T: 16-wide d chunks
static constexpr int AB_PER_CHUNK = 8 / HK_MFMA_KPL;        // operands per 8 bf16 of a lane
static constexpr int D_TILES = D / 32;                      // O^T: 32-row tiles
static constexpr int PV_STEPS = 32 / HK_MFMA_K;             // P V MFMAs per subtile and d tile
// global -> register staging
static constexpr int K_VECS = BLOCK_N * D / 8 / ATTN_THREADS;   // 8-bf16 vectors of K per thread
static constexpr int V_UNITS = BLOCK_N / 2 * D / 8;             // (key pair, 8 d) units of V
static constexpr int V_REGS = (V_UNITS + ATTN_THREADS - 1) / ATTN_THREADS;
static constexpr float LOG2E = 1.44269504088896340736f;
static constexpr float LN2 = 0.693147180559945309417f;

static_assert(BLOCK_M == 128, "the grid (op_attn.c) assumes 128 queries per workgroup");
static_assert(BLOCK_N * D % (8 * ATTN_THREADS) == 0, "K block must split into 8-bf16 vectors evenly");
static_assert(D % 32 == 0 && BLOCK_N % 32 == 0, "32x32 MFMA tiles");
static_assert(8 % HK_MFMA_KPL == 0, "an 8-bf16 vector holds whole MFMA operands");
static_assert(LDS_BYTES <= LDS_LIMIT, "LDS budget");

typedef unsigned short attn_bf16_kpl __attribute__((ext_vector_type(HK_MFMA_KPL)));
typedef unsigned attn_bf16_pairs __attribute__((ext_vector_type(HK_MFMA_KPL / 2)));

struct attn_stage {
    hk_bf16x8 k[K_VECS];
    hk_bf16x8 v[V_REGS][2];     // keys 2m and 2m + 1
};

// Position of key `key` (0..BLOCK_N-1) of a block in the V^T rows: B's k order
// of P^T (see the top comment). Bit 0 is kept, so a key pair stays adjacent.
HK_DEVICE int attn_vt_pos(int key)
{
    if constexpr (HK_MFMA_KPL == 8)
        return (key & ~12) | ((key & 4) << 1) | ((key & 8) >> 1);
    else
        return key;
}

// The 8 bf16 of v, sign bits xor flip, as 8 / HK_MFMA_KPL MFMA operands, in order.
HK_DEVICE void attn_split_ab(hk_bf16x8 v, hk_bf16 flip, hk_mfma_ab_t (&out)[AB_PER_CHUNK])
{
    v ^= flip;
#pragma unroll
    for (int e = 0; e < AB_PER_CHUNK; ++e) {
        attn_bf16_kpl t;
#pragma unroll
        for (int j = 0; j < HK_MFMA_KPL; ++j)
            t[j] = v[e * HK_MFMA_KPL + j];
        out[e] = __builtin_bit_cast(hk_mfma_ab_t, t);
    }
}

// ---- global -> registers: K/V block of keys kb .. kb + BLOCK_N - 1 ------------
// Keys past seqlen_k read row seqlen_k - 1 instead (finite data, no branch):
// their scores are masked to -inf, so P = 0 and their V rows add nothing.
// VEC: 16-byte loads allowed (strides multiples of 8, aligned bases).
template <bool VEC>
HK_DEVICE void attn_load(attn_stage *s, const hk_bf16 *Kh, const hk_bf16 *Vh, long k_ss, long v_ss,
                         int Sk, int kb)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < K_VECS; ++j) {
        const int v = tid + ATTN_THREADS * j;
        const int key = kb + v / (D / 8);
        const int c = (v % (D / 8)) * 8;
        s->k[j] = hk_global_load_bf16x8(Kh + (long)(key < Sk ? key : Sk - 1) * k_ss + c, 8, VEC);
    }
#pragma unroll
    for (int j = 0; j < V_REGS; ++j) {
        const int u = tid + ATTN_THREADS * j;
        if (V_UNITS % ATTN_THREADS == 0 || u < V_UNITS) {
            const int key = kb + 2 * (u % (BLOCK_N / 2));
            const int c = (u / (BLOCK_N / 2)) * 8;
            s->v[j][0] = hk_global_load_bf16x8(Vh + (long)(key < Sk ? key : Sk - 1) * v_ss + c, 8, VEC);
            s->v[j][1] = hk_global_load_bf16x8(Vh + (long)(key + 1 < Sk ? key + 1 : Sk - 1) * v_ss + c, 8, VEC);
        }
    }
}

// ---- registers -> LDS stage at byte offset off --------------------------------
HK_DEVICE void attn_store_lds(hk_lds_t lds, int off, const attn_stage *s)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < K_VECS; ++j) {
        const int v = tid + ATTN_THREADS * j;
        const int r = v / (D / 8);
        const int c = (v % (D / 8)) * 8;
        hk_lds_store_b128(lds, off + r * K_PITCH + c * 2, __builtin_bit_cast(hk_u32x4, s->k[j]));
    }
    // V^T: one 32-bit word = keys 2m, 2m+1 of one d; consecutive lanes take
    // consecutive key pairs of the same d rows
#pragma unroll
    for (int j = 0; j < V_REGS; ++j) {
        const int u = tid + ATTN_THREADS * j;
        if (V_UNITS % ATTN_THREADS == 0 || u < V_UNITS) {
            const int pos = attn_vt_pos(2 * (u % (BLOCK_N / 2)));
            const int c = (u / (BLOCK_N / 2)) * 8;
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const unsigned w = (unsigned)s->v[j][0][i] | ((unsigned)s->v[j][1][i] << 16);
                hk_lds_store_b32(lds, off + LDS_K_BYTES + (c + i) * VT_PITCH + pos * 2, w);
            }
        }
    }
}

// ---- one K/V block for one wave --------------------------------------------------
// MASKED: some key of the block may be invisible to some query of the wave
// (klim: the last key this lane's query sees).  The MFMA gives raw scores
// q.k (Q already negated when scale < 0); c = |scale| * log2(e) > 0, so the
// row max is taken on raw scores and p = exp2(fma(s, c, -m)).  m_run: running
// max of the scaled scores (base 2), l_run: this lane's partial sum of exp2
// (its 16 keys of each subtile; the halves are added at the end).
template <bool MASKED>
HK_DEVICE void attn_block(hk_lds_t lds, int off, const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK],
                          float c, int kb, int klim, float &m_run, float &l_run,
                          hk_mfma_acc_t (&o)[D_TILES])
{
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);

    // S^T = K Q^T, one 32x32 tile per 32-key subtile
    // (subtiles innermost: independent accumulators back to back)
    hk_mfma_acc_t s[SUB_N];
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
        s[tt] = hk_mfma_acc_zero();
#pragma unroll
    for (int u = 0; u < D_CHUNKS; ++u)
#pragma unroll
        for (int e = 0; e < AB_PER_CHUNK; ++e)
#pragma unroll
            for (int tt = 0; tt < SUB_N; ++tt) {
                const hk_mfma_ab_t a = hk_lds_load_mfma_ab(
                    lds, off + (tt * 32 + row) * K_PITCH + (16 * u + 8 * half + HK_MFMA_KPL * e) * 2);
                s[tt] = hk_mfma_32x32(a, qop[u][e], s[tt]);
            }

    // mask, row max of the raw scores (in lane, then across the lane halves)
    float mx = neg_inf;
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            if (MASKED) {
                const int key = kb + tt * 32 + (r / 4) * 8 + half * 4 + r % 4;
                if (key > klim)
                    s[tt][r] = neg_inf;
            }
            mx = hk_maxf(mx, s[tt][r]);
        }
    mx = hk_maxf(mx, hk_swap_halves(mx));
    const float m_new = hk_maxf(m_run, mx * c);
    const float m_use = m_new == neg_inf ? 0.0f : m_new; // no key seen yet: keep exp2 finite
    const float alpha = hk_exp2f(m_run - m_use);
    const float neg_m = -m_use;
    m_run = m_new;

    // P = exp2(S - m), bf16, straight into the B operands of O^T += V^T P^T
    hk_mfma_ab_t p[SUB_N][PV_STEPS];
    float sum = 0.0f;
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
        for (int st = 0; st < PV_STEPS; ++st) {
            attn_bf16_pairs t;
#pragma unroll
            for (int j = 0; j < HK_MFMA_KPL; j += 2) {
                const float e0 = hk_exp2f(s[tt][st * HK_MFMA_KPL + j] * c + neg_m);
                const float e1 = hk_exp2f(s[tt][st * HK_MFMA_KPL + j + 1] * c + neg_m);
                sum += e0 + e1;
                t[j / 2] = hk_f32x2_to_bf16x2(e0, e1);
            }
            p[tt][st] = __builtin_bit_cast(hk_mfma_ab_t, t);
        }
    l_run = l_run * alpha + sum;
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        o[dt] *= alpha;

    // O^T += V^T P^T (d tiles innermost: independent accumulators back to back)
    const int vt = off + LDS_K_BYTES;
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
        for (int st = 0; st < PV_STEPS; ++st)
#pragma unroll
            for (int dt = 0; dt < D_TILES; ++dt) {
                const hk_mfma_ab_t a = hk_lds_load_mfma_ab(
                    lds, vt + (dt * 32 + row) * VT_PITCH + (tt * 32 + st * HK_MFMA_K + half * HK_MFMA_KPL) * 2);
                o[dt] = hk_mfma_32x32(a, p[tt][st], o[dt]);
            }
}

// ---- the K/V loop of one wave -----------------------------------------------------
// Prefetch block t+1 to registers, compute stage t % 2, write block t+1 to the
// other stage, one barrier per block (the other stage was last read before
// the previous barrier).  wave_last: last key any query of the wave sees;
// wave_full: last key every query of the wave sees (both wave-uniform).
template <bool VEC>
HK_DEVICE void attn_kv_loop(hk_lds_t lds, const hk_bf16 *Kh, const hk_bf16 *Vh, long k_ss, long v_ss,
                            int Sk, int n_blocks, int wave_last, int wave_full, int klim,
                            const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK], float c,
                            float &m_run, float &l_run, hk_mfma_acc_t (&o)[D_TILES])
{
    attn_stage st;
    if (n_blocks > 0) {                                  // prologue: block 0 into stage 0
        attn_load<VEC>(&st, Kh, Vh, k_ss, v_ss, Sk, 0);
        attn_store_lds(lds, 0, &st);
    }
    hk_barrier();
    for (int t = 0; t < n_blocks; ++t) {
        const int cur = (t & 1) * LDS_STAGE_BYTES;
        const bool more = t + 1 < n_blocks;
        const int kb = t * BLOCK_N;
        if (more)
            attn_load<VEC>(&st, Kh, Vh, k_ss, v_ss, Sk, kb + BLOCK_N);
        if (kb <= wave_last) {                           // wave-uniform
            if (kb + BLOCK_N - 1 > wave_full)
                attn_block<true>(lds, cur, qop, c, kb, klim, m_run, l_run, o);
            else
                attn_block<false>(lds, cur, qop, c, kb, klim, m_run, l_run, o);
        }
        if (more)
            attn_store_lds(lds, LDS_STAGE_BYTES - cur, &st);
        hk_barrier();
    }
}

// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    (void)head_dim;
    (void)causal;
    const int Sq = seqlen_q, Sk = seqlen_k;
    // XCD-aware order: the linear workgroup id (x fastest) is remapped so that
    // consecutive logical workgroups (query blocks of one head, then the heads
    // that share a KV head, then batches) run on one XCD and share its L2
    const int gx = (Sq + BLOCK_M - 1) / BLOCK_M;
    int bx = hk_block_id_x(), hq = hk_block_id_y(), b = hk_block_id_z();
    const long n_wg = (long)gx * heads_q * batch;
    if (n_wg <= 0x7fffffffL) {                           // uniform; always so in practice
        int id = hk_xcd_remap(bx + gx * (hq + heads_q * b), (int)n_wg);
        bx = id % gx;
        id /= gx;
        hq = id % heads_q;
        b = id / heads_q;
    }
    const int q0 = bx * BLOCK_M;
    const int hkv = hq / (heads_q / heads_k);
    const int wave = hk_wave_id();
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
    const int qi = q0 + wave * 32 + row;                 // this lane's query

    const hk_bf16 *Qh = hk_a.Q + (long)b * hk_a.q_stride_b + (long)hq * hk_a.q_stride_h;
    const hk_bf16 *Kh = hk_a.K + (long)b * hk_a.k_stride_b + (long)hkv * hk_a.k_stride_h;
    const hk_bf16 *Vh = hk_a.V + (long)b * hk_a.v_stride_b + (long)hkv * hk_a.v_stride_h;
    hk_bf16 *Oh = hk_a.O + (long)b * hk_a.o_stride_b + (long)hq * hk_a.o_stride_h;
    const long k_ss = hk_a.k_stride_s, v_ss = hk_a.v_stride_s;

    // 16-byte global loads need 8-element strides and 16-byte aligned bases
    const bool vec_q = (hk_a.q_stride_b % 8 == 0) && (hk_a.q_stride_s % 8 == 0) &&
                       (hk_a.q_stride_h % 8 == 0) && ((unsigned long)hk_a.Q % 16 == 0);
    const bool vec_k = (hk_a.k_stride_b % 8 == 0) && (k_ss % 8 == 0) &&
                       (hk_a.k_stride_h % 8 == 0) && ((unsigned long)hk_a.K % 16 == 0);
    const bool vec_v = (hk_a.v_stride_b % 8 == 0) && (v_ss % 8 == 0) &&
                       (hk_a.v_stride_h % 8 == 0) && ((unsigned long)hk_a.V % 16 == 0);

    HK_LDS_DECLARE(LDS_BYTES);

    // keys the workgroup, this wave and this lane may see
    const int diag = Sk - Sq;                            // causal: key j visible iff j <= i + diag
    const int kend = CAUSAL ? (q0 + BLOCK_M + diag < Sk ? q0 + BLOCK_M + diag : Sk) : Sk;
    const int n_blocks = kend > 0 ? (kend + BLOCK_N - 1) / BLOCK_N : 0;
    const int wq0 = q0 + wave * 32;                      // wave-uniform
    const int wave_last = CAUSAL ? (wq0 + 31 + diag < Sk - 1 ? wq0 + 31 + diag : Sk - 1) : Sk - 1;
    const int wave_full = CAUSAL ? (wq0 + diag < Sk - 1 ? wq0 + diag : Sk - 1) : Sk - 1;
    const int klim = CAUSAL ? (qi + diag < Sk - 1 ? qi + diag : Sk - 1) : Sk - 1;

    // softmax scale in base 2, made positive: c = |scale| * log2(e) (at least
    // the smallest normal float, so that -inf * c stays -inf) and Q negated
    // (exact in bf16) when scale < 0
    const bool neg_scale = hk_a.scale < 0.0f;
    float c = (neg_scale ? -hk_a.scale : hk_a.scale) * LOG2E;
    c = c >= 1.17549435e-38f ? c : 1.17549435e-38f;

    // Q^T operands, once: chunk u, lane half h holds d = 16u + 8h + 0..7
    // (a query past seqlen_q reads row seqlen_q - 1; it is not stored)
    hk_mfma_ab_t qop[D_CHUNKS][AB_PER_CHUNK];
#pragma unroll
    for (int u = 0; u < D_CHUNKS; ++u)
        attn_split_ab(hk_global_load_bf16x8(Qh + (long)(qi < Sq ? qi : Sq - 1) * hk_a.q_stride_s +
                                                16 * u + 8 * half, 8, vec_q),
                      neg_scale ? (hk_bf16)0x8000 : (hk_bf16)0, qop[u]);

    hk_mfma_acc_t o[D_TILES];
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        o[dt] = hk_mfma_acc_zero();
    float m_run = __builtin_bit_cast(float, 0xff800000u), l_run = 0.0f;

    if (vec_k && vec_v)
        attn_kv_loop<true>(hk_lds, Kh, Vh, k_ss, v_ss, Sk, n_blocks, wave_last, wave_full, klim, qop,
                           c, m_run, l_run, o);
    else
        attn_kv_loop<false>(hk_lds, Kh, Vh, k_ss, v_ss, Sk, n_blocks, wave_last, wave_full, klim, qop,
                            c, m_run, l_run, o);

    // epilogue: the two lane halves' sums, normalise, store.
    // O^T accumulator element r of lane l: d = dt*32 + (r/4)*8 + (l/32)*4 + r%4, query l%32
    const float l_tot = l_run + hk_swap_halves(l_run);
    const float inv = l_tot > 0.0f ? 1.0f / l_tot : 0.0f;
    if (qi < Sq) {
        hk_bf16 *Oq = Oh + (long)qi * hk_a.o_stride_s;
#pragma unroll
        for (int dt = 0; dt < D_TILES; ++dt)
#pragma unroll
            for (int r = 0; r < 16; ++r)
                hk_global_store_bf16(Oq + dt * 32 + (r / 4) * 8 + half * 4 + r % 4,
                                     hk_f32_to_bf16(o[dt][r] * inv));
        if (hk_a.LSE && half == 0)
            hk_global_store_f32(hk_a.LSE + ((long)b * heads_q + hq) * Sq + qi,
                                l_tot > 0.0f ? (m_run + hk_log2f(l_tot)) * LN2
                                             : __builtin_bit_cast(float, 0xff800000u));
    }
}
]hkm_output_end()
