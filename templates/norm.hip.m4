m4_divert(-1)                                                   -*- C -*-
# norm.hip.m4 - RMSNorm and LayerNorm fused with dropout and the residual
# add, forward and backward; one source for AMD and sm_90a (gen/op_norm.c).
#
# Rows of `hidden' contiguous elements (bf16), fp32 statistics:
#   s = dropout(x) + residual            (each part optional; s rounded to bf16)
#   rmsnorm:   y = s * rstd * w,          rstd = 1 / sqrt(mean(s^2) + eps)
#   layernorm: y = (s - mean) * rstd * w + b,  rstd = 1 / sqrt(var(s) + eps)
# dropout(x) = x * keep / (1 - p); keep = Philox4x32-10 word >= p * 2^32 with
# key (seed lo, seed hi) and counter (col / 4, row, offset lo, offset hi),
# word col % 4: the backward regenerates the mask from seed and offset.
#
# phase fwd (grid rows, one workgroup per row): writes y, s (when residual
#   or dropout makes it differ from x), rstd and mean (layernorm).
# phase bwd (grid min(rows, PARTS)): workgroup g does rows g, g + PARTS, ...;
#   dx (and d_residual when dropout makes them differ), and its partial sums
#   of dweight / dbias into row g of dw_part / db_part [PARTS][hidden].
# phase bwd_reduce (grid cdiv(hidden, threads)): dweight = the sum of the
#   partial rows in row order; fixed orders everywhere, so results are the
#   same bits run to run.
#
# Each thread owns units of 8 elements u = tid, tid + T, ...; the first UNITS
# (the plan's) stay in registers, as many as the row needs (a count the same
# in every thread: the loops stop on a uniform branch), the rest are re-read.
# Vector path (16-byte loads and stores) when hidden % 8 == 0 and every bf16
# pointer is 16-byte aligned, element loads otherwise (same code, n_valid < 8
# at the row tail).  Block sums in a fixed order (norm_sum2): two LDS stages,
# or warp shuffles and one LDS stage (shfl).  The plan's other tunables (the
# descriptor says what each does): prefetch, batch, l2prefetch, pack,
# occupancy, pipeline, acc_bytes, welford, shifted.

hkm_check_one_of([kind], [rmsnorm], [layernorm])
hkm_check_one_of([phase], [fwd], [bwd], [bwd_reduce])
hkm_check_one_of([weight_dtype], [bf16], [fp32])
hkm_if_true([residual], [], [])
hkm_param([rows])hkm_param([hidden])hkm_param([eps])hkm_param([dropout])

# hkm_norm_ln / _res / _drop(IF, ELSE): IF for layernorm / a residual / dropout.
m4_define([hkm_norm_ln], [hkm_if_param([kind], [layernorm], [$1], [$2])])
m4_define([hkm_norm_res], [hkm_if_true([residual], [$1], [$2])])
m4_define([hkm_norm_drop], [hkm_if_param([dropout], [0], [$2], [$1])])
# hkm_norm_s(IF, ELSE): IF when s differs from x (residual or dropout), so the forward writes it.
m4_define([hkm_norm_s],
[m4_ifelse(hkm_norm_res([1], [0])hkm_norm_drop([1], [0]), [00], [$2], [$1])])
# hkm_norm_welford(IF, ELSE): IF for layernorm with one-pass statistics.
m4_define([hkm_norm_welford], [hkm_norm_ln([m4_ifelse(hkm_tune([welford]), [1], [$1], [$2])], [$2])])
# hkm_norm_only(PHASE): what follows reaches the output only in kernels of PHASE.
m4_define([hkm_norm_only],
[m4_ifelse(hkm_param([phase]), [$1], [m4_divert(0)], [m4_divert(-1)])])


hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration (the plan's tunables and the baked parameters) -----------
static constexpr int NORM_T = ]hkm_block_size[;
static constexpr int NORM_UNITS = ]hkm_tune([units])[;   // 8-element units kept in registers
static constexpr int NORM_PARTS = ]hkm_tune([parts])[;   // partial rows of the backward
static constexpr bool NORM_SHFL = ]hkm_tune([shfl])[;     // block sums by warp shuffles, one barrier
static constexpr bool NORM_PREFETCH = ]hkm_tune([prefetch])[; // weights loaded with the row
static constexpr bool NORM_WELFORD = ]hkm_tune([welford])[;   // layernorm: one-pass statistics
static constexpr bool NORM_PACK = ]hkm_tune([pack])[;         // held s (bf16 weights) as bf16 pairs
static constexpr bool NORM_BATCH = ]hkm_tune([batch])[;       // fwd: every held unit's loads before its stores
static constexpr bool NORM_WBATCH = NORM_BATCH || ]hkm_tune([wbatch])[; // fwd: the same for the weights only
static constexpr bool NORM_L2PF = ]hkm_tune([l2prefetch])[;   // fwd: weights asked into L2 with the row
static constexpr bool NORM_PIPE = ]hkm_tune([pipeline])[;     // bwd: the next row's loads before the sums
static constexpr bool NORM_SLATE = ]hkm_tune([slate])[;       // fwd: held units' s stored with y, after the sums
static constexpr int NORM_RPB = ]hkm_tune([rpb])[;            // fwd: rows a block, their weights loaded once
static constexpr bool NORM_VEC_ONLY = ]hkm_tune([vec_only])[; // fwd: 16-byte accesses alone (libhkrt checked the alignment)
static constexpr int NORM_ACC_BYTES = ]hkm_tune([acc_bytes])[; // bwd: LDS for the partial sums (0: registers)
static constexpr bool NORM_HINT_LD = (]hkm_tune([hints])[ & 1) != 0; // the row's streamed inputs read evict-first
static constexpr bool NORM_HINT_ST = (]hkm_tune([hints])[ & 2) != 0; // its outputs stored evict-first
static constexpr bool NORM_LN = ]hkm_norm_ln([true], [false])[;
static constexpr bool NORM_SHIFT = NORM_LN && ]hkm_tune([shifted])[; // layernorm: shifted sums, one block sum
static constexpr bool NORM_RES = ]hkm_norm_res([true], [false])[;
static constexpr bool NORM_DROP = ]hkm_norm_drop([true], [false])[;
static constexpr float NORM_EPS = (float)(]hkm_param([eps])[);
static constexpr double NORM_P = ]hkm_param([dropout])[;
static constexpr unsigned NORM_DROP_THR = (unsigned)(NORM_P * 4294967296.0);
static constexpr float NORM_KEEP_SCALE = (float)(1.0 / (1.0 - NORM_P));
typedef ]hkm_if_param([weight_dtype], [fp32], [[float]], [[hk_bf16]])[ norm_w_t;
static constexpr int NORM_WAVES = NORM_T / HK_WAVE_SIZE;
// LDS of norm_sum2: 2 x T floats, then 2 x T/8 (lds); two turns of 3 x WAVES floats (shfl)
static constexpr int NORM_LDS = NORM_SHFL ? 2 * 3 * 4 * NORM_WAVES : 8 * NORM_T + NORM_T;
static_assert(NORM_T % 32 == 0, "norm_sum2 sums T/8 values 4 at a time");

// ---- Philox 4x32-10 (Salmon et al. 2011), plain integer code ----------------
// The rounds stay a loop: unrolled, AMD holds the 20 round keys (uniform) in SGPRs and
// spilled them in the dropout backward.
HK_DEVICE void norm_philox(unsigned c[4], unsigned k0, unsigned k1)
{
#pragma unroll 1
    for (int r = 0; r < 10; ++r) {
        const unsigned long long p0 = (unsigned long long)0xD2511F53u * c[0];
        const unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c[2];
        const unsigned n0 = (unsigned)(p1 >> 32) ^ c[1] ^ k0, n2 = (unsigned)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (unsigned)p1;
        c[3] = (unsigned)p0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

// Keep bits of the 8 elements col0 .. col0 + 7 of row (col0 % 8 == 0): bit j set = kept.
HK_DEVICE unsigned norm_keep8(long row, int col0, unsigned long long seed, unsigned long long offset)
{
    unsigned bits = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        unsigned c[4] = {(unsigned)(col0 / 4 + h), (unsigned)row, (unsigned)offset, (unsigned)(offset >> 32)};
        norm_philox(c, (unsigned)seed, (unsigned)(seed >> 32));
#pragma unroll
        for (int j = 0; j < 4; ++j)
            bits |= (c[j] >= NORM_DROP_THR ? 1u : 0u) << (4 * h + j);
    }
    return bits;
}

// ---- loads and stores of one unit (8 elements, the first n valid) -------------
HK_DEVICE void norm_load8(const hk_bf16 *p, int n, bool vec, float v[8])
{
    const hk_bf16x8 w = hk_global_load_bf16x8(p, n, vec);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = hk_bf16_to_f32(w[j]);
}

HK_DEVICE void norm_load_w8(const hk_bf16 *p, int n, bool vec, float v[8]) { norm_load8(p, n, vec, v); }

// 8 bf16 of a streamed input (x, residual; s, dy, ds_in): read once (NORM_HINT_LD)
HK_DEVICE hk_bf16x8 norm_ld8(const hk_bf16 *p, int n, bool vec)
{
    return NORM_HINT_LD ? hk_global_load_bf16x8_once(p, n, vec) : hk_global_load_bf16x8(p, n, vec);
}

HK_DEVICE void norm_ld8f(const hk_bf16 *p, int n, bool vec, float v[8])
{
    const hk_bf16x8 w = norm_ld8(p, n, vec);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = hk_bf16_to_f32(w[j]);
}

HK_DEVICE void norm_load_w8(const float *p, int n, bool vec, float v[8])
{
    (void)vec;
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = j < n ? hk_global_load_f32(p + j) : 0.0f;
}

HK_DEVICE void norm_store8(hk_bf16 *p, int n, bool vec, const float v[8])
{
    if (vec && n >= 8) {
        hk_u32x4 w;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            w[j] = hk_f32x2_to_bf16x2(v[2 * j], v[2 * j + 1]);
        if (NORM_HINT_ST)
            hk_global_store_b128_once(p, w);
        else
            hk_global_store_b128(p, w);
        return;
    }
#pragma unroll
    for (int j = 0; j < 8; ++j)
        if (j < n)
            hk_global_store_bf16(p + j, hk_f32_to_bf16(v[j]));
}

HK_DEVICE float norm_round_bf16(float v) { return hk_bf16_to_f32(hk_f32_to_bf16(v)); }

HK_DEVICE bool norm_al16(const void *p) { return ((unsigned long)p) % 16 == 0; }

// ---- block sums: fixed order ----------------------------------------------------
// Every thread gets the block's sums of a and b, the same bits in every thread.
// lds: stage 1, threads t < T/8 add 8 neighbours; stage 2, every thread adds the
// T/8 partials in order; two barriers (a second call may follow at once: its first
// barrier orders it after the reads).
HK_DEVICE void norm_sum2_lds(hk_lds_t lds, float &a, float &b)
{
    const int tid = hk_thread_id();
    hk_lds_store_b32(lds, 4 * tid, hk_f32_as_u32(a));
    hk_lds_store_b32(lds, 4 * (NORM_T + tid), hk_f32_as_u32(b));
    hk_barrier();
    if (tid < NORM_T / 8) {
        float s[2] = {0.0f, 0.0f};
#pragma unroll
        for (int q = 0; q < 2; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const hk_u32x4 w = hk_lds_load_b128(lds, 4 * (q * NORM_T + 8 * tid + 4 * h));
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    s[q] += hk_u32_as_f32(w[j]);
            }
        hk_lds_store_b32(lds, 8 * NORM_T + 4 * tid, hk_f32_as_u32(s[0]));
        hk_lds_store_b32(lds, 8 * NORM_T + 4 * (NORM_T / 8 + tid), hk_f32_as_u32(s[1]));
    }
    hk_barrier();
    float s[2] = {0.0f, 0.0f};
#pragma unroll
    for (int q = 0; q < 2; ++q)
        for (int i = 0; i < NORM_T / 8; i += 4) {
            const hk_u32x4 w = hk_lds_load_b128(lds, 8 * NORM_T + 4 * (q * NORM_T / 8 + i));
#pragma unroll
            for (int j = 0; j < 4; ++j)
                s[q] += hk_u32_as_f32(w[j]);
        }
    a = s[0];
    b = s[1];
}
]m4_ifelse(hkm_tune([shfl]), [1], [[
// shfl: a butterfly in each warp (lane pairs add the same two values: the same
// bits), warp w's sums to LDS at turn % 2, one barrier, every thread adds the
// WAVES sums in order.  Two turns: a warp writing turn k + 2 has passed the barrier
// of turn k + 1, so every read of turn k is done.
HK_DEVICE void norm_sum2_shfl(hk_lds_t lds, int &turn, float &a, float &b)
{
#pragma unroll
    for (int m = HK_WAVE_SIZE / 2; m >= 1; m /= 2) {
        a += hk_shfl_xor_f32(a, m);
        b += hk_shfl_xor_f32(b, m);
    }
    const int base = 12 * NORM_WAVES * (turn & 1), w = hk_wave_id();
    ++turn;
    if (hk_lane_id() == 0) {
        hk_lds_store_b32(lds, base + 4 * w, hk_f32_as_u32(a));
        hk_lds_store_b32(lds, base + 4 * (NORM_WAVES + w), hk_f32_as_u32(b));
    }
    hk_barrier();
    float sa = 0.0f, sb = 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_WAVES; ++i) {
        sa += hk_u32_as_f32(hk_lds_load_b32(lds, base + 4 * i));
        sb += hk_u32_as_f32(hk_lds_load_b32(lds, base + 4 * (NORM_WAVES + i)));
    }
    a = sa;
    b = sb;
}

// Chan et al.'s merge of (count n, mean m, squared deviations q) with a second
// set, the lower-numbered one first (so both lanes of a pair get the same bits).
HK_DEVICE void norm_merge(float &n, float &m, float &q, float nb, float mb, float qb)
{
    const float nn = n + nb, d = mb - m, f = nn > 0.0f ? nb / nn : 0.0f;
    m += d * f;
    q += qb + d * d * n * f;
    n = nn;
}

// The block's (n, mean, squared deviations) from each thread's, as norm_sum2_shfl.
HK_DEVICE void norm_welford_shfl(hk_lds_t lds, int &turn, float &n, float &m, float &q)
{
    const int lane = hk_lane_id();
#pragma unroll
    for (int k = HK_WAVE_SIZE / 2; k >= 1; k /= 2) {
        float pn = hk_shfl_xor_f32(n, k), pm = hk_shfl_xor_f32(m, k), pq = hk_shfl_xor_f32(q, k);
        if (lane & k) { // the partner is the lower lane: it goes first
            const float tn = n, tm = m, tq = q;
            n = pn, m = pm, q = pq;
            pn = tn, pm = tm, pq = tq;
        }
        norm_merge(n, m, q, pn, pm, pq);
    }
    const int base = 12 * NORM_WAVES * (turn & 1), w = hk_wave_id();
    ++turn;
    if (lane == 0) {
        hk_lds_store_b32(lds, base + 4 * w, hk_f32_as_u32(n));
        hk_lds_store_b32(lds, base + 4 * (NORM_WAVES + w), hk_f32_as_u32(m));
        hk_lds_store_b32(lds, base + 4 * (2 * NORM_WAVES + w), hk_f32_as_u32(q));
    }
    hk_barrier();
    n = m = q = 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_WAVES; ++i)
        norm_merge(n, m, q, hk_u32_as_f32(hk_lds_load_b32(lds, base + 4 * i)),
                   hk_u32_as_f32(hk_lds_load_b32(lds, base + 4 * (NORM_WAVES + i))),
                   hk_u32_as_f32(hk_lds_load_b32(lds, base + 4 * (2 * NORM_WAVES + i))));
}

HK_DEVICE void norm_sum2(hk_lds_t lds, int &turn, float &a, float &b) { norm_sum2_shfl(lds, turn, a, b); }
]], [[
HK_DEVICE void norm_sum2(hk_lds_t lds, int &turn, float &a, float &b)
{
    (void)turn;
    norm_sum2_lds(lds, a, b);
}
]])[

// One row's tensors and where the thread is in it.
struct norm_row {
    long row;
    int hidden;
    bool vec;
    unsigned long long seed, offset;
};

// Elements of the unit at col that its loads and stores take: all 8 on the vector path
// (hidden % 8 == 0; only units in the row are touched), so that path is one 16-byte access
// with no element path beside it; else what is left of the row.
HK_DEVICE int norm_n(const norm_row &r, int col) { return r.vec ? 8 : r.hidden - col; }

// dropout(x) of one unit in place
HK_DEVICE void norm_dropout8(const norm_row &r, int col0, float v[8])
{
    if (!NORM_DROP)
        return;
    const unsigned keep = norm_keep8(r.row, col0, r.seed, r.offset);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = (keep >> j) & 1u ? v[j] * NORM_KEEP_SCALE : 0.0f;
}

// A held unit of bf16-exact values: 8 floats, or packed in bf16 pairs (P: half the registers).
template <bool P> struct norm_held8 {
    float f[P ? 1 : 8];
    hk_u32x4 p;
};
static constexpr bool NORM_PACK_W = NORM_PACK && sizeof(norm_w_t) == 2; // fp32 weights stay floats
typedef norm_held8<NORM_PACK> norm_sh8;
typedef norm_held8<NORM_PACK_W> norm_wh8;

template <bool P> HK_DEVICE void norm_hold(norm_held8<P> &h, const float v[8])
{
#pragma unroll
    for (int j = 0; j < 8; ++j)
        if (!P)
            h.f[P ? 0 : j] = v[j];
#pragma unroll
    for (int j = 0; j < 4; ++j)
        h.p[j] = P ? hk_f32x2_to_bf16x2(v[2 * j], v[2 * j + 1]) : 0u;
}

template <bool P> HK_DEVICE void norm_unhold(const norm_held8<P> &h, float v[8])
{
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = P ? hk_u32_as_f32(j % 2 ? h.p[j / 2] & 0xffff0000u : h.p[j / 2] << 16) : h.f[P ? 0 : j];
}
]hkm_norm_only([fwd])[
// ---- phase fwd ---------------------------------------------------------------
// s of unit u: dropout(x) + residual, rounded to bf16 (what is stored is what
// is normalized); stored when asked and when s differs from x.
// Split in two so that a thread's loads of all its units go out before its first
// store (a store may alias a later load: the compiler keeps them in order).
struct norm_raw8 {
    hk_bf16x8 x, res;
};

HK_DEVICE void norm_fetch8(const norm_row &r, const hk_bf16 *x, const hk_bf16 *res, int u, norm_raw8 &q)
{
    const int col = 8 * u, n = norm_n(r, col);
    q.x = norm_ld8(x + col, n, r.vec);
    if (NORM_RES)
        q.res = norm_ld8(res + col, n, r.vec);
}

HK_DEVICE void norm_make8(const norm_row &r, const norm_raw8 &q, hk_bf16 *s_out, int u, bool store, float v[8])
{
    const int col = 8 * u, n = norm_n(r, col);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = hk_bf16_to_f32(q.x[j]);
    norm_dropout8(r, col, v);
    if (NORM_RES)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            v[j] += hk_bf16_to_f32(q.res[j]);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = norm_round_bf16(v[j]);
    if (store && (NORM_RES || NORM_DROP))
        norm_store8(s_out + col, n, r.vec, v);
}

// The same in one go (the unbatched path); with dropout the residual is loaded after the
// mask (so the MI355X model of the dropout kernel counts no load in flight across Philox).
HK_DEVICE void norm_s8(const norm_row &r, const hk_bf16 *x, const hk_bf16 *res, hk_bf16 *s_out, int u, bool store,
                       float v[8])
{
    if (!NORM_DROP) {
        norm_raw8 q;
        norm_fetch8(r, x, res, u, q);
        norm_make8(r, q, s_out, u, store, v);
        return;
    }
    const int col = 8 * u, n = norm_n(r, col);
    norm_ld8f(x + col, n, r.vec, v);
    norm_dropout8(r, col, v);
    if (NORM_RES) {
        float q[8];
        norm_ld8f(res + col, n, r.vec, q);
#pragma unroll
        for (int j = 0; j < 8; ++j)
            v[j] += q[j];
    }
#pragma unroll
    for (int j = 0; j < 8; ++j)
        v[j] = norm_round_bf16(v[j]);
    if (store && (NORM_RES || NORM_DROP))
        norm_store8(s_out + col, n, r.vec, v);
}

// 8 weights as loaded (bf16 patterns or floats), the first n valid, and one of them as a float
template <typename T> struct norm_wraw8;
template <> struct norm_wraw8<hk_bf16> {
    hk_bf16x8 v;
};
template <> struct norm_wraw8<float> {
    float v[8];
};

HK_DEVICE void norm_wfetch(const norm_row &r, const hk_bf16 *p, int n, norm_wraw8<hk_bf16> &q)
{
    q.v = hk_global_load_bf16x8(p, n, r.vec);
}

HK_DEVICE void norm_wfetch(const norm_row &r, const float *p, int n, norm_wraw8<float> &q)
{
    norm_load_w8(p, n, r.vec, q.v);
}

HK_DEVICE float norm_wget(const norm_wraw8<hk_bf16> &q, int j) { return hk_bf16_to_f32(q.v[j]); }
HK_DEVICE float norm_wget(const norm_wraw8<float> &q, int j) { return q.v[j]; }

// weight (and bias) of unit u; bias 0 for rmsnorm
HK_DEVICE void norm_wb8(const norm_row &r, const norm_w_t *w, const norm_w_t *bias, int u, float wv[8], float bv[8])
{
    const int col = 8 * u, n = norm_n(r, col);
    norm_load_w8(w + col, n, r.vec, wv);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        bv[j] = 0.0f;
    if (NORM_LN)
        norm_load_w8(bias + col, n, r.vec, bv);
}

HK_DEVICE void norm_y8(const norm_row &r, hk_bf16 *y, int u, float mean, float rstd, const float v[8],
                       const float wv[8], const float bv[8])
{
    const int col = 8 * u, n = norm_n(r, col);
    float o[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
        o[j] = (v[j] - mean) * rstd * wv[j] + bv[j];
    norm_store8(y + col, n, r.vec, o);
}

// sum over the valid elements of unit u of (v - mean)^2
HK_DEVICE float norm_dev2(const norm_row &r, int u, float mean, const float v[8])
{
    float d2 = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float d = 8 * u + j < r.hidden ? v[j] - mean : 0.0f;
        d2 += d * d;
    }
    return d2;
}

// The shift of the shifted statistics: the row's first x + residual, rounded as s is.
HK_DEVICE float norm_shift(const hk_bf16 *x, const hk_bf16 *res)
{
    float v = hk_bf16_to_f32(hk_global_load_bf16(x, true));
    if (NORM_RES)
        v += hk_bf16_to_f32(hk_global_load_bf16(res, true));
    return norm_round_bf16(v);
}

// valid elements of unit u (0 past the row)
HK_DEVICE int norm_valid(const norm_row &r, int u)
{
    const int n = r.hidden - 8 * u;
    return n < 0 ? 0 : n < 8 ? n : 8;
}

// NORM_RPB rows a block (rpb > 1; every unit held, a baked hidden: norm_check): every load
// of all its rows first (s stored with y, after the sums), the rows' block sums in
// NORM_RPB (layernorm) or NORM_RPB / 2 calls, the weights loaded once for all the rows.
// A missing last row (rows % NORM_RPB) repeats the block's first and is not stored.
struct norm_ptrs {
    const hk_bf16 *x, *res;
    hk_bf16 *s, *y;
    const norm_w_t *w, *bias;
    float *rstd, *mean;
};

HK_DEVICE void norm_fwd_rows(hk_lds_t lds, const norm_ptrs &p, norm_row &r, long rows)
{
    const int tid = hk_thread_id(), hidden = r.hidden, nunits = (hidden + 7) / 8;
    int turn = 0;
    const long row0 = (long)hk_block_id_x() * NORM_RPB;
    norm_sh8 v[NORM_RPB][NORM_UNITS];
    float sum[NORM_RPB], sq[NORM_RPB], k0[NORM_RPB], mean[NORM_RPB], rstd[NORM_RPB];
#pragma unroll
    for (int q = 0; q < NORM_RPB; ++q) {
        const long row = row0 + q < rows ? row0 + q : row0, base = row * hidden;
        const hk_bf16 *x = p.x + base, *res = NORM_RES ? p.res + base : p.res;
        r.row = row;
        k0[q] = NORM_SHIFT ? norm_shift(x, res) : 0.0f;
        sum[q] = sq[q] = 0.0f;
#pragma unroll
        for (int i = 0; i < NORM_UNITS; ++i) {
            const int u = tid + i * NORM_T;
            float t[8];
            if (u < nunits)
                norm_s8(r, x, res, (hk_bf16 *)0, u, false, t);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                t[j] = u < nunits ? t[j] : 0.0f;
                const float d = NORM_SHIFT && 8 * u + j >= hidden ? 0.0f : t[j] - k0[q];
                sum[q] += d;
                sq[q] += d * d;
            }
            norm_hold(v[q][i], t);
        }
    }
#pragma unroll
    for (int q = 0; q < NORM_RPB; q += NORM_LN ? 1 : 2)
        if (NORM_LN)
            norm_sum2(lds, turn, sum[q], sq[q]);
        else
            norm_sum2(lds, turn, sq[q], sq[q + 1]);
#pragma unroll
    for (int q = 0; q < NORM_RPB; ++q) {
        mean[q] = 0.0f;
        if (NORM_LN) { // shifted sums (norm_check), as the one-row kernel
            const float md = sum[q] / (float)hidden, var = sq[q] / (float)hidden - md * md;
            mean[q] = k0[q] + md;
            sq[q] = (var > 0.0f ? var : 0.0f) * (float)hidden;
        }
        rstd[q] = 1.0f / __builtin_sqrtf(sq[q] / (float)hidden + NORM_EPS);
    }
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        const int u = tid + i * NORM_T;
        if (u < nunits) {
            float tw[8], tb[8];
            norm_wb8(r, p.w, p.bias, u, tw, tb);
#pragma unroll
            for (int q = 0; q < NORM_RPB; ++q)
                if (row0 + q < rows) {
                    const long base = (row0 + q) * hidden;
                    float t[8];
                    norm_unhold(v[q][i], t);
                    norm_y8(r, p.y + base, u, mean[q], rstd[q], t, tw, tb);
                    if (NORM_RES || NORM_DROP)
                        norm_store8(p.s + base + 8 * u, norm_n(r, 8 * u), r.vec, t);
                }
        }
    }
    if (tid == 0)
#pragma unroll
        for (int q = 0; q < NORM_RPB; ++q)
            if (row0 + q < rows) {
                hk_global_store_f32(p.rstd + row0 + q, rstd[q]);
                if (NORM_LN)
                    hk_global_store_f32(p.mean + row0 + q, mean[q]);
            }
}

// One row a block (rpb 1).  VEC (vec: only): the vector path alone, a constant, so that a
// unit's loads and stores are single 16-byte accesses with no element path beside them (H200,
// RMSNorm at hidden 4096: 32 registers against 40 with both paths); else r.vec picks per launch.
// The kernel's r.vec is already constant under vec: only; VEC says so here too, and this form
// compiled the run-time hidden LayerNorm to 48 registers on sm_90a, where a plain function or
// the body inline in the kernel took 54.
template <bool VEC> HK_DEVICE void norm_fwd_row(hk_lds_t hk_lds, const norm_ptrs &p, norm_row r)
{
    r.vec = VEC || r.vec;
    const int tid = hk_thread_id(), hidden = r.hidden;
    const hk_bf16 *x0 = p.x, *res0 = p.res;
    hk_bf16 *s0 = p.s, *y0 = p.y;
    const norm_w_t *w = p.w, *bias = p.bias;
    const int nunits = (hidden + 7) / 8;
    // register units the row needs, the same in every thread: the loops over the held
    // units stop there on a uniform branch instead of masking the rest lane by lane
    const int nheld = nunits < NORM_UNITS * NORM_T ? (nunits + NORM_T - 1) / NORM_T : NORM_UNITS;
    int turn = 0;
    const long row = hk_block_id_x();
    norm_raw8 q[NORM_UNITS];
    constexpr int NW = NORM_PREFETCH ? NORM_UNITS : 1;
    norm_wh8 wv[NW], bv[NW];
    const long base = row * hidden;
    const hk_bf16 *x = x0 + base;
    const hk_bf16 *res = NORM_RES ? res0 + base : res0;
    hk_bf16 *s_out = s0 ? s0 + base : s0;
    hk_bf16 *y = y0 + base;
    r.row = row;

    // s: the first NORM_UNITS units of this thread in registers (with their weights when
    // prefetching), the rest re-made later
    norm_sh8 v[NORM_UNITS];
    float sum = 0.0f, sq = 0.0f;
    int cnt = 0;
    // NORM_SHIFT: sums of s - k0 and its squares, k0 the row's first x + residual (the same
    // in every thread; dropout left out: any common shift will do), so one block sum gives
    // the variance without the cancellation of sum(s^2) - n mean^2 far from 0
    // NORM_EARLY: the first unit's loads go out before the shift's, so that the
    // shift's round trip is not one of its own ahead of the row's (H200: the
    // shift's wait was 12% of the LayerNorm forward's stall samples)
    constexpr bool NORM_EARLY = NORM_SHIFT && !NORM_DROP && !NORM_BATCH;
    if (NORM_EARLY && nheld > 0 && tid < nunits)
        norm_fetch8(r, x, res, tid, q[0]);
    const float k0 = NORM_SHIFT ? norm_shift(x, res) : 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= nheld)
            break;
        const int u = tid + i * NORM_T;
        if (NORM_BATCH && u < nunits)
            norm_fetch8(r, x, res, u, q[i]);
        if (NORM_L2PF && !NORM_PREFETCH && u < nunits) { // no registers: the loads after the sums hit L2
            hk_prefetch_l2(w + 8 * u);
            if (NORM_LN)
                hk_prefetch_l2(bias + 8 * u);
        }
    }
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= nheld)
            break;
        const int u = tid + i * NORM_T;
        float t[8];
        if (u < nunits) {
            if (NORM_BATCH || (NORM_EARLY && i == 0))
                norm_make8(r, q[i], s_out, u, !NORM_SLATE, t);
            else
                norm_s8(r, x, res, s_out, u, !NORM_SLATE, t);
            if (NORM_PREFETCH) {
                float tw[8], tb[8];
                norm_wb8(r, w, bias, u, tw, tb);
                norm_hold(wv[NORM_PREFETCH ? i : 0], tw);
                norm_hold(bv[NORM_PREFETCH ? i : 0], tb);
            }
        }
        cnt += norm_valid(r, u);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            t[j] = u < nunits ? t[j] : 0.0f;
            const float d = NORM_SHIFT && 8 * u + j >= hidden ? 0.0f : t[j] - k0;
            sum += d;
            sq += d * d;
        }
        norm_hold(v[i], t);
    }
]hkm_norm_welford([[
    // one pass: this thread's count, mean and squared deviations (its held units in
    // two passes over registers, re-made units merged in one at a time), then the block's
    float n = (float)cnt, m = cnt > 0 ? sum / (float)cnt : 0.0f, q = 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= nheld)
            break;
        float t[8];
        norm_unhold(v[i], t);
        q += norm_dev2(r, tid + i * NORM_T, m, t);
    }
    for (int u = tid + NORM_UNITS * NORM_T; u < nunits; u += NORM_T) {
        float t[8], ts = 0.0f;
        norm_s8(r, x, res, s_out, u, true, t);
        const int nv = norm_valid(r, u);
#pragma unroll
        for (int j = 0; j < 8; ++j)
            ts += t[j];
        const float tm = ts / (float)nv;
        norm_merge(n, m, q, (float)nv, tm, norm_dev2(r, u, tm, t));
    }
    norm_welford_shfl(hk_lds, turn, n, m, q);
    const float mean = m;
    const float rstd = 1.0f / __builtin_sqrtf(q / (float)hidden + NORM_EPS);
]], [[
    for (int u = tid + NORM_UNITS * NORM_T; u < nunits; u += NORM_T) {
        float t[8];
        norm_s8(r, x, res, s_out, u, true, t);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float d = NORM_SHIFT && 8 * u + j >= hidden ? 0.0f : t[j] - k0;
            sum += d;
            sq += d * d;
        }
    }

    // statistics: layernorm in two passes (mean, then squared deviations), no cancellation,
    // or shifted sums in one
    float mean = 0.0f, spare = 0.0f;
    if (NORM_SHIFT) {
        norm_sum2(hk_lds, turn, sum, sq);
        const float md = sum / (float)hidden, var = sq / (float)hidden - md * md;
        mean = k0 + md;
        sq = (var > 0.0f ? var : 0.0f) * (float)hidden;
    } else if (NORM_LN) {
        norm_sum2(hk_lds, turn, sum, spare);
        mean = sum / (float)hidden;
        sq = 0.0f;
#pragma unroll
        for (int i = 0; i < NORM_UNITS; ++i) {
            if (i >= nheld)
                break;
            float t[8];
            norm_unhold(v[i], t);
            sq += norm_dev2(r, tid + i * NORM_T, mean, t);
        }
        for (int u = tid + NORM_UNITS * NORM_T; u < nunits; u += NORM_T) {
            float t[8];
            norm_s8(r, x, res, s_out, u, false, t);
            sq += norm_dev2(r, u, mean, t);
        }
    }
    if (!NORM_SHIFT)
        norm_sum2(hk_lds, turn, sq, spare);
    const float rstd = 1.0f / __builtin_sqrtf(sq / (float)hidden + NORM_EPS);
]])[
    // y (NORM_WBATCH: the weights of every held unit loaded, as they are, before the first store)
    constexpr int NL = NORM_PREFETCH ? 1 : NORM_UNITS;
    norm_wraw8<norm_w_t> lw[NL], lb[NL];
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= nheld)
            break;
        const int u = tid + i * NORM_T;
        if (NORM_WBATCH && !NORM_PREFETCH && u < nunits) {
            norm_wfetch(r, w + 8 * u, norm_n(r, 8 * u), lw[NORM_PREFETCH ? 0 : i]);
            if (NORM_LN)
                norm_wfetch(r, bias + 8 * u, norm_n(r, 8 * u), lb[NORM_PREFETCH ? 0 : i]);
        }
    }
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= nheld)
            break;
        const int u = tid + i * NORM_T;
        if (u < nunits) {
            float t[8], tw[8], tb[8];
            norm_unhold(v[i], t);
            if (NORM_PREFETCH) {
                norm_unhold(wv[NORM_PREFETCH ? i : 0], tw);
                norm_unhold(bv[NORM_PREFETCH ? i : 0], tb);
            } else if (!NORM_WBATCH) {
                norm_wb8(r, w, bias, u, tw, tb);
            } else {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    tw[j] = norm_wget(lw[NORM_PREFETCH ? 0 : i], j);
                    tb[j] = NORM_LN ? norm_wget(lb[NORM_PREFETCH ? 0 : i], j) : 0.0f;
                }
            }
            norm_y8(r, y, u, mean, rstd, t, tw, tb);
            if (NORM_SLATE && (NORM_RES || NORM_DROP))
                norm_store8(s_out + 8 * u, norm_n(r, 8 * u), r.vec, t);
        }
    }
    for (int u = tid + NORM_UNITS * NORM_T; u < nunits; u += NORM_T) {
        float t[8], tw[8], tb[8];
        norm_s8(r, x, res, s_out, u, false, t);
        norm_wb8(r, w, bias, u, tw, tb);
        norm_y8(r, y, u, mean, rstd, t, tw, tb);
    }
    if (tid == 0) {
        hk_global_store_f32(p.rstd + r.row, rstd);
]hkm_norm_ln([[        hk_global_store_f32(p.mean + r.row, mean);
]])[    }
}

#undef HK_BLOCKS_PER_SM
#define HK_BLOCKS_PER_SM ]hkm_tune([occupancy])[
]hkm_kernel_begin()[
    HK_LDS_DECLARE(NORM_LDS);
    const hk_bf16 *x0 = hk_a.x;
    const hk_bf16 *res0 = ]hkm_norm_res([[hk_a.residual]], [[(const hk_bf16 *)0]])[;
    hk_bf16 *s0 = ]hkm_norm_s([[hk_a.s_out]], [[(hk_bf16 *)0]])[;
    hk_bf16 *y0 = hk_a.y;
    const norm_w_t *w = hk_a.weight;
    const norm_w_t *bias = ]hkm_norm_ln([[hk_a.bias]], [[(const norm_w_t *)0]])[;
    norm_row r;
    r.hidden = hidden;
    r.seed = ]hkm_norm_drop([[(unsigned long long)hk_a.seed]], [[0]])[;
    r.offset = ]hkm_norm_drop([[(unsigned long long)hk_a.offset]], [[0]])[;
    // every row starts 16-byte aligned when hidden % 8 == 0 and the tensors do
    r.vec = NORM_VEC_ONLY || (hidden % 8 == 0 && norm_al16(x0) && norm_al16(y0) && (!NORM_RES || norm_al16(res0))
            && (!s0 || norm_al16(s0)) && (sizeof(norm_w_t) == 4 || (norm_al16(w) && (!NORM_LN || norm_al16(bias)))));
    const norm_ptrs p = {x0, res0, s0, y0, w, bias, hk_a.rstd, ]hkm_norm_ln([[hk_a.mean]], [[(float *)0]])[};
    if (NORM_RPB > 1)
        norm_fwd_rows(hk_lds, p, r, rows);
    else
        norm_fwd_row<NORM_VEC_ONLY>(hk_lds, p, r);
}
]hkm_norm_only([bwd])[
// ---- phase bwd ---------------------------------------------------------------
// s and dy of unit u as loaded (bf16: half the registers of fp32 copies; 0 past the row)
HK_DEVICE void norm_bwd_load(const norm_row &r, const hk_bf16 *s, const hk_bf16 *dy, int u, int n, hk_bf16x8 &sv,
                             hk_bf16x8 &dv)
{
    const int col = 8 * u;
    sv = norm_ld8(s + col, n, r.vec);
    dv = norm_ld8(dy + col, n, r.vec);
}

// xhat = (s - mean) * rstd, d = dy and g = dy * w of unit u (d and g 0 past the row, so
// every sum over xhat is weighted by 0 there); w from held, the weights the block
// loaded once (NORM_PREFETCH), else re-read in each pass
HK_DEVICE void norm_bwd_terms(const norm_row &r, hk_bf16x8 sv, hk_bf16x8 dv, const norm_w_t *w, const float *held,
                              int u, int n, float mean, float rstd, float xh[8], float g[8], float d[8])
{
    const int col = 8 * u;
    float wv[8];
    if (held) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
            wv[j] = held[j];
    } else {
        norm_load_w8(w + col, n, r.vec, wv);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        d[j] = hk_bf16_to_f32(dv[j]);
        xh[j] = (hk_bf16_to_f32(sv[j]) - mean) * rstd;
        g[j] = d[j] * wv[j];
    }
}

// ds = rstd * (g - mean(g) - xhat * mean(g * xhat)) (+ the gradient of the emitted s);
// d_residual = ds, dx = dropout'(ds); that gradient from dsv when loaded early, else read here
HK_DEVICE void norm_bwd_store8(const norm_row &r, const hk_bf16 *ds_in, const hk_bf16x8 *dsv, hk_bf16 *dx,
                               hk_bf16 *dres, int u, int n, float rstd, float ma, float mb, const float xh[8],
                               const float g[8])
{
    const int col = 8 * u;
    float ds[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
        ds[j] = rstd * (g[j] - ma - xh[j] * mb);
    if (NORM_RES) {
        float q[8];
        if (dsv) {
#pragma unroll
            for (int j = 0; j < 8; ++j)
                q[j] = hk_bf16_to_f32((*dsv)[j]);
        } else {
            norm_ld8f(ds_in + col, n, r.vec, q);
        }
#pragma unroll
        for (int j = 0; j < 8; ++j)
            ds[j] += q[j];
        if (NORM_DROP)
            norm_store8(dres + col, n, r.vec, ds);
    }
    norm_dropout8(r, col, ds);
    norm_store8(dx + col, n, r.vec, ds);
}

// The block's partial dweight / dbias of unit u (n valid elements): stored, or added
// to what its scratch row holds (only this thread ever touches those columns).
HK_DEVICE void norm_part_put8(float *dwp, float *dbp, int u, int n, const float w[8], const float b[8])
{
#pragma unroll
    for (int j = 0; j < 8; ++j)
        if (j < n) {
            hk_global_store_f32(dwp + 8 * u + j, w[j]);
            if (NORM_LN)
                hk_global_store_f32(dbp + 8 * u + j, b[j]);
        }
}

HK_DEVICE void norm_part_add8(float *dwp, float *dbp, int u, int n, const float w[8], const float b[8])
{
    float tw[8], tb[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        tw[j] = j < n ? hk_global_load_f32(dwp + 8 * u + j) + w[j] : 0.0f;
        tb[j] = j < n && NORM_LN ? hk_global_load_f32(dbp + 8 * u + j) + b[j] : 0.0f;
    }
    norm_part_put8(dwp, dbp, u, n, tw, tb);
}

// The loads of one row for the held units: s, dy, the emitted s's gradient (NORM_PREFETCH),
// rstd and mean.
struct norm_bwd_in {
    hk_bf16x8 s[NORM_UNITS], dy[NORM_UNITS], ds[NORM_PREFETCH ? NORM_UNITS : 1];
    float rstd, mean;
};

HK_DEVICE void norm_bwd_fetch(const norm_row &r, long row, int held, int tid, const hk_bf16 *s0, const hk_bf16 *dy0,
                              const hk_bf16 *ds_in0, const float *rstd0, const float *mean0, norm_bwd_in &f)
{
    const long base = row * r.hidden;
    f.rstd = hk_global_load_f32(rstd0 + row);
    f.mean = NORM_LN ? hk_global_load_f32(mean0 + row) : 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= held)
            break;
        const int u = tid + i * NORM_T;
        if (8 * u < r.hidden) {
            norm_bwd_load(r, s0 + base, dy0 + base, u, 8, f.s[i], f.dy[i]);
            if (NORM_PREFETCH && NORM_RES)
                f.ds[NORM_PREFETCH ? i : 0] = norm_ld8(ds_in0 + base + 8 * u, 8, r.vec);
        }
    }
}

// unit u's 8 partial sums at LDS byte off += v (only this thread touches them)
HK_DEVICE void norm_acc_add8(hk_lds_t lds, int off, const float v[8])
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        hk_u32x4 q = hk_lds_load_b128(lds, off + 16 * h);
#pragma unroll
        for (int j = 0; j < 4; ++j)
            q[j] = hk_f32_as_u32(hk_u32_as_f32(q[j]) + v[4 * h + j]);
        hk_lds_store_b128(lds, off + 16 * h, q);
    }
}

HK_DEVICE void norm_acc_get8(hk_lds_t lds, int off, float v[8])
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const hk_u32x4 q = hk_lds_load_b128(lds, off + 16 * h);
#pragma unroll
        for (int j = 0; j < 4; ++j)
            v[4 * h + j] = hk_u32_as_f32(q[j]);
    }
}

#undef HK_BLOCKS_PER_SM
#define HK_BLOCKS_PER_SM ]hkm_tune([occupancy])[
]hkm_kernel_begin()[
    const int tid = hk_thread_id(), blk = hk_block_id_x();
    HK_LDS_DECLARE(NORM_LDS + NORM_ACC_BYTES);
    const int nparts = rows < NORM_PARTS ? rows : NORM_PARTS;
    const int nunits = (hidden + 7) / 8;
    const norm_w_t *w = hk_a.weight;
    const hk_bf16 *ds_in0 = ]hkm_norm_res([[hk_a.ds_in]], [[(const hk_bf16 *)0]])[;
    hk_bf16 *dres0 = ]hkm_norm_res([hkm_norm_drop([[hk_a.dres]], [[(hk_bf16 *)0]])], [[(hk_bf16 *)0]])[;
    float *dwp = hk_a.dw_part + (long)blk * hidden;
    float *dbp = ]hkm_norm_ln([[hk_a.db_part + (long)blk * hidden]], [[(float *)0]])[;
    const float *mean0 = ]hkm_norm_ln([[hk_a.mean]], [[(const float *)0]])[;
    norm_row r;
    r.hidden = hidden;
    r.seed = ]hkm_norm_drop([[(unsigned long long)hk_a.seed]], [[0]])[;
    r.offset = ]hkm_norm_drop([[(unsigned long long)hk_a.offset]], [[0]])[;
    r.vec = hidden % 8 == 0 && norm_al16(hk_a.dy) && norm_al16(hk_a.s) && norm_al16(hk_a.dx)
            && (!ds_in0 || norm_al16(ds_in0)) && (!dres0 || norm_al16(dres0)) && (sizeof(norm_w_t) == 4 || norm_al16(w));

    // this block's partial dweight / dbias: registers (or LDS, NORM_ACC_BYTES) for the held
    // units, its scratch row for the rest.  Held units only on the vector path, where a unit
    // is 8 valid elements (n = 8 folds every mask away); the element path re-reads every unit
    // (otherwise AMD hoists the per-element masks of each held unit out of the row loop and
    // runs out of SGPRs).  Held: the units the row needs, the same in every thread (the loops
    // stop there on a uniform branch).
    const int need = nunits < NORM_UNITS * NORM_T ? (nunits + NORM_T - 1) / NORM_T : NORM_UNITS;
    const int held = r.vec ? need : 0;
    constexpr bool ACC = NORM_ACC_BYTES > 0;
    constexpr int NR = ACC ? 1 : NORM_UNITS, NP = NORM_PREFETCH ? NORM_UNITS : 1;
    const int acc_w = NORM_LDS, acc_b = NORM_LDS + 4 * hidden; // byte offsets of the LDS partials
    float dw[NR][8], db[NR][8];
    // NORM_PREFETCH: the held units' weights loaded once
    norm_wh8 wh[NP];
#pragma unroll
    for (int i = 0; i < NR; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            dw[i][j] = db[i][j] = 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= held)
            break;
        const int u = tid + i * NORM_T;
        if (NORM_PREFETCH && u < nunits) {
            float t[8];
            norm_load_w8(w + 8 * u, 8, r.vec, t);
            norm_hold(wh[NORM_PREFETCH ? i : 0], t);
        }
    }
    if (ACC) {
#pragma unroll
        for (int i = 0; i < NORM_UNITS; ++i) {
            if (i >= held)
                break;
            const int u = tid + i * NORM_T;
            if (u < nunits) {
                hk_u32x4 q;
                q[0] = q[1] = q[2] = q[3] = 0u;
                hk_lds_store_b128(hk_lds, acc_w + 32 * u, q);
                hk_lds_store_b128(hk_lds, acc_w + 32 * u + 16, q);
                if (NORM_LN) {
                    hk_lds_store_b128(hk_lds, acc_b + 32 * u, q);
                    hk_lds_store_b128(hk_lds, acc_b + 32 * u + 16, q);
                }
            }
        }
    }
    for (int u = tid + held * NORM_T; u < nunits; u += NORM_T)
        norm_part_put8(dwp, dbp, u, hidden - 8 * u, dw[0], db[0]); // still zero
    int turn = 0;

    // rows blk, blk + nparts, ...; NORM_PIPE: the next row's loads go out before this row's sums
    norm_bwd_in cur, nxt;
    if (NORM_PIPE && blk < rows)
        norm_bwd_fetch(r, blk, held, tid, hk_a.s, hk_a.dy, ds_in0, hk_a.rstd, mean0, cur);
    for (long row = blk; row < rows; row += nparts) {
        const long base = row * hidden;
        const hk_bf16 *s = hk_a.s + base, *dy = hk_a.dy + base;
        const hk_bf16 *ds_in = NORM_RES ? ds_in0 + base : ds_in0;
        hk_bf16 *dx = hk_a.dx + base, *dres = dres0 ? dres0 + base : dres0;
        r.row = row;
        if (!NORM_PIPE)
            norm_bwd_fetch(r, row, held, tid, hk_a.s, hk_a.dy, ds_in0, hk_a.rstd, mean0, cur);
        const float rstd = cur.rstd, mean = cur.mean;
        float a = 0.0f, b = 0.0f;
#pragma unroll
        for (int i = 0; i < NORM_UNITS; ++i) {
            if (i >= held)
                break;
            const int u = tid + i * NORM_T;
            if (u < nunits) {
                float xh[8], g[8], d[8], pw[8], pb[8], tw[8];
                norm_unhold(wh[NORM_PREFETCH ? i : 0], tw);
                norm_bwd_terms(r, cur.s[i], cur.dy[i], w, NORM_PREFETCH ? tw : (const float *)0, u, 8, mean, rstd, xh,
                               g, d);
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    a += g[j];
                    b += g[j] * xh[j];
                    pw[j] = d[j] * xh[j];
                    pb[j] = d[j];
                }
                if (ACC) {
                    norm_acc_add8(hk_lds, acc_w + 32 * u, pw);
                    if (NORM_LN)
                        norm_acc_add8(hk_lds, acc_b + 32 * u, pb);
                } else {
#pragma unroll
                    for (int j = 0; j < 8; ++j) {
                        dw[ACC ? 0 : i][j] += pw[j];
                        db[ACC ? 0 : i][j] += pb[j];
                    }
                }
            }
        }
        for (int u = tid + held * NORM_T; u < nunits; u += NORM_T) {
            hk_bf16x8 ts, td;
            float txh[8], tg[8], d[8];
            norm_bwd_load(r, s, dy, u, hidden - 8 * u, ts, td);
            norm_bwd_terms(r, ts, td, w, (const float *)0, u, hidden - 8 * u, mean, rstd, txh, tg, d);
            // past the row, d, g and xhat are 0: the sums need no mask
            float pw[8], pb[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                a += tg[j];
                b += tg[j] * txh[j];
                pw[j] = d[j] * txh[j];
                pb[j] = d[j];
            }
            norm_part_add8(dwp, dbp, u, hidden - 8 * u, pw, pb);
        }
        if (NORM_PIPE && row + nparts < rows)
            norm_bwd_fetch(r, row + nparts, held, tid, hk_a.s, hk_a.dy, ds_in0, hk_a.rstd, mean0, nxt);
        norm_sum2(hk_lds, turn, a, b);
        const float ma = NORM_LN ? a / (float)hidden : 0.0f, mb = b / (float)hidden;
#pragma unroll
        for (int i = 0; i < NORM_UNITS; ++i) {
            if (i >= held)
                break;
            const int u = tid + i * NORM_T;
            if (u < nunits) {
                float xh[8], g[8], d[8], tw[8];
                norm_unhold(wh[NORM_PREFETCH ? i : 0], tw);
                norm_bwd_terms(r, cur.s[i], cur.dy[i], w, NORM_PREFETCH ? tw : (const float *)0, u, 8, mean, rstd, xh,
                               g, d);
                norm_bwd_store8(r, ds_in, NORM_PREFETCH && NORM_RES ? &cur.ds[NORM_PREFETCH ? i : 0] : (const hk_bf16x8 *)0,
                                dx, dres, u, 8, rstd, ma, mb, xh, g);
            }
        }
        for (int u = tid + held * NORM_T; u < nunits; u += NORM_T) {
            hk_bf16x8 ts, td;
            float txh[8], tg[8], d[8];
            norm_bwd_load(r, s, dy, u, hidden - 8 * u, ts, td);
            norm_bwd_terms(r, ts, td, w, (const float *)0, u, hidden - 8 * u, mean, rstd, txh, tg, d);
            norm_bwd_store8(r, ds_in, (const hk_bf16x8 *)0, dx, dres, u, hidden - 8 * u, rstd, ma, mb, txh, tg);
        }
        if (NORM_PIPE)
            cur = nxt;
    }

#pragma unroll
    for (int i = 0; i < NORM_UNITS; ++i) {
        if (i >= held)
            break;
        const int u = tid + i * NORM_T;
        if (u < nunits) {
            if (ACC) {
                norm_acc_get8(hk_lds, acc_w + 32 * u, dw[0]);
                if (NORM_LN)
                    norm_acc_get8(hk_lds, acc_b + 32 * u, db[0]);
            }
            norm_part_put8(dwp, dbp, u, 8, dw[ACC ? 0 : i], db[ACC ? 0 : i]);
        }
    }
}
]hkm_norm_only([bwd_reduce])[
// ---- phase bwd_reduce --------------------------------------------------------
// A workgroup sums RED_COLS columns: thread (g, c) adds the partial rows g, g + G, ...
// (G = T / RED_COLS groups; 4 interleaved sums, then fixed pairs) of column c, and
// group 0 adds the G group sums in group order: a fixed order, and G times the
// workgroups (and loads in flight) of one thread per column.
static constexpr int NORM_RED_COLS = ]hkm_tune([red_cols])[;
static constexpr int NORM_RED_G = NORM_T / NORM_RED_COLS;
static_assert(NORM_T % NORM_RED_COLS == 0, "whole groups of columns");

HK_DEVICE float norm_col_sum(const float *p, long col, long stride, int first, int nparts)
{
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int q = first;
    for (; q + 3 * NORM_RED_G < nparts; q += 4 * NORM_RED_G) {
        a0 += hk_global_load_f32(p + (long)(q + 0 * NORM_RED_G) * stride + col);
        a1 += hk_global_load_f32(p + (long)(q + 1 * NORM_RED_G) * stride + col);
        a2 += hk_global_load_f32(p + (long)(q + 2 * NORM_RED_G) * stride + col);
        a3 += hk_global_load_f32(p + (long)(q + 3 * NORM_RED_G) * stride + col);
    }
    for (; q < nparts; q += NORM_RED_G)
        a0 += hk_global_load_f32(p + (long)q * stride + col);
    return (a0 + a1) + (a2 + a3);
}

// the G group sums of column c at LDS [which][g][c], added in group order
HK_DEVICE float norm_group_sum(hk_lds_t lds, int which, int c)
{
    float s = 0.0f;
#pragma unroll
    for (int g = 0; g < NORM_RED_G; ++g)
        s += hk_u32_as_f32(hk_lds_load_b32(lds, 4 * ((which * NORM_RED_G + g) * NORM_RED_COLS + c)));
    return s;
}

#undef HK_BLOCKS_PER_SM
#define HK_BLOCKS_PER_SM ]hkm_tune([occupancy])[
]hkm_kernel_begin()[
    HK_LDS_DECLARE(4 * 2 * NORM_T);
    const int tid = hk_thread_id(), c = tid % NORM_RED_COLS, g = tid / NORM_RED_COLS;
    const long col = (long)hk_block_id_x() * NORM_RED_COLS + c;
    const int nparts = rows < NORM_PARTS ? rows : NORM_PARTS;
    float sw = 0.0f, sb = 0.0f;
    if (col < hidden) {
        sw = norm_col_sum(hk_a.dw_part, col, hidden, g, nparts);
]hkm_norm_ln([[        sb = norm_col_sum(hk_a.db_part, col, hidden, g, nparts);
]])[    }
    hk_lds_store_b32(hk_lds, 4 * (g * NORM_RED_COLS + c), hk_f32_as_u32(sw));
    hk_lds_store_b32(hk_lds, 4 * ((NORM_RED_G + g) * NORM_RED_COLS + c), hk_f32_as_u32(sb));
    hk_barrier();
    if (g == 0 && col < hidden) {
        hk_global_store_f32(hk_a.dweight + col, norm_group_sum(hk_lds, 0, c));
]hkm_norm_ln([[        hk_global_store_f32(hk_a.dbias + col, norm_group_sum(hk_lds, 1, c));
]])[    }
}
]m4_divert(0)m4_dnl
