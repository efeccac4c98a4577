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
#    every query head of the group and every step of queries that sees the
#    block, the step's Q and dO (row-major) go to LDS with LSE and D =
#    rowsum(dO * O) of its rows (and, without the plan's lds_tr, Q^T and
#    dO^T: transposed, queries in B's k order); then per wave:  S = Q K^T,
#    dP = dO V^T (A from LDS, B from registers; the D layout puts the key in
#    the lane and 16 queries in its registers), P = exp2(S scale log2 e -
#    LSE log2 e) masked, dS = P (dP - D), dV^T += dO^T P, dK^T += Q^T dS (P
#    and dS, converted to bf16, are the B operands as they are; dO^T and Q^T
#    read transposed from the row-major tiles by hk_lds_load_tr_b64 with
#    lds_tr, else from the transposed copies, attn_vt_pos ordering them).
#  - Q workgroup of 128 queries of query head hq: wave w owns 32 queries and
#    keeps dQ^T in registers, Q^T and dO^T as B operands and D, LSE per lane
#    (D from its O and dO rows, once).  For each step of visible keys: K and
#    V (row-major; without lds_tr K^T too) to LDS, then S^T = K Q^T,
#    dP^T = V dO^T, dS^T = P^T (dP^T - D), dQ^T += K^T dS^T.
# So S and dP are computed by both kinds: 7 products per tile pair instead
# of 5, for no atomics, no fp32 dQ buffer and no second kernel.
#
# Steps of 32 or 64 rows (the plan's q_step and k_step).  Both loops run one
# step ahead: the next step's rows are loaded into registers before the
# current step's MFMAs and written to LDS after them.  With lds_tr the
# tiles are double-buffered: one barrier per step; without, one buffer:
# three barriers per KV step (tiles free, tiles and D's partial sums
# written, D summed) and two per Q step.  Loop bodies are straight-line
# (the last trip fetches its own step again).

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
// Where the plan reads LDS transposed (LDS_TR: hk_lds_load_tr_b64, gfx950)
// the tiles are stored row-major only and the loops double-buffer them (one
// barrier per step); elsewhere the transposed copies are stored too, once.
#define BWD_TR ]hkm_tune([lds_tr])[ // LDS_TR, for the preprocessor
static constexpr bool LDS_TR = BWD_TR;
// transposed copies read 16 bytes a lane: two k steps where they are 8 bytes,
// no bank conflict (at head_dim 192 gfx942 spilled)
static constexpr bool VT_PAIRS = !LDS_TR && HK_MFMA_KPL == 4 && D <= 128;
static constexpr int NBUF = LDS_TR ? 2 : 1;
// LDS: tiles of R rows, row-major [row][d] (rows padded by 16 bytes) or
// transposed [d][row] (rows in attn_vt_pos order, padded by 16 bytes). With
// SWZ (LDS_TR at d128) row-major rows are padded by 64 bytes instead (a row
// 16 banks on from the last) and chunk c (16 bytes) of row r sits at
// c ^ ((r / 4) % 4): the MFMA A rows (16 rows of one chunk per pass), the
// transposing reads (4 rows x 4 chunks per pass) and the row stores all
// fall on distinct banks (gfx950's passes, docs/EMULATOR.md), and only a
// lane's own row picks the XOR, so unrolled offsets stay immediates.
static constexpr bool SWZ = LDS_TR && D == 128;
static constexpr int ROW_PITCH = D * 2 + (SWZ ? 64 : 16);
static constexpr int t_pitch(int rows) { return rows * 2 + 16; }
static constexpr int Q_SUB = Q_STEP / 32;                   // 32-query subtiles of a step
static constexpr int K_SUB = BLOCK_N / 32;                  // 32-key subtiles of a step
static constexpr int QT_PITCH = t_pitch(Q_STEP), KT_PITCH = t_pitch(BLOCK_N);
// The steps read each product's LDS operands together before its MFMAs,
// held there by scheduling barriers, where the registers allow (the plan's
// batch, 0 where it would spill): one wait per group, not one per MFMA.
static constexpr bool BATCH = ]hkm_tune([batch])[;
HK_DEVICE void bwd_sched()
{
    if constexpr (BATCH)
        hk_sched_barrier();
}

// Byte cb of row r of a row-major tile.
HK_DEVICE int bwd_rc(int r, int cb)
{
    if constexpr (SWZ)
        return r * ROW_PITCH + (cb ^ (((r >> 2) & 3) << 4));
    else
        return r * ROW_PITCH + cb;
}
// KV workgroups, per buffer: Q, dO, (Q^T, dO^T), LSE * log2(e), then D: with
// LDS_TR KV_NPART partial sums per row ([part][row], summed where D is read),
// else D and its partial sums per row and 8 columns (summed after a barrier)
static constexpr int KV_NPART = ATTN_THREADS / (2 * Q_STEP);
static constexpr int KV_TR = Q_STEP * ROW_PITCH, KV_TT = LDS_TR ? 0 : D * QT_PITCH;
static constexpr int KV_Q = 0, KV_DO = KV_TR, KV_QT = 2 * KV_TR, KV_DOT = 2 * KV_TR + KV_TT;
static constexpr int KV_LSE = 2 * KV_TR + 2 * KV_TT, KV_D = KV_LSE + Q_STEP * 4;
static constexpr int KV_DPART = LDS_TR ? KV_D : KV_D + Q_STEP * 4;
static constexpr int KV_BUF = KV_DPART + Q_STEP * (LDS_TR ? KV_NPART : D / 8) * 4;
static constexpr int KV_BYTES = NBUF * KV_BUF;
// Q workgroups, per buffer: K, V, (K^T)
static constexpr int Q_TR = BLOCK_N * ROW_PITCH;
static constexpr int Q_K = 0, Q_V = Q_TR, Q_KT = 2 * Q_TR;
static constexpr int Q_BUF = 2 * Q_TR + (LDS_TR ? 0 : D * KT_PITCH);
static constexpr int Q_BYTES = NBUF * Q_BUF;
static constexpr int LDS_BYTES = KV_BYTES > Q_BYTES ? KV_BYTES : Q_BYTES;
]hkm_attn_limits()[
typedef float attn_f2 __attribute__((ext_vector_type(2)));
]hkm_attn_cdna_operands()[

static_assert(KV_BLOCK == 32 * WAVES && BLOCK_M == 32 * WAVES, "a wave owns 32 keys or 32 queries");
static_assert((Q_STEP == 32 || Q_STEP == 64) && (BLOCK_N == 32 || BLOCK_N == 64), "steps of 32 or 64 rows");
static_assert(D % 32 == 0, "32x32 MFMA tiles");
static_assert(Q_STEP <= ATTN_THREADS, "one thread per row of a step for LSE and D");
static_assert(LDS_BYTES <= LDS_LIMIT, "LDS budget");
static_assert(!LDS_TR || HK_LDS_TR, "the plan's lds_tr needs the tile header's HK_LDS_TR");
static_assert(!LDS_TR || (HK_MFMA_KPL == 8 && ATTN_THREADS % (2 * Q_STEP) == 0), "transposing reads: 8 k per lane");

// ---- global -> registers -> LDS ------------------------------------------------
// Tiles move in units of (row pair, 8 columns): two 16-byte loads (rows at or
// past n read as zero), stored row-major (two 16-byte stores) and, where a
// transposed copy is wanted, as 8 words of two rows each (consecutive lanes
// take consecutive row pairs of one column block).  8 bf16 of row r from
// column c:
HK_DEVICE hk_bf16x8 bwd_row8(const hk_bf16 *base, long ss, int r, int n, int c, bool vec)
{
    const hk_bf16x8 zero = {0, 0, 0, 0, 0, 0, 0, 0};
    return r < n ? hk_global_load_bf16x8(base + (long)r * ss + c, 8, vec) : zero;
}


// Sum of the products of 8 bf16 pairs, fp32 (four packed dot products).
HK_DEVICE float bwd_dot8(hk_bf16x8 x, hk_bf16x8 y)
{
    const hk_u32x4 a = __builtin_bit_cast(hk_u32x4, x), b = __builtin_bit_cast(hk_u32x4, y);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i)
        s = hk_dot2_bf16(a[i], b[i], s);
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
// A step's rows in registers (issued before the step before it computes, so
// that the loads run under its MFMAs): per unit of two rows and 8 columns,
// Q, dO and O; and the thread's LSE.
static constexpr int KV_PAIRS = Q_STEP / 2, KV_UNITS = KV_PAIRS * (D / 8);
static constexpr int KV_J = (KV_UNITS + ATTN_THREADS - 1) / ATTN_THREADS;
struct bwd_kv_rows {
    hk_bf16x8 q[KV_J][2], g[KV_J][2], o[KV_J][2];
    float lse;
};

HK_DEVICE void bwd_kv_fetch(bwd_kv_rows &r, const hk_args &a, const hk_bf16 *Qh, const hk_bf16 *Oh,
                            const hk_bf16 *dOh, const float *lse, int q0, int Sq, bool vec)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < KV_J; ++j) {
        const int u = tid + ATTN_THREADS * j;
        if (KV_UNITS % ATTN_THREADS == 0 || u < KV_UNITS) {
            const int p = u % KV_PAIRS, c = (u / KV_PAIRS) * 8;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                r.q[j][h] = bwd_row8(Qh, a.q_stride_s, q0 + 2 * p + h, Sq, c, vec);
                r.g[j][h] = bwd_row8(dOh, a.do_stride_s, q0 + 2 * p + h, Sq, c, vec);
                r.o[j][h] = bwd_row8(Oh, a.o_stride_s, q0 + 2 * p + h, Sq, c, vec);
            }
        }
    }
    r.lse = tid < Q_STEP && q0 + tid < Sq ? hk_global_load_f32(lse + q0 + tid) * LOG2E : 0.0f;
}

// Two rows of a unit, row-major at roff and transposed at toff.
HK_DEVICE void bwd_put_pair(hk_lds_t lds, int roff, int toff, int tp, int p, int c, hk_bf16x8 x0, hk_bf16x8 x1)
{
    hk_lds_store_b128(lds, roff + bwd_rc(2 * p, c * 2), __builtin_bit_cast(hk_u32x4, x0));
    hk_lds_store_b128(lds, roff + bwd_rc(2 * p + 1, c * 2), __builtin_bit_cast(hk_u32x4, x1));
    if (toff >= 0) {
        const int pos = attn_vt_pos(2 * p);
#pragma unroll
        for (int i = 0; i < 8; ++i)
            hk_lds_store_b32(lds, toff + (c + i) * tp + pos * 2, (unsigned)x0[i] | ((unsigned)x1[i] << 16));
    }
}

// The step's tiles: Q, dO (row-major and transposed), LSE * log2(e), and
// the partial sums of D per row and 8 columns (summed by bwd_kv_rowterm
// after a barrier), column-major: consecutive lanes' rows in consecutive
// banks, for the stores and the sums' reads alike.
HK_DEVICE void bwd_kv_put(hk_lds_t lds, const bwd_kv_rows &r)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < KV_J; ++j) {
        const int u = tid + ATTN_THREADS * j;
        if (KV_UNITS % ATTN_THREADS == 0 || u < KV_UNITS) {
            const int p = u % KV_PAIRS, c = (u / KV_PAIRS) * 8;
            bwd_put_pair(lds, KV_Q, KV_QT, QT_PITCH, p, c, r.q[j][0], r.q[j][1]);
            bwd_put_pair(lds, KV_DO, KV_DOT, QT_PITCH, p, c, r.g[j][0], r.g[j][1]);
#pragma unroll
            for (int h = 0; h < 2; ++h)
                hk_lds_store_b32(lds, KV_DPART + ((c / 8) * Q_STEP + 2 * p + h) * 4,
                                 hk_f32_as_u32(bwd_dot8(r.g[j][h], r.o[j][h])));
        }
    }
    if (tid < Q_STEP)
        hk_lds_store_b32(lds, KV_LSE + tid * 4, hk_f32_as_u32(r.lse));
}

HK_DEVICE void bwd_kv_rowterm(hk_lds_t lds)
{
    const int tid = hk_thread_id();
    if (tid < Q_STEP) {
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < D / 8; ++c)
            s += hk_u32_as_f32(hk_lds_load_b32(lds, KV_DPART + (c * Q_STEP + tid) * 4));
        hk_lds_store_b32(lds, KV_D + tid * 4, hk_f32_as_u32(s));
    }
}

// The A operands of acc (32 x 32) += A B over head_dim: rows of the row-major tile at off.
HK_DEVICE void bwd_row_ops(hk_lds_t lds, int off, hk_mfma_ab_t (&op)[D_CHUNKS][AB_PER_CHUNK])
{
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
    if constexpr (SWZ) {
        // chunk 2u + half: the XOR takes the lane's half and u's low bit, so
        // two lane offsets (u even, odd) and immediates for the rest
        const int e0 = off + bwd_rc(row, 16 * half), e1 = off + bwd_rc(row, 32 + 16 * half);
#pragma unroll
        for (int u = 0; u < D_CHUNKS; ++u)
            op[u][0] = hk_lds_load_mfma_ab(lds, (u % 2 ? e1 : e0) + 64 * (u / 2));
    } else {
        // a chunk's operands from one 16-byte read (8-byte reads met rows 8 apart in one bank)
#pragma unroll
        for (int u = 0; u < D_CHUNKS; ++u)
            attn_lds_ops(lds, off + bwd_rc(row, (16 * u + 8 * half) * 2), op[u]);
    }
}

// The A operand (st, dt) of acc[dt] (d x 32) += A B over rows r0 .. r0 + 31
// of a step, A the d x rows transpose of its tile, in the k order of
// bwd_to_b's operands: read transposed from the row-major tile at row_off
// (LDS_TR), or from the transposed copy at t_off (pitch tp, rows in
// attn_vt_pos order).
HK_DEVICE hk_mfma_ab_t bwd_at_op(hk_lds_t lds, int row_off, int t_off, int tp, int r0, int st, int dt)
{
#if BWD_TR
    (void)t_off;
    (void)tp;
    // k = 8 h + j of a 16-row step holds row 8 (j / 4) + 4 h + j % 4: lane
    // 16 g + s reads row 4 (g / 2) + s / 4 (+ 8 for the operand's second
    // half), columns 16 (g % 2) + 4 (s % 4) .. + 3 of each 32-column tile
    // (the XOR of SWZ sees the lane's row and columns only: st and dt are immediates)
    const int lane = hk_lane_id(), s = lane % 16, g = lane / 16;
    const int row = r0 + 4 * (g / 2) + s / 4, cb = (16 * (g % 2) + 4 * (s % 4)) * 2;
    const int olo = row_off + bwd_rc(row, cb), ohi = row_off + bwd_rc(row + 8, cb);
    const hk_bf16x4 lo = hk_lds_load_tr_b64(lds, olo + st * 16 * ROW_PITCH + dt * 64);
    const hk_bf16x4 hi = hk_lds_load_tr_b64(lds, ohi + st * 16 * ROW_PITCH + dt * 64);
    const hk_bf16x8 v = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]};
    return __builtin_bit_cast(hk_mfma_ab_t, v);
#else
    (void)row_off;
    return hk_lds_load_mfma_ab(lds, attn_vt_off(t_off, tp, r0, st, dt));
#endif
}

// VT_PAIRS: the A operands of k steps s0 .. s0 + AB_PER_CHUNK - 1 (as
// bwd_at_op's from the transposed copy) from one 16-byte read.
HK_DEVICE void bwd_at_pair(hk_lds_t lds, int t_off, int tp, int r0, int s0, int dt, hk_mfma_ab_t (&a)[AB_PER_CHUNK])
{
    attn_lds_ops(lds, attn_vt_off(t_off, tp, r0, s0, dt), a);
}

// Every A operand of bwd_at_op. From the transposed copy up to head_dim 128
// (VT_PAIRS), each 16-byte read's operands at once.
HK_DEVICE void bwd_at_ops(hk_lds_t lds, int row_off, int t_off, int tp, int r0,
                          hk_mfma_ab_t (&op)[STEPS32][D_TILES])
{
    if constexpr (VT_PAIRS) {
#pragma unroll
        for (int s0 = 0; s0 < STEPS32; s0 += AB_PER_CHUNK)
#pragma unroll
            for (int dt = 0; dt < D_TILES; ++dt) {
                hk_mfma_ab_t a[AB_PER_CHUNK];
                bwd_at_pair(lds, t_off, tp, r0, s0, dt, a);
#pragma unroll
                for (int e = 0; e < AB_PER_CHUNK; ++e)
                    op[s0 + e][dt] = a[e];
            }
    } else {
#pragma unroll
        for (int st = 0; st < STEPS32; ++st)
#pragma unroll
            for (int dt = 0; dt < D_TILES; ++dt)
                op[st][dt] = bwd_at_op(lds, row_off, t_off, tp, r0, st, dt);
    }
}

// Without BATCH: acc += A B over head_dim (A rows of the tile at off) and
// acc[dt] += A^T B (as bwd_at_op), each operand read where its MFMA takes it.
HK_DEVICE void bwd_mm_rows(hk_lds_t lds, int off, const hk_mfma_ab_t (&bop)[D_CHUNKS][AB_PER_CHUNK],
                           hk_mfma_acc_t &acc)
{
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
#pragma unroll
    for (int u = 0; u < D_CHUNKS; ++u) {
        hk_mfma_ab_t a[AB_PER_CHUNK]; // a chunk's operands from one 16-byte read, as bwd_row_ops
        attn_lds_ops(lds, off + bwd_rc(row, (16 * u + 8 * half) * 2), a);
#pragma unroll
        for (int e = 0; e < AB_PER_CHUNK; ++e)
            acc = hk_mfma_32x32(a[e], bop[u][e], acc);
    }
}

HK_DEVICE void bwd_mm_at(hk_lds_t lds, int row_off, int t_off, int tp, int r0, const hk_mfma_ab_t (&bop)[STEPS32],
                         hk_mfma_acc_t (&acc)[D_TILES])
{
    if constexpr (VT_PAIRS) { // two k steps' operands from one 16-byte read, as bwd_at_ops
#pragma unroll
        for (int s0 = 0; s0 < STEPS32; s0 += AB_PER_CHUNK)
#pragma unroll
            for (int dt = 0; dt < D_TILES; ++dt) {
                hk_mfma_ab_t a[AB_PER_CHUNK];
                bwd_at_pair(lds, t_off, tp, r0, s0, dt, a);
#pragma unroll
                for (int e = 0; e < AB_PER_CHUNK; ++e)
                    acc[dt] = hk_mfma_32x32(a[e], bop[s0 + e], acc[dt]);
            }
    } else {
#pragma unroll
        for (int st = 0; st < STEPS32; ++st)
#pragma unroll
            for (int dt = 0; dt < D_TILES; ++dt)
                acc[dt] = hk_mfma_32x32(bwd_at_op(lds, row_off, t_off, tp, r0, st, dt), bop[st], acc[dt]);
    }
}

// D's terms per row as a KV step reads them: the partial sums (LDS_TR) or D.
static constexpr int KV_DN = LDS_TR ? KV_NPART : 1;
static constexpr int KV_DREAD = LDS_TR ? KV_DPART : KV_D;

// P = exp2(S c - LSE log2 e) and dS = P (dP - D) in place, element i of the
// lane holding query qh + (i/4)*8 + i%4 and key `key`; MASK: 0 for a query
// past the last or a key it does not see.
// Rows g*8 .. + 3 of bwd_softmax's: LSE l4, D's terms d4.
template <bool MASK>
HK_DEVICE void bwd_softmax4(const bwd_dims &x, int qh, int key, int g, const hk_u32x4 &l4,
                            const hk_u32x4 (&d4)[KV_DN], hk_mfma_acc_t &s, hk_mfma_acc_t &dp)
{
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float dd = hk_u32_as_f32(d4[0][j]);
#pragma unroll
        for (int p = 1; p < KV_DN; ++p)
            dd += hk_u32_as_f32(d4[p][j]);
        const int i = g * 4 + j, qi = qh + g * 8 + j;
        float p = hk_exp2f(s[i] * x.c - hk_u32_as_f32(l4[j]));
        if (MASK)
            p = qi < x.Sq && (!CAUSAL || key <= qi + (x.Sk - x.Sq)) ? p : 0.0f;
        s[i] = p;
        dp[i] = p * (dp[i] - dd);
    }
}

template <bool MASK>
HK_DEVICE void bwd_softmax(const bwd_dims &x, int qh, int key, const hk_u32x4 (&l4)[4],
                           const hk_u32x4 (&d4)[4][KV_DN], hk_mfma_acc_t &s, hk_mfma_acc_t &dp)
{
#pragma unroll
    for (int g = 0; g < 4; ++g)
        bwd_softmax4<MASK>(x, qh, key, g, l4[g], d4[g], s, dp);
}
// One wave, one step of Q_STEP queries from q0 out of the buffer at b, keys
// kw0 + 0..31 (the lane's: kw0 + lane % 32), one 32-query subtile after the
// other: S = Q K^T, dP = dO V^T (A from LDS, B from registers; the D layout
// puts the key in the lane and 16 queries in its registers), P, dS, then
// dV^T += dO^T P, dK^T += Q^T dS (P and dS, converted to bf16, are the B
// operands as they are). Each product's LDS operands are read together
// before its MFMAs (scheduling barriers keep them so: one wait per group,
// not one per MFMA), the transposed ones under the softmax. issue() runs
// once, after the first subtile's LDS reads are issued: the next step's
// global loads go out there (issued before those reads, their address
// registers would be waited for when the reads reuse them).
template <class F>
HK_DEVICE void bwd_kv_step(hk_lds_t lds, int b, const bwd_dims &x, int q0, int kw0,
                           const hk_mfma_ab_t (&kop)[D_CHUNKS][AB_PER_CHUNK],
                           const hk_mfma_ab_t (&vop)[D_CHUNKS][AB_PER_CHUNK],
                           hk_mfma_acc_t (&dk)[D_TILES], hk_mfma_acc_t (&dv)[D_TILES], F &&issue)
{
    const int lane = hk_lane_id();
    const int half = lane / 32, key = kw0 + lane % 32;
#pragma unroll
    for (int q = 0; q < Q_SUB; ++q) {
        hk_mfma_acc_t s = hk_mfma_acc_zero(), dp = hk_mfma_acc_zero();
        hk_mfma_ab_t gt[STEPS32][D_TILES], qt[STEPS32][D_TILES]; // BATCH only
        if constexpr (BATCH) {
            hk_mfma_ab_t qa[D_CHUNKS][AB_PER_CHUNK], ga[D_CHUNKS][AB_PER_CHUNK];
            bwd_row_ops(lds, b + KV_Q + q * 32 * ROW_PITCH, qa);
            bwd_row_ops(lds, b + KV_DO + q * 32 * ROW_PITCH, ga);
            bwd_sched();
            if (q == 0) {
                issue();
                bwd_sched();
            }
#pragma unroll
            for (int u = 0; u < D_CHUNKS; ++u)
#pragma unroll
                for (int e = 0; e < AB_PER_CHUNK; ++e) {
                    s = hk_mfma_32x32(qa[u][e], kop[u][e], s);     // S = Q K^T
                    dp = hk_mfma_32x32(ga[u][e], vop[u][e], dp);   // dP = dO V^T
                }
            bwd_sched();
        } else {
            if (q == 0)
                issue();
            bwd_mm_rows(lds, b + KV_Q + q * 32 * ROW_PITCH, kop, s);
            bwd_mm_rows(lds, b + KV_DO + q * 32 * ROW_PITCH, vop, dp);
        }
        // element i of S, dP: query q0 + 32 q + (i/4)*8 + h*4 + i%4; with
        // BATCH its LSE and D are read first (the softmax waits for them
        // alone), and a subtile every lane of the wave sees whole (uniform)
        // takes a softmax without the mask; without, 4 rows at a time (fewer
        // registers)
        const int qb = q0 + q * 32;
        if constexpr (BATCH) {
            hk_u32x4 l4[4], d4[4][KV_DN];
#pragma unroll
            for (int g = 0; g < 4; ++g) {
                const int r = q * 32 + g * 8 + half * 4;
                l4[g] = hk_lds_load_b128(lds, b + KV_LSE + r * 4);
#pragma unroll
                for (int p = 0; p < KV_DN; ++p)
                    d4[g][p] = hk_lds_load_b128(lds, b + KV_DREAD + (p * Q_STEP + r) * 4);
            }
            bwd_at_ops(lds, b + KV_DO, b + KV_DOT, QT_PITCH, q * 32, gt);
            bwd_at_ops(lds, b + KV_Q, b + KV_QT, QT_PITCH, q * 32, qt);
            bwd_sched();
            if (qb + 32 <= x.Sq && (!CAUSAL || kw0 + 31 <= qb + (x.Sk - x.Sq)))
                bwd_softmax<false>(x, qb + half * 4, key, l4, d4, s, dp);
            else
                bwd_softmax<true>(x, qb + half * 4, key, l4, d4, s, dp);
        } else {
#pragma unroll
            for (int g = 0; g < 4; ++g) {
                const int r = q * 32 + g * 8 + half * 4;
                hk_u32x4 d4[KV_DN];
                const hk_u32x4 l4 = hk_lds_load_b128(lds, b + KV_LSE + r * 4);
#pragma unroll
                for (int p = 0; p < KV_DN; ++p)
                    d4[p] = hk_lds_load_b128(lds, b + KV_DREAD + (p * Q_STEP + r) * 4);
                bwd_softmax4<true>(x, qb + half * 4, key, g, l4, d4, s, dp);
            }
        }
        hk_mfma_ab_t pop[STEPS32], dsop[STEPS32];
        bwd_to_b(s, pop);
        bwd_to_b(dp, dsop);
        bwd_sched();
        if constexpr (BATCH) {
#pragma unroll
            for (int st = 0; st < STEPS32; ++st)
#pragma unroll
                for (int dt = 0; dt < D_TILES; ++dt) {
                    dv[dt] = hk_mfma_32x32(gt[st][dt], pop[st], dv[dt]);   // dV^T += dO^T P
                    dk[dt] = hk_mfma_32x32(qt[st][dt], dsop[st], dk[dt]);  // dK^T += Q^T dS
                }
        } else {
            bwd_mm_at(lds, b + KV_DO, b + KV_DOT, QT_PITCH, q * 32, pop, dv);
            bwd_mm_at(lds, b + KV_Q, b + KV_QT, QT_PITCH, q * 32, dsop, dk);
        }
        bwd_sched();
    }
}

#if BWD_TR
// ---- KV rows where LDS is read transposed (double-buffered steps) -------------
// A step's rows in registers, loaded a step ahead: thread (wave w, lane l)
// holds row 32 (w / KV_NPART) + l % 32 of the step, its 16-byte pieces
// s, s + KV_TPR, ... (slot s = 2 (w % KV_NPART) + l / 32) of Q, dO and O.
// So a row's KV_TPR threads pair up as lanes l and l ^ 32 of KV_NPART waves:
// D's partial sum of a pair is added across the halves, and the KV_NPART
// waves' sums are added where D is read (no barrier of their own).
static constexpr int KV_TPR = ATTN_THREADS / Q_STEP, KV_PIECES = D / 8;
static constexpr int KV_PJ = (KV_PIECES + KV_TPR - 1) / KV_TPR;
struct bwd_kvt_rows {
    hk_bf16x8 q[KV_PJ], g[KV_PJ], o[KV_PJ];
    float lse;                                           // raw: scaled at the put
};

HK_DEVICE int bwd_kvt_row() { return hk_lane_id() % 32 + 32 * (hk_wave_id() / KV_NPART); }
HK_DEVICE int bwd_kvt_slot() { return 2 * (hk_wave_id() % KV_NPART) + hk_lane_id() / 32; }

// The head's tensors from the step's first row, and how many rows are left;
// the thread's row offsets (elements).
struct bwd_kvt_src {
    const hk_bf16 *q, *o, *g;
    const float *lse;
    int left;
    long rq, ro, rg;
};

// A thread whose row is past the last query loads the step's first row
// instead (finite data, no branch): its P is masked to 0, which zeroes its
// share of every product.
template <bool VEC>
HK_DEVICE void bwd_kvt_fetch_v(bwd_kvt_rows &r, const bwd_kvt_src &src)
{
    const bool in = bwd_kvt_row() < src.left;
    const int slot = bwd_kvt_slot();
    const hk_bf16 *q = src.q + (in ? src.rq : 0), *g = src.g + (in ? src.rg : 0), *o = src.o + (in ? src.ro : 0);
#pragma unroll
    for (int j = 0; j < KV_PJ; ++j) {
        const int c = slot + KV_TPR * j;
        if (KV_PIECES % KV_TPR == 0 || c < KV_PIECES) {
            r.q[j] = hk_global_load_bf16x8(q + 8 * c, 8, VEC);
            r.g[j] = hk_global_load_bf16x8(g + 8 * c, 8, VEC);
            r.o[j] = hk_global_load_bf16x8(o + 8 * c, 8, VEC);
        }
    }
}

// Every thread loads the LSE of query lane % Q_STEP (the first row's past the last).
HK_DEVICE void bwd_kvt_fetch(bwd_kvt_rows &r, const bwd_kvt_src &src, bool vec)
{
    const int t = hk_lane_id() % Q_STEP;
    if (vec)                                             // uniform: one branch per step
        bwd_kvt_fetch_v<true>(r, src);
    else
        bwd_kvt_fetch_v<false>(r, src);
    r.lse = hk_global_load_f32(src.lse + (t < src.left ? t : 0));
}

// The step's tiles into the buffer at b: Q, dO row-major, LSE * log2(e) and
// D's partial sums.
HK_DEVICE void bwd_kvt_put(hk_lds_t lds, int b, const bwd_kvt_rows &r)
{
    const int row = bwd_kvt_row(), slot = bwd_kvt_slot();
    float part = 0.0f;
    // piece c = slot + KV_TPR j: with SWZ the XOR sees the slot only (KV_TPR 4)
    static_assert(!SWZ || KV_TPR == 4, "SWZ: 4 slots a row");
    const int o = b + bwd_rc(row, slot * 16);
#pragma unroll
    for (int j = 0; j < KV_PJ; ++j) {
        const int c = slot + KV_TPR * j;
        if (KV_PIECES % KV_TPR == 0 || c < KV_PIECES) {
            const int at = SWZ ? o + KV_TPR * 16 * j : b + bwd_rc(row, c * 16);
            hk_lds_store_b128(lds, at + KV_Q, __builtin_bit_cast(hk_u32x4, r.q[j]));
            hk_lds_store_b128(lds, at + KV_DO, __builtin_bit_cast(hk_u32x4, r.g[j]));
            part += bwd_dot8(r.g[j], r.o[j]);
        }
    }
    part += hk_swap_halves(part);                        // the row's two slots of this wave
    // both halves store the same sum, and every wave the same LSE: no branch
    hk_lds_store_b32(lds, b + KV_DPART + ((hk_wave_id() % KV_NPART) * Q_STEP + row) * 4, hk_f32_as_u32(part));
    hk_lds_store_b32(lds, b + KV_LSE + (hk_lane_id() % Q_STEP) * 4, hk_f32_as_u32(r.lse * LOG2E));
}

#endif

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
    const bool vec = attn_aligned<8>(a.Q, a.q_stride_b, a.q_stride_s, a.q_stride_h) &&
                     attn_aligned<8>(a.O, a.o_stride_b, a.o_stride_s, a.o_stride_h) &&
                     attn_aligned<8>(a.dO, a.do_stride_b, a.do_stride_s, a.do_stride_h);
    hk_mfma_ab_t kop[D_CHUNKS][AB_PER_CHUNK], vop[D_CHUNKS][AB_PER_CHUNK];
    bwd_b_ops(Kh, a.k_stride_s, key, x.Sk, vk, kop);
    bwd_b_ops(Vh, a.v_stride_s, key, x.Sk, vv, vop);
    hk_mfma_acc_t dk[D_TILES], dv[D_TILES];
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        dk[dt] = dv[dt] = hk_mfma_acc_zero();

    // steps of queries that see a key of the block: from the first query
    // that sees key k0 (causal) to the last query, for every query head of
    // the group (one flat loop: one back edge, barriers in every trip)
    const int qfirst = CAUSAL ? (k0 - diag > 0 ? k0 - diag : 0) : 0;
    const int t0 = qfirst / Q_STEP, n_t = qfirst < x.Sq ? (x.Sq + Q_STEP - 1) / Q_STEP - t0 : 0;
#if BWD_TR
    // double-buffered: step w reads buffer w % 2 while step w + 1's rows,
    // loaded before its MFMAs, are put into the other after them; one
    // barrier per step (a wave puts into a buffer only after every wave has
    // passed the barrier that ended the step reading it). src walks the
    // steps: t0 .. of the group's first query head, then of the next.
    bwd_kvt_src src;
    src.q = a.Q + (long)b * a.q_stride_b + (long)hkv * group * a.q_stride_h + (long)t0 * Q_STEP * a.q_stride_s;
    src.o = a.O + (long)b * a.o_stride_b + (long)hkv * group * a.o_stride_h + (long)t0 * Q_STEP * a.o_stride_s;
    src.g = a.dO + (long)b * a.do_stride_b + (long)hkv * group * a.do_stride_h + (long)t0 * Q_STEP * a.do_stride_s;
    src.lse = a.LSE + ((long)b * x.Hq + hkv * group) * x.Sq + t0 * Q_STEP;
    src.left = x.Sq - t0 * Q_STEP;
    src.rq = (long)bwd_kvt_row() * a.q_stride_s;
    src.ro = (long)bwd_kvt_row() * a.o_stride_s;
    src.rg = (long)bwd_kvt_row() * a.do_stride_s;
    bwd_kvt_rows rows;
    if (n_t > 0) {
        bwd_kvt_fetch(rows, src, vec);
        bwd_kvt_put(lds, 0, rows);
    }
    hk_barrier();
    // The body is straight-line: the last trip fetches its own step again
    // and puts it into the buffer nobody reads any more (so every trip's
    // loads, stores and waits are one block, as on the device).
    int q0 = t0 * Q_STEP;
    for (int w = 0; w < group * n_t; ++w) {
        const int cur = (w & 1) * KV_BUF, qc = q0;
        // the next step (uniform): the next rows, or the next head's first
        const bool more = w + 1 < group * n_t, next_head = src.left <= Q_STEP;
        const int drow = !more ? 0 : next_head ? t0 * Q_STEP - q0 : Q_STEP, dh = more && next_head;
        q0 += drow;
        src.q += (long)drow * a.q_stride_s + (dh ? a.q_stride_h : 0);
        src.o += (long)drow * a.o_stride_s + (dh ? a.o_stride_h : 0);
        src.g += (long)drow * a.do_stride_s + (dh ? a.do_stride_h : 0);
        src.lse += drow + (dh ? x.Sq : 0);
        src.left = x.Sq - q0;
        bwd_kv_step(lds, cur, x, qc, kw0, kop, vop, dk, dv, [&] { bwd_kvt_fetch(rows, src, vec); });
        bwd_kvt_put(lds, KV_BUF - cur, rows);
        hk_barrier();
    }
#else
    // one step ahead: the rows of step w + 1 are loaded before step w computes
    bwd_kv_rows rows;
    if (n_t > 0)
        bwd_kv_fetch(rows, a, a.Q + (long)b * a.q_stride_b + (long)hkv * group * a.q_stride_h,
                     a.O + (long)b * a.o_stride_b + (long)hkv * group * a.o_stride_h,
                     a.dO + (long)b * a.do_stride_b + (long)hkv * group * a.do_stride_h,
                     a.LSE + ((long)b * x.Hq + hkv * group) * x.Sq, t0 * Q_STEP, x.Sq, vec);
    for (int w = 0; w < group * n_t; ++w) {
        const int q0 = (t0 + w % n_t) * Q_STEP;
        hk_barrier();                                    // the previous step's tiles are read
        bwd_kv_put(lds, rows);
        hk_barrier();
        bwd_kv_rowterm(lds);
        hk_barrier();
        // straight-line: the last trip fetches its own step again (uniform)
        const int wn = w + 1 < group * n_t ? w + 1 : w;
        const int hq = hkv * group + wn / n_t, qn = (t0 + wn % n_t) * Q_STEP;
        // every wave, even one whose keys this step's queries do not see
        // (masked to zero): the others hold the barrier anyway, and the loop
        // keeps one body
        bwd_kv_step(lds, 0, x, q0, kw0, kop, vop, dk, dv, [&] {
            bwd_kv_fetch(rows, a, a.Q + (long)b * a.q_stride_b + (long)hq * a.q_stride_h,
                         a.O + (long)b * a.o_stride_b + (long)hq * a.o_stride_h,
                         a.dO + (long)b * a.do_stride_b + (long)hq * a.do_stride_h,
                         a.LSE + ((long)b * x.Hq + hq) * x.Sq, qn, x.Sq, vec);
        });
    }
#endif
    hk_bf16 *dKh = a.dK + (long)b * a.k_stride_b + (long)hkv * a.k_stride_h;
    hk_bf16 *dVh = a.dV + (long)b * a.v_stride_b + (long)hkv * a.v_stride_h;
    bwd_store_t(dKh, a.k_stride_s, key, key < x.Sk, a.scale, dk);
    bwd_store_t(dVh, a.v_stride_s, key, key < x.Sk, 1.0f, dv);
}

// ---- Q workgroups ------------------------------------------------------------
// A step's keys in registers (loaded a step ahead, as bwd_kv_rows): per unit
// of two rows and 8 columns, K and V.
static constexpr int Q_PAIRS = BLOCK_N / 2, Q_UNITS = Q_PAIRS * (D / 8);
static constexpr int Q_J = (Q_UNITS + ATTN_THREADS - 1) / ATTN_THREADS;
struct bwd_q_rows {
    hk_bf16x8 k[Q_J][2], v[Q_J][2];
};

HK_DEVICE void bwd_q_fetch(bwd_q_rows &r, const hk_args &a, const hk_bf16 *Kh, const hk_bf16 *Vh, int kb, int Sk,
                           bool vk, bool vv)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < Q_J; ++j) {
        const int u = tid + ATTN_THREADS * j;
        if (Q_UNITS % ATTN_THREADS == 0 || u < Q_UNITS) {
            const int p = u % Q_PAIRS, c = (u / Q_PAIRS) * 8;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                r.k[j][h] = bwd_row8(Kh, a.k_stride_s, kb + 2 * p + h, Sk, c, vk);
                r.v[j][h] = bwd_row8(Vh, a.v_stride_s, kb + 2 * p + h, Sk, c, vv);
            }
        }
    }
}

// K (row-major, and transposed unless LDS_TR) and V (row-major) of a step,
// into the buffer at b.
HK_DEVICE void bwd_q_put(hk_lds_t lds, int b, const bwd_q_rows &r)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < Q_J; ++j) {
        const int u = tid + ATTN_THREADS * j;
        if (Q_UNITS % ATTN_THREADS == 0 || u < Q_UNITS) {
            const int p = u % Q_PAIRS, c = (u / Q_PAIRS) * 8;
            bwd_put_pair(lds, b + Q_K, LDS_TR ? -1 : b + Q_KT, KT_PITCH, p, c, r.k[j][0], r.k[j][1]);
            bwd_put_pair(lds, b + Q_V, -1, KT_PITCH, p, c, r.v[j][0], r.v[j][1]);
        }
    }
}

// One wave, one step of BLOCK_N keys from kb out of the buffer at b, one
// 32-key subtile after the other: the lane's query (its B operands, LSE *
// log2(e) lse2, row term dd, last visible key klim); S^T = K Q^T, dP^T = V
// dO^T, dS^T = P^T (dP^T - D), dQ^T += K^T dS^T, each product's LDS operands
// read together before its MFMAs, as in bwd_kv_step.
HK_DEVICE void bwd_q_step(hk_lds_t lds, int b, const bwd_dims &x, int kb, bool qv, int klim, float lse2, float dd,
                          const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK],
                          const hk_mfma_ab_t (&doop)[D_CHUNKS][AB_PER_CHUNK], hk_mfma_acc_t (&dq)[D_TILES])
{
    const int half = hk_lane_id() / 32;
#pragma unroll
    for (int t = 0; t < K_SUB; ++t) {
        hk_mfma_acc_t s = hk_mfma_acc_zero(), dp = hk_mfma_acc_zero();
        hk_mfma_ab_t kt[STEPS32][D_TILES]; // BATCH only
        if constexpr (BATCH) {
            hk_mfma_ab_t ka[D_CHUNKS][AB_PER_CHUNK], va[D_CHUNKS][AB_PER_CHUNK];
            bwd_row_ops(lds, b + Q_K + t * 32 * ROW_PITCH, ka);
            bwd_row_ops(lds, b + Q_V + t * 32 * ROW_PITCH, va);
            bwd_sched();
#pragma unroll
            for (int u = 0; u < D_CHUNKS; ++u)
#pragma unroll
                for (int e = 0; e < AB_PER_CHUNK; ++e) {
                    s = hk_mfma_32x32(ka[u][e], qop[u][e], s);     // S^T = K Q^T
                    dp = hk_mfma_32x32(va[u][e], doop[u][e], dp);  // dP^T = V dO^T
                }
            bwd_sched();
            bwd_at_ops(lds, b + Q_K, b + Q_KT, KT_PITCH, t * 32, kt);
            bwd_sched();
        } else {
            bwd_mm_rows(lds, b + Q_K + t * 32 * ROW_PITCH, qop, s);
            bwd_mm_rows(lds, b + Q_V + t * 32 * ROW_PITCH, doop, dp);
        }
        // element i: key kb + 32 t + (i/4)*8 + h*4 + i%4; masked past the lane's last key
        const int k0 = kb + t * 32 + half * 4;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const bool vis = qv && k0 + (i / 4) * 8 + i % 4 <= klim;
            const float p = vis ? hk_exp2f(s[i] * x.c - lse2) : 0.0f;
            dp[i] = p * (dp[i] - dd);
        }
        hk_mfma_ab_t dsop[STEPS32];
        bwd_to_b(dp, dsop);
        bwd_sched();
        if constexpr (BATCH) {
#pragma unroll
            for (int st = 0; st < STEPS32; ++st)
#pragma unroll
                for (int dt = 0; dt < D_TILES; ++dt)
                    dq[dt] = hk_mfma_32x32(kt[st][dt], dsop[st], dq[dt]);  // dQ^T += K^T dS^T
        } else {
            bwd_mm_at(lds, b + Q_K, b + Q_KT, KT_PITCH, t * 32, dsop, dq);
        }
        bwd_sched();
    }
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
    hk_mfma_acc_t dq[D_TILES];
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        dq[dt] = hk_mfma_acc_zero();

    const int n_blocks = attn_key_blocks(attn_key_end(q0, x.Sq, x.Sk));
    // one step ahead: the keys of step t + 1 are loaded before step t computes
    bwd_q_rows rows;
    if (n_blocks > 0)
        bwd_q_fetch(rows, a, Kh, Vh, 0, x.Sk, vk, vv);
#if BWD_TR
    // double-buffered as the KV loop: one barrier per step
    if (n_blocks > 0)
        bwd_q_put(lds, 0, rows);
    hk_barrier();
    for (int t = 0; t < n_blocks; ++t) {           // straight-line, as the KV loop
        const int kb = t * BLOCK_N, cur = (t & 1) * Q_BUF;
        bwd_q_fetch(rows, a, Kh, Vh, t + 1 < n_blocks ? kb + BLOCK_N : kb, x.Sk, vk, vv);
        bwd_q_step(lds, cur, x, kb, qv, klim, lse2, dd, qop, doop, dq);
        bwd_q_put(lds, Q_BUF - cur, rows);
        hk_barrier();
    }
#else
    for (int t = 0; t < n_blocks; ++t) {
        const int kb = t * BLOCK_N;
        hk_barrier();                                    // the previous step's tiles are read
        bwd_q_put(lds, 0, rows);
        hk_barrier();
        bwd_q_fetch(rows, a, Kh, Vh, t + 1 < n_blocks ? kb + BLOCK_N : kb, x.Sk, vk, vv);
        bwd_q_step(lds, 0, x, kb, qv, klim, lse2, dd, qop, doop, dq);
    }
#endif
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
