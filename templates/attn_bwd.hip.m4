m4_divert(-1)                                                   -*- C -*-
# attn_bwd.hip.m4 - attention backward for AMD CDNA: dQ, dK, dV from Q, K, V,
# O, dO and attn_fwd's LSE; bf16 in and out, fp32 accumulation.
#
# Semantics (gen/op_attn_bwd.c): P = exp(scale Q K^T - LSE) under attn_fwd's
# bottom-right causal mask, D = rowsum(dO * O), dS = P * (dO V^T - D),
# dV = P^T dO, dK = scale dS^T Q, dQ = scale dS K; dK and dV summed over the
# query heads of a KV head.  A row with LSE = -inf (no visible key) has no
# visible key, so its P is 0 and its dQ exactly 0.
#
# Parameters (hkm_p_*): attn_fwd's (attn_common.m4 hkm_attn_check_params).
# Arguments (hkm_kernarg_struct): Q, K, V, O, dO, LSE, dQ, dK, dV, element
# strides {q,k,v,o,do}_stride_{b,s,h} (dQ has Q's strides, dK K's, dV V's;
# head_dim contiguous), scale, then the run-time dimensions.
#
# Deterministic, one launch, no scratch: a 1-D grid of two kinds of
# workgroup (256 threads = 4 waves), the KV ones first (they run longest):
#  - KV workgroup kb of KV head hkv: wave w owns keys k0 + 32 w .. + 31 and
#    keeps dK^T, dV^T (d x keys) in registers, K^T and V^T as B operands.  For
#    every query head of the group and every step of 32 queries that sees the
#    block, the step's Q, dO (row-major) and Q^T, dO^T (transposed, queries
#    in B's k order) go to LDS with LSE and D = rowsum(dO * O) of its rows;
#    then per wave:  S = Q K^T, dP = dO V^T (A from LDS, B from registers; the
#    D layout puts the key in the lane and 16 queries in its registers),
#    P = exp2(S scale log2 e - LSE log2 e) masked, dS = P (dP - D),
#    dV^T += dO^T P, dK^T += Q^T dS (P and dS, converted to bf16, are the B
#    operands as they are, attn_vt_pos ordering the transposed tiles).
#  - Q workgroup of 128 queries of query head hq: wave w owns 32 queries and
#    keeps dQ^T in registers, Q^T and dO^T as B operands and D, LSE per lane
#    (D from its O and dO rows, once).  For each step of 32 visible keys: K,
#    V (row-major) and K^T (transposed) to LDS, then S^T = K Q^T,
#    dP^T = V dO^T, dS^T = P^T (dP^T - D), dQ^T += K^T dS^T.
# So S and dP are computed by both kinds: 7 products per tile pair instead
# of 5, for no atomics, no fp32 dQ buffer and no second kernel.

m4_include([attn_common.m4])
hkm_attn_check_params([64], [96], [128], [192], [256])
m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([attn_bwd needs hkm_block_size 256, got ]hkm_block_size)])

# The plan (gen/op_attn_bwd.c attn_bwd_plan_amd): hkm_tune([waves]) waves per
# SIMD, hkm_tune([kv_block]) keys per KV workgroup, hkm_tune([q_step])
# queries per step, hkm_tune([q_block]) queries per Q workgroup,
# hkm_tune([k_step]) keys per step.

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr bool CAUSAL = ]hkm_if_true([causal], [true], [false])[;
static constexpr int WAVES = ATTN_THREADS / HK_WAVE_SIZE;
static constexpr int KV_BLOCK = ]hkm_tune([kv_block])[;       // keys per KV workgroup
static constexpr int Q_STEP = ]hkm_tune([q_step])[;           // queries per KV-workgroup step
static constexpr int BLOCK_M = ]hkm_tune([q_block])[;         // queries per Q workgroup
static constexpr int BLOCK_N = ]hkm_tune([k_step])[;          // keys per Q-workgroup step
static constexpr int LDS_LIMIT = ]hkm_target_lds_unit[;       // LDS per CU
// MFMA plan
static constexpr int D_CHUNKS = D / 16;                     // over head_dim: 16-wide d chunks
static constexpr int AB_PER_CHUNK = 8 / HK_MFMA_KPL;        // operands per 8 bf16 of a lane
static constexpr int D_TILES = D / 32;                      // d x 32 accumulators: 32-row tiles
static constexpr int STEPS32 = 32 / HK_MFMA_K;              // MFMAs over 32 rows (queries or keys)
// LDS: tiles of 32 rows, row-major [row][d] (rows padded by 16 bytes) or
// transposed [d][row] (rows in attn_vt_pos order, padded by 16 bytes)
static constexpr int ROW_PITCH = D * 2 + 16;
static constexpr int T_PITCH = 32 * 2 + 16;
static constexpr int TILE_R = 32 * ROW_PITCH;
static constexpr int TILE_T = D * T_PITCH;
static constexpr int D_PARTS = 8;                           // threads per row of the D sums
// KV workgroups: Q, dO, Q^T, dO^T, LSE * log2(e), D, D partial sums
static constexpr int KV_Q = 0, KV_DO = TILE_R, KV_QT = 2 * TILE_R, KV_DOT = 2 * TILE_R + TILE_T;
static constexpr int KV_LSE = 2 * TILE_R + 2 * TILE_T, KV_D = KV_LSE + 32 * 4, KV_DPART = KV_D + 32 * 4;
static constexpr int KV_BYTES = KV_DPART + 32 * D_PARTS * 4;
// Q workgroups: K, V, K^T
static constexpr int Q_K = 0, Q_V = TILE_R, Q_KT = 2 * TILE_R;
static constexpr int Q_BYTES = 2 * TILE_R + TILE_T;
static constexpr int LDS_BYTES = KV_BYTES > Q_BYTES ? KV_BYTES : Q_BYTES;
]hkm_attn_limits()[
typedef float attn_f2 __attribute__((ext_vector_type(2)));
]hkm_attn_cdna_operands()[

static_assert(KV_BLOCK == 32 * WAVES && BLOCK_M == 32 * WAVES, "a wave owns 32 keys or 32 queries");
static_assert(Q_STEP == 32 && BLOCK_N == 32, "steps of one 32-row tile");
static_assert(D % 32 == 0, "32x32 MFMA tiles");
static_assert(ATTN_THREADS == 32 * D_PARTS, "D partial sums: 8 threads per row of a step");
static_assert(LDS_BYTES <= LDS_LIMIT, "LDS budget");

// ---- global -> LDS: 32 rows r0 .. r0 + 31 of one head -----------------------
// Rows at or past n read as zero.  A unit is (row pair, 8 columns): two 16-byte
// loads, stored row-major at roff (two 16-byte stores) and, when toff >= 0,
// transposed at toff (8 words of two rows each; consecutive lanes take
// consecutive row pairs of one column block).
HK_DEVICE hk_bf16x8 bwd_row8(const hk_bf16 *base, long ss, int r, int n, int c, bool vec)
{
    const hk_bf16x8 zero = {0, 0, 0, 0, 0, 0, 0, 0};
    return r < n ? hk_global_load_bf16x8(base + (long)r * ss + c, 8, vec) : zero;
}

HK_DEVICE void bwd_fill(hk_lds_t lds, const hk_bf16 *base, long ss, int r0, int n, bool vec, int roff, int toff)
{
    constexpr int UNITS = 16 * (D / 8);
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < (UNITS + ATTN_THREADS - 1) / ATTN_THREADS; ++j) {
        const int u = tid + ATTN_THREADS * j;
        if (UNITS % ATTN_THREADS == 0 || u < UNITS) {
            const int p = u % 16, c = (u / 16) * 8;
            const hk_bf16x8 x0 = bwd_row8(base, ss, r0 + 2 * p, n, c, vec);
            const hk_bf16x8 x1 = bwd_row8(base, ss, r0 + 2 * p + 1, n, c, vec);
            hk_lds_store_b128(lds, roff + 2 * p * ROW_PITCH + c * 2, __builtin_bit_cast(hk_u32x4, x0));
            hk_lds_store_b128(lds, roff + (2 * p + 1) * ROW_PITCH + c * 2, __builtin_bit_cast(hk_u32x4, x1));
            if (toff >= 0) {
                const int pos = attn_vt_pos(2 * p);
#pragma unroll
                for (int i = 0; i < 8; ++i)
                    hk_lds_store_b32(lds, toff + (c + i) * T_PITCH + pos * 2,
                                     (unsigned)x0[i] | ((unsigned)x1[i] << 16));
            }
        }
    }
}

// Sum of the products of 8 bf16 pairs, fp32.
HK_DEVICE float bwd_dot8(hk_bf16x8 x, hk_bf16x8 y)
{
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i)
        s += hk_bf16_to_f32(x[i]) * hk_bf16_to_f32(y[i]);
    return s;
}

// A 16-float accumulator as HK_MFMA_K-row bf16 B operands (rows 0..31 of the
// D layout, in B's k order up to attn_vt_pos).
HK_DEVICE void bwd_to_b(const hk_mfma_acc_t &x, hk_mfma_ab_t (&out)[STEPS32])
{
#pragma unroll
    for (int st = 0; st < STEPS32; ++st) {
        attn_bf16_pairs t;
#pragma unroll
        for (int j = 0; j < HK_MFMA_KPL; j += 2)
            t[j / 2] = hk_f32x2_to_bf16x2(x[st * HK_MFMA_KPL + j], x[st * HK_MFMA_KPL + j + 1]);
        out[st] = __builtin_bit_cast(hk_mfma_ab_t, t);
    }
}

// acc (32 x 32) += A B over head_dim: A rows from the row-major LDS tile at
// off, B from registers (lane half h holds d = 16u + 8h + 0..7 of chunk u).
HK_DEVICE void bwd_mm_d(hk_lds_t lds, int off, const hk_mfma_ab_t (&bop)[D_CHUNKS][AB_PER_CHUNK],
                        hk_mfma_acc_t &acc)
{
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
#pragma unroll
    for (int u = 0; u < D_CHUNKS; ++u)
#pragma unroll
        for (int e = 0; e < AB_PER_CHUNK; ++e)
            acc = hk_mfma_32x32(
                hk_lds_load_mfma_ab(lds, off + row * ROW_PITCH + (16 * u + 8 * half + HK_MFMA_KPL * e) * 2),
                bop[u][e], acc);
}

// acc[dt] (d x 32) += A B over 32 rows: A from the transposed LDS tile at off,
// B the bf16 operands of a D-layout accumulator (bwd_to_b).
HK_DEVICE void bwd_mm_t(hk_lds_t lds, int off, const hk_mfma_ab_t (&bop)[STEPS32], hk_mfma_acc_t (&acc)[D_TILES])
{
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
#pragma unroll
    for (int st = 0; st < STEPS32; ++st)
#pragma unroll
        for (int dt = 0; dt < D_TILES; ++dt)
            acc[dt] = hk_mfma_32x32(
                hk_lds_load_mfma_ab(lds, off + (dt * 32 + row) * T_PITCH + (st * HK_MFMA_K + half * HK_MFMA_KPL) * 2),
                bop[st], acc[dt]);
}

// The B operands of one 32-row slice of a head (row r, 8 d per chunk and lane
// half), zero past n.
HK_DEVICE void bwd_b_ops(const hk_bf16 *base, long ss, int r, int n, bool vec,
                         hk_mfma_ab_t (&op)[D_CHUNKS][AB_PER_CHUNK])
{
    const int half = hk_lane_id() / 32;
#pragma unroll
    for (int u = 0; u < D_CHUNKS; ++u)
        attn_split_ab(bwd_row8(base, ss, r, n, 16 * u + 8 * half, vec), (hk_bf16)0, op[u]);
}

// Stores scale * acc^T: lane holds row r of the output (skipped when not
// valid), accumulator element i of tile dt is column dt*32 + (i/4)*8 + h*4 + i%4.
HK_DEVICE void bwd_store_t(hk_bf16 *out, long ss, int r, bool valid, float scale, const hk_mfma_acc_t (&acc)[D_TILES])
{
    const int half = hk_lane_id() / 32;
    if (!valid)
        return;
    hk_bf16 *o = out + (long)r * ss;
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
#pragma unroll
        for (int i = 0; i < 16; ++i)
            hk_global_store_bf16(o + dt * 32 + (i / 4) * 8 + half * 4 + i % 4, hk_f32_to_bf16(acc[dt][i] * scale));
}

struct bwd_dims {
    int Sq, Sk, Hq, Hk;
    float c;                                             // scale * log2(e)
};

// ---- KV workgroups -----------------------------------------------------------
// One step's LDS: Q, dO (row-major and transposed), LSE * log2(e) and the
// partial sums of D (8 threads per row), then D (after a barrier).
HK_DEVICE void bwd_kv_load(hk_lds_t lds, const hk_args &a, const hk_bf16 *Qh, const hk_bf16 *Oh, const hk_bf16 *dOh,
                           const float *lse, int q0, int Sq, bool vq, bool vo, bool vdo)
{
    bwd_fill(lds, Qh, a.q_stride_s, q0, Sq, vq, KV_Q, KV_QT);
    bwd_fill(lds, dOh, a.do_stride_s, q0, Sq, vdo, KV_DO, KV_DOT);
    const int tid = hk_thread_id(), r = tid / D_PARTS, part = tid % D_PARTS;
    float s = 0.0f;
#pragma unroll
    for (int c = part; c < D / 8; c += D_PARTS)
        s += bwd_dot8(bwd_row8(Oh, a.o_stride_s, q0 + r, Sq, c * 8, vo),
                      bwd_row8(dOh, a.do_stride_s, q0 + r, Sq, c * 8, vdo));
    hk_lds_store_b32(lds, KV_DPART + tid * 4, hk_f32_as_u32(s));
    if (tid < 32)
        hk_lds_store_b32(lds, KV_LSE + tid * 4,
                         hk_f32_as_u32(q0 + tid < Sq ? hk_global_load_f32(lse + q0 + tid) * LOG2E : 0.0f));
}

HK_DEVICE void bwd_kv_rowterm(hk_lds_t lds)
{
    const int tid = hk_thread_id();
    if (tid < 32) {
        float s = 0.0f;
#pragma unroll
        for (int p = 0; p < D_PARTS; ++p)
            s += hk_u32_as_f32(hk_lds_load_b32(lds, KV_DPART + (tid * D_PARTS + p) * 4));
        hk_lds_store_b32(lds, KV_D + tid * 4, hk_f32_as_u32(s));
    }
}

// One wave, one step of 32 queries from q0, keys kw0 + 0..31 (the lane's: kw0 + lane % 32).
HK_DEVICE void bwd_kv_step(hk_lds_t lds, const bwd_dims &x, int q0, int kw0,
                           const hk_mfma_ab_t (&kop)[D_CHUNKS][AB_PER_CHUNK],
                           const hk_mfma_ab_t (&vop)[D_CHUNKS][AB_PER_CHUNK],
                           hk_mfma_acc_t (&dk)[D_TILES], hk_mfma_acc_t (&dv)[D_TILES])
{
    const int lane = hk_lane_id();
    const int half = lane / 32, key = kw0 + lane % 32;
    hk_mfma_acc_t s = hk_mfma_acc_zero(), dp = hk_mfma_acc_zero();
    bwd_mm_d(lds, KV_Q, kop, s);                         // S = Q K^T
    bwd_mm_d(lds, KV_DO, vop, dp);                       // dP = dO V^T
    // element i: query q0 + (i/4)*8 + h*4 + i%4
#pragma unroll
    for (int g = 0; g < 4; ++g) {
        const hk_u32x4 l4 = hk_lds_load_b128(lds, KV_LSE + (g * 8 + half * 4) * 4);
        const hk_u32x4 d4 = hk_lds_load_b128(lds, KV_D + (g * 8 + half * 4) * 4);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int i = g * 4 + j, qi = q0 + g * 8 + half * 4 + j;
            const bool vis = qi < x.Sq && (!CAUSAL || key <= qi + (x.Sk - x.Sq));
            const float p = vis ? hk_exp2f(s[i] * x.c - hk_u32_as_f32(l4[j])) : 0.0f;
            s[i] = p;
            dp[i] = p * (dp[i] - hk_u32_as_f32(d4[j]));
        }
    }
    hk_mfma_ab_t pop[STEPS32], dsop[STEPS32];
    bwd_to_b(s, pop);
    bwd_to_b(dp, dsop);
    bwd_mm_t(lds, KV_DOT, pop, dv);                      // dV^T += dO^T P
    bwd_mm_t(lds, KV_QT, dsop, dk);                      // dK^T += Q^T dS
}

HK_DEVICE void bwd_kv(hk_lds_t lds, const hk_args &a, const bwd_dims &x, int id)
{
    const int nkb = (x.Sk + KV_BLOCK - 1) / KV_BLOCK;
    const int kb = id % nkb, hkv = (id / nkb) % x.Hk, b = id / nkb / x.Hk;
    const int group = x.Hq / x.Hk, diag = x.Sk - x.Sq;
    const int k0 = kb * KV_BLOCK, kw0 = k0 + 32 * hk_wave_id();
    const int key = kw0 + hk_lane_id() % 32;             // this lane's key
    const hk_bf16 *Kh = a.K + (long)b * a.k_stride_b + (long)hkv * a.k_stride_h;
    const hk_bf16 *Vh = a.V + (long)b * a.v_stride_b + (long)hkv * a.v_stride_h;
    const bool vk = attn_aligned<8>(a.K, a.k_stride_b, a.k_stride_s, a.k_stride_h);
    const bool vv = attn_aligned<8>(a.V, a.v_stride_b, a.v_stride_s, a.v_stride_h);
    const bool vq = attn_aligned<8>(a.Q, a.q_stride_b, a.q_stride_s, a.q_stride_h);
    const bool vo = attn_aligned<8>(a.O, a.o_stride_b, a.o_stride_s, a.o_stride_h);
    const bool vdo = attn_aligned<8>(a.dO, a.do_stride_b, a.do_stride_s, a.do_stride_h);
    hk_mfma_ab_t kop[D_CHUNKS][AB_PER_CHUNK], vop[D_CHUNKS][AB_PER_CHUNK];
    bwd_b_ops(Kh, a.k_stride_s, key, x.Sk, vk, kop);
    bwd_b_ops(Vh, a.v_stride_s, key, x.Sk, vv, vop);
    hk_mfma_acc_t dk[D_TILES], dv[D_TILES];
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        dk[dt] = dv[dt] = hk_mfma_acc_zero();

    // steps of queries that see a key of the block: from the first query
    // that sees key k0 (causal) to the last query
    const int qfirst = CAUSAL ? (k0 - diag > 0 ? k0 - diag : 0) : 0;
    const int n_steps = (x.Sq + Q_STEP - 1) / Q_STEP;
    for (int g = 0; g < group; ++g) {
        const int hq = hkv * group + g;
        const hk_bf16 *Qh = a.Q + (long)b * a.q_stride_b + (long)hq * a.q_stride_h;
        const hk_bf16 *Oh = a.O + (long)b * a.o_stride_b + (long)hq * a.o_stride_h;
        const hk_bf16 *dOh = a.dO + (long)b * a.do_stride_b + (long)hq * a.do_stride_h;
        const float *lse = a.LSE + ((long)b * x.Hq + hq) * x.Sq;
        for (int t = qfirst / Q_STEP; t < n_steps; ++t) {
            const int q0 = t * Q_STEP;
            hk_barrier();                                // the previous step's tiles are read
            bwd_kv_load(lds, a, Qh, Oh, dOh, lse, q0, x.Sq, vq, vo, vdo);
            hk_barrier();
            bwd_kv_rowterm(lds);
            hk_barrier();
            // wave-uniform: some key of the wave lies below seqlen_k and is
            // seen by the step's last query
            if (kw0 < x.Sk && (!CAUSAL || kw0 <= q0 + Q_STEP - 1 + diag))
                bwd_kv_step(lds, x, q0, kw0, kop, vop, dk, dv);
        }
    }
    hk_bf16 *dKh = a.dK + (long)b * a.k_stride_b + (long)hkv * a.k_stride_h;
    hk_bf16 *dVh = a.dV + (long)b * a.v_stride_b + (long)hkv * a.v_stride_h;
    bwd_store_t(dKh, a.k_stride_s, key, key < x.Sk, a.scale, dk);
    bwd_store_t(dVh, a.v_stride_s, key, key < x.Sk, 1.0f, dv);
}

// ---- Q workgroups ------------------------------------------------------------
// One wave, one step of 32 keys from kb: the lane's query (its B operands,
// LSE * log2(e) lse2, row term dd, last visible key klim).
HK_DEVICE void bwd_q_step(hk_lds_t lds, const bwd_dims &x, int kb, bool qv, int klim, float lse2, float dd,
                          const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK],
                          const hk_mfma_ab_t (&doop)[D_CHUNKS][AB_PER_CHUNK], hk_mfma_acc_t (&dq)[D_TILES])
{
    const int half = hk_lane_id() / 32;
    hk_mfma_acc_t s = hk_mfma_acc_zero(), dp = hk_mfma_acc_zero();
    bwd_mm_d(lds, Q_K, qop, s);                          // S^T = K Q^T
    bwd_mm_d(lds, Q_V, doop, dp);                        // dP^T = V dO^T
    // element i: key kb + (i/4)*8 + h*4 + i%4
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        const bool vis = qv && kb + (i / 4) * 8 + half * 4 + i % 4 <= klim;
        const float p = vis ? hk_exp2f(s[i] * x.c - lse2) : 0.0f;
        dp[i] = p * (dp[i] - dd);
    }
    hk_mfma_ab_t dsop[STEPS32];
    bwd_to_b(dp, dsop);
    bwd_mm_t(lds, Q_KT, dsop, dq);                       // dQ^T += K^T dS^T
}

HK_DEVICE void bwd_q(hk_lds_t lds, const hk_args &a, const bwd_dims &x, int id)
{
    const int nqb = (x.Sq + BLOCK_M - 1) / BLOCK_M;
    const int qb = id % nqb, hq = (id / nqb) % x.Hq, b = id / nqb / x.Hq;
    const int hkv = hq / (x.Hq / x.Hk);
    const int q0 = qb * BLOCK_M, wq0 = q0 + 32 * hk_wave_id();
    const int lane = hk_lane_id(), half = lane / 32;
    const int qi = wq0 + lane % 32;                      // this lane's query
    const bool qv = qi < x.Sq;
    const hk_bf16 *Qh = a.Q + (long)b * a.q_stride_b + (long)hq * a.q_stride_h;
    const hk_bf16 *Oh = a.O + (long)b * a.o_stride_b + (long)hq * a.o_stride_h;
    const hk_bf16 *dOh = a.dO + (long)b * a.do_stride_b + (long)hq * a.do_stride_h;
    const hk_bf16 *Kh = a.K + (long)b * a.k_stride_b + (long)hkv * a.k_stride_h;
    const hk_bf16 *Vh = a.V + (long)b * a.v_stride_b + (long)hkv * a.v_stride_h;
    const bool vk = attn_aligned<8>(a.K, a.k_stride_b, a.k_stride_s, a.k_stride_h);
    const bool vv = attn_aligned<8>(a.V, a.v_stride_b, a.v_stride_s, a.v_stride_h);
    const bool vq = attn_aligned<8>(a.Q, a.q_stride_b, a.q_stride_s, a.q_stride_h);
    const bool vo = attn_aligned<8>(a.O, a.o_stride_b, a.o_stride_s, a.o_stride_h);
    const bool vdo = attn_aligned<8>(a.dO, a.do_stride_b, a.do_stride_s, a.do_stride_h);

    // Q^T and dO^T B operands, and D from the same dO chunks and O's
    hk_mfma_ab_t qop[D_CHUNKS][AB_PER_CHUNK], doop[D_CHUNKS][AB_PER_CHUNK];
    bwd_b_ops(Qh, a.q_stride_s, qi, x.Sq, vq, qop);
    float part = 0.0f;
#pragma unroll
    for (int u = 0; u < D_CHUNKS; ++u) {
        const hk_bf16x8 d8 = bwd_row8(dOh, a.do_stride_s, qi, x.Sq, 16 * u + 8 * half, vdo);
        part += bwd_dot8(d8, bwd_row8(Oh, a.o_stride_s, qi, x.Sq, 16 * u + 8 * half, vo));
        attn_split_ab(d8, (hk_bf16)0, doop[u]);
    }
    const float dd = part + hk_swap_halves(part);
    const float lse2 = qv ? hk_global_load_f32(a.LSE + ((long)b * x.Hq + hq) * x.Sq + qi) * LOG2E : 0.0f;
    const int klim = attn_last_key(qi, x.Sq, x.Sk);
    const int wave_last = attn_last_key(wq0 + 31, x.Sq, x.Sk);
    hk_mfma_acc_t dq[D_TILES];
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        dq[dt] = hk_mfma_acc_zero();

    const int n_blocks = attn_key_blocks(attn_key_end(q0, x.Sq, x.Sk));
    for (int t = 0; t < n_blocks; ++t) {
        const int kb = t * BLOCK_N;
        hk_barrier();                                    // the previous step's tiles are read
        bwd_fill(lds, Kh, a.k_stride_s, kb, x.Sk, vk, Q_K, Q_KT);
        bwd_fill(lds, Vh, a.v_stride_s, kb, x.Sk, vv, Q_V, -1);
        hk_barrier();
        if (kb <= wave_last)                             // wave-uniform
            bwd_q_step(lds, x, kb, qv, klim, lse2, dd, qop, doop, dq);
    }
    hk_bf16 *dQh = a.dQ + (long)b * a.q_stride_b + (long)hq * a.q_stride_h;
    bwd_store_t(dQh, a.q_stride_s, qi, qv, a.scale, dq);
}

// ---- kernel ------------------------------------------------------------------
#undef HK_WAVES_PER_SIMD
#define HK_WAVES_PER_SIMD ]hkm_tune([waves])[
]hkm_kernel_begin()[
    (void)head_dim;
    (void)causal;
    HK_LDS_DECLARE(LDS_BYTES);
    bwd_dims x;
    x.Sq = seqlen_q;
    x.Sk = seqlen_k;
    x.Hq = heads_q;
    x.Hk = heads_k;
    x.c = hk_a.scale * LOG2E;
    // the KV workgroups first: they run longest
    const long n_kv = (long)((seqlen_k + KV_BLOCK - 1) / KV_BLOCK) * heads_k * batch;
    const long id = hk_block_id_x();
    if (id < n_kv)
        bwd_kv(hk_lds, hk_a, x, (int)id);
    else
        bwd_q(hk_lds, hk_a, x, (int)(id - n_kv));
}
]hkm_output_end()
