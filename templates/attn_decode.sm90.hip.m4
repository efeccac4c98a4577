m4_divert(-1)                                                   -*- C -*-
# attn_decode.sm90.hip.m4 - attention decode over a paged KV cache, NVIDIA
# Hopper (sm_90a) version of attn_decode.hip.m4: the same parameters (head_dim
# 64 and 128: d256's O accumulator would spill),
# arguments, workspace and counters, and semantics (gen/op_attn_decode.c's
# top comment).
#
# Grid: x = splits (the descriptor's formula), y = heads_k x row groups,
# z = batch.  Block: 256 threads = 8 warps, one block per multiprocessor
# (up to 200 KiB of shared memory).  A block takes up to ROWS
# (16 x M_TILES) query rows of one KV head: row r = t * G + g is token t
# of query head hk * G + g (G = heads_q / heads_k); every warp holds all
# of them and takes its own keys: the split's 16-key tiles w, w + 8, ...
# (a tile never crosses a page: pages are 16, 32 or 64 keys), so the K and
# V of a page are read once for the whole GQA group and the warps never
# wait for one another in the loop.
#
# Per warp: a ring of STAGES tiles (K then V, [key][d] rows, 16-byte chunk
# c of row r at c ^ r % 8), filled by cp.async 16 bytes per lane straight
# from the pages, STAGES - 1 tiles ahead of the one computed.  bf16 Q, K,
# V: mma.sync m16n8k16 with the query rows in M (S = Q K^T: A = Q from
# shared memory, B = K by ldmatrix; O += P V: A = P from the S
# accumulator rounded to bf16, B = V by ldmatrix.trans); fp32 online
# softmax in base 2, masked per row (keys past the row's position or the
# split, before its window).  fp8 e4m3 (OCP) cache, codes as fp16 times 2^-8
# (exact: hk_e4m3x4_to_f16x4), Q and P fp16, k_scale 2^8 joining the
# scores' scale and v_scale 2^8 the output's: K's codes are widened in
# registers as ldmatrix reads them (lane (g, t) gets codes 4t .. 4t + 3 of
# a 16-code chunk, so k position 2t + j of the chunk holds d 4t + j and
# 2t + 8 + j d 4t + 2 + j: Q is stored in that order), V's in shared
# memory (P V needs V transposed, which ldmatrix does only for 16-bit
# elements).  Against widening both in shared memory: 1.10-1.24x at each
# Llama-3-8B point timed (H200, 2026-12-02, docs/PERF.md).
#
# End: the 8 warps' partials merge in shared memory in warp order; one
# split writes O and LSE, several write their partial (unnormalised O,
# running max, sum: the AMD skeleton's workspace layout), fence, and the
# block that completes the group's counter merges them in split order
# (deterministic) and resets the counter.  More than MGROUP splits merge in
# two levels: a counter per MGROUP splits (after the batch x heads_k x row
# groups ones), the block completing one merges its splits into the
# group's first slot (a partial again), then the block completing the
# group count merges the groups in order: one block reading every split's
# partial was most of what 70B TP 8 at batch 1 lost (132 splits).

hkm_check_one_of([dtype], [bf16])hkm_check_one_of([kv_dtype], [bf16], [fp8_e4m3])m4_dnl
hkm_check_one_of([head_dim], [64], [128])m4_dnl
hkm_check_one_of([block_size], [16], [32], [64])hkm_if_true([check_tables], [], [])m4_dnl
hkm_if_true([sinks], [], [])hkm_param([window_left])hkm_param([softcap])
m4_ifelse(hkm_block_size, [256], [], hkm_block_size, [128], [],
      [hkm_fatal([attn_decode (sm_90a) needs hkm_block_size 256 or 128, got ]hkm_block_size)])

# The plan (gen/op_attn_decode.c dec_plan_sm90): hkm_tune([m_tiles]) tiles of
# 16 query rows per block, hkm_tune([stages]) ring stages per warp,
# hkm_dynamic_lds bytes of shared memory.

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int THREADS = ]hkm_block_size[;
static constexpr int WARPS = THREADS / HK_WAVE_SIZE;
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr int BS = ]hkm_param([block_size])[;       // keys per page
static constexpr bool CHECK = ]hkm_if_true([check_tables], [true], [false])[;
static constexpr bool FP8 = ]m4_ifelse(hkm_param([kv_dtype]), [fp8_e4m3], [true], [false])[;
typedef ]m4_ifelse(hkm_param([kv_dtype]), [fp8_e4m3], [unsigned], [hk_bf16])[ dec_kv_t;
static constexpr int EPW = FP8 ? 4 : 1;                    // cache elements per dec_kv_t
static constexpr bool WINDOW = ]hkm_if_param([window_left], [-1], [false], [true])[;
static constexpr bool SINKS = ]hkm_if_true([sinks], [true], [false])[;
static constexpr float SOFTCAP = (float)(]hkm_param([softcap])[);     // 0: none
static constexpr int M_TILES = ]hkm_tune([m_tiles])[;      // 16-row tiles of query rows per block
static constexpr int ROWS = 16 * M_TILES;
static constexpr int STAGES = ]hkm_tune([stages])[;        // ring depth per warp
static constexpr int KT = 16;                               // keys per tile
static constexpr float LOG2E = 1.44269504088896340736f;
static constexpr float LN2 = 0.693147180559945309417f;
// shared memory: Q (ROWS x D, 16-bit), per warp STAGES raw tiles (K, V) and,
// FP8, one widened tile pair; after the loop the warps' partials reuse it
static constexpr int ROW_B = D * 2;                         // bytes of a 16-bit row
static constexpr int RAW_ROW_B = FP8 ? D : D * 2;           // bytes of a cache row
static constexpr int RAW_TILE = KT * RAW_ROW_B;             // K (or V) of one tile
static constexpr int STAGE_B = 2 * RAW_TILE;
static constexpr int WIDE_B = FP8 ? 2 * KT * ROW_B : 0;     // the widened V (and as much spare)
static constexpr int WARP_B = STAGES * STAGE_B + WIDE_B;
static constexpr int Q_B = ROWS * ROW_B;
static constexpr int O_PITCH = D + 4;                       // floats per row of a warp's partial
static constexpr int PART_B = ROWS * (O_PITCH + 2) * 4;     // a warp's O, max and sum
static constexpr int MAIN_B = WARPS * WARP_B > WARPS * PART_B ? WARPS * WARP_B : WARPS * PART_B;
static constexpr int FLAGS = Q_B + MAIN_B;                  // 2 words: table fault, last split
static constexpr int LDS_BYTES = FLAGS + 16;
static constexpr int DYNAMIC_LDS = ]hkm_dynamic_lds[;
static constexpr int CHUNKS = D / 8;                        // 16-byte chunks of a 16-bit row

static_assert(LDS_BYTES + HK_LDS_DYNAMIC_SLACK <= DYNAMIC_LDS, "dynamic_lds (gen/op_attn_decode.c dec_plan_sm90)");
static_assert(KT <= BS && BS % KT == 0, "a tile lies in one page");
static_assert(KT * RAW_ROW_B % (16 * HK_WAVE_SIZE) == 0, "a tile is whole 16-byte copies per lane");
static_assert(ROWS * 16 <= MAIN_B, "the merge's row maxima and sums fit");
static constexpr int MGROUP = ]hkm_tune([merge_group])[;  // splits per group merge (more splits: a two-level merge)

// ---- the pages -------------------------------------------------------------
// One KV head of one sequence: its first element in the K and V halves of the
// cache (in dec_kv_t units), the table row, strides of a page and a key, and
// the split's last key + 1.
struct dec_ctx {
    const dec_kv_t *K, *V;
    const int *table;
    long page_stride, key_stride;   // in dec_kv_t units
    int k1;
};

// 16 bytes of the cache into shared memory: cp.async (VEC: the cache is
// 16-byte aligned) or, otherwise, element loads and a store.
template <bool VEC>
HK_DEVICE void dec_copy16(hk_lds_t lds, int off, const dec_kv_t *src)
{
    if constexpr (VEC) {
        hk_async_load_b128(lds, off, src, 16);
    } else if constexpr (FP8) {
        hk_u32x4 v;
#pragma unroll
        for (int i = 0; i < 4; ++i)
            v[i] = hk_f32_as_u32(hk_global_load_f32((const float *)src + i));
        hk_lds_store_b128(lds, off, v);
    } else {
        hk_lds_store_b128(lds, off, __builtin_bit_cast(hk_u32x4, hk_global_load_bf16x8((const hk_bf16 *)src, 8, false)));
    }
}

// Offset of 16-byte chunk c of row r in a tile of 16-bit rows (the swizzle
// that keeps ldmatrix's 8 rows in 8 bank groups).
HK_DEVICE int dec_swz(int r, int c) { return r * ROW_B + ((c ^ (r & 7)) << 4); }

// The same for a K tile of fp8 codes (rows of D bytes: D / 16 chunks).
HK_DEVICE int dec_swz8(int r, int c)
{
    constexpr int M = D / 16 < 8 ? D / 16 - 1 : 7;
    return r * (FP8 ? D : D * 2) + ((c ^ (r & M)) << 4);
}

// Tile kb .. kb + 15 of the split into stage buffer `off' (keys past k1 read
// key k1 - 1: they are masked, and their finite data adds nothing).  bf16:
// swizzled rows; fp8: K swizzled rows of D codes, V plain (dec_widen swizzles).
// pg: the page's block id (dec_kv_loop reads the warp's ahead, a lane each).
template <bool VEC>
HK_DEVICE void dec_issue(hk_lds_t lds, int off, const dec_ctx &x, int kb, int pg)
{
    const int lane = hk_lane_id();
    const long page = (long)pg * x.page_stride;
    constexpr int RAW_CH = RAW_ROW_B / 16;                  // 16-byte chunks per cache row
    constexpr int PER_LANE = KT * RAW_CH / HK_WAVE_SIZE;
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        const int i = lane + j * HK_WAVE_SIZE, r = i / RAW_CH, c = i % RAW_CH;
        const int key = kb + r < x.k1 ? kb + r : x.k1 - 1;
        const long src = page + (long)(key % BS) * x.key_stride + c * (16 / (int)sizeof(dec_kv_t));
        const int dst = FP8 ? dec_swz8(r, c) : dec_swz(r, c);
        dec_copy16<VEC>(lds, off + dst, x.K + src);
        dec_copy16<VEC>(lds, off + RAW_TILE + (FP8 ? r * RAW_ROW_B + c * 16 : dst), x.V + src);
    }
}

// fp8: the raw V tile at `raw' widened to fp16 (times 2^-8) swizzled rows at
// `wide' (K is widened in registers: dec_tile).
HK_DEVICE void dec_widen(hk_lds_t lds, int raw, int wide)
{
    const int lane = hk_lane_id();
    constexpr int RAW_CH = D / 16;                          // 16 codes per chunk
    constexpr int PER_LANE = KT * RAW_CH / HK_WAVE_SIZE;
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        const int i = lane + j * HK_WAVE_SIZE, kv = 1, r = i / RAW_CH % KT, c = i % RAW_CH;
        const hk_u32x4 u = hk_lds_load_b128(lds, raw + kv * RAW_TILE + r * RAW_ROW_B + c * 16);
        hk_u32x4 lo, hi;
#pragma unroll
        for (int w = 0; w < 2; ++w) {
            const hk_u32x2 a = hk_e4m3x4_to_f16x4(u[w]), b = hk_e4m3x4_to_f16x4(u[w + 2]);
            lo[2 * w] = a[0];
            lo[2 * w + 1] = a[1];
            hi[2 * w] = b[0];
            hi[2 * w + 1] = b[1];
        }
        const int base = wide;
        hk_lds_store_b128(lds, base + dec_swz(r, 2 * c), lo);
        hk_lds_store_b128(lds, base + dec_swz(r, 2 * c + 1), hi);
    }
}

HK_DEVICE unsigned dec_pack(float lo, float hi)
{
    if constexpr (FP8)
        return hk_f32x2_to_f16x2(lo, hi);
    else
        return hk_f32x2_to_bf16x2(lo, hi);
}

HK_DEVICE void dec_mma(hk_u32x4 a, unsigned b0, unsigned b1, hk_mma_acc_t &acc)
{
    if constexpr (FP8)
        hk_mma_16x8x16_f16(a, b0, b1, acc);
    else
        hk_mma_16x8x16(a, b0, b1, acc);
}

// tanh(z) = 1 - 2 / (1 + e^(2z)): 1 and -1 at the ends (exp2 gives inf and 0)
HK_DEVICE float dec_tanh(float z) { return 1.0f - 2.0f / (1.0f + hk_exp2f(2.0f * LOG2E * z)); }

// The online softmax state of one warp: lane (g, t) holds rows mt*16 + g
// (h = 0) and mt*16 + g + 8 (h = 1) of every m-tile, O columns 8n + 2t, +1.
struct dec_state {
    hk_mma_acc_t o[M_TILES][D / 8];
    float m[M_TILES][2];    // running max of the scaled scores (base 2), the row's
    float l[M_TILES][2];    // this lane's part of the sum
    int klim[M_TILES][2];   // the last key the row sees in the split
    int kfirst[M_TILES][2]; // the first (window)
};

// One tile (keys kb .. kb + 15; K at kt, V at vt, 16-bit swizzled rows).
HK_DEVICE void dec_tile(hk_lds_t lds, int kt, int vt, int kb, float c, float cap_in, dec_state &st)
{
    const int lane = hk_lane_id(), g = lane / 4, t = lane % 4;
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
    hk_mma_acc_t s[M_TILES][2];
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
        s[mt][0] = s[mt][1] = hk_mma_acc_zero();
    // S = Q K^T: ldmatrix matrices (keys 0-7, d chunk 2kk), (0-7, 2kk+1),
    // (8-15, 2kk), (8-15, 2kk+1) are B words of key tiles 0 and 1
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        hk_u32x4 kf;
        if constexpr (FP8) {
            // raw codes: matrices (keys 0-7, chunk kk), (8-15, kk), (0-7, kk+1), (8-15, kk+1);
            // lane (g, t) gets codes 4t .. 4t+3 of key g: as fp16 pairs, the B words of
            // k positions 2t.. and 2t+8.. (Q is stored in that order: dec_load_q)
            if (kk % 2)
                continue;
            const hk_u32x4 raw = hk_lds_load_mma_x4(lds, kt + dec_swz8(((lane / 8) % 2) * 8 + lane % 8, kk + lane / 16));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const hk_u32x2 k0 = hk_e4m3x4_to_f16x4(raw[2 * h]), k1 = hk_e4m3x4_to_f16x4(raw[2 * h + 1]);
#pragma unroll
                for (int mt = 0; mt < M_TILES; ++mt) {
                    const hk_u32x4 qa = hk_lds_load_mma_x4(lds, dec_swz(mt * 16 + ((lane / 8) % 2) * 8 + lane % 8, 2 * (kk + h) + lane / 16));
                    dec_mma(qa, k0[0], k0[1], s[mt][0]);
                    dec_mma(qa, k1[0], k1[1], s[mt][1]);
                }
            }
            continue;
        } else {
            kf = hk_lds_load_mma_x4(lds, kt + dec_swz((lane / 16) * 8 + lane % 8, 2 * kk + (lane / 8) % 2));
        }
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt) {
            const hk_u32x4 qa = hk_lds_load_mma_x4(lds, dec_swz(mt * 16 + ((lane / 8) % 2) * 8 + lane % 8, 2 * kk + lane / 16));
            dec_mma(qa, kf[0], kf[1], s[mt][0]);
            dec_mma(qa, kf[2], kf[3], s[mt][1]);
        }
    }
    // masks, online softmax, P as the A operand of P V
    hk_u32x4 p[M_TILES];
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = neg_inf;
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    float v = s[mt][n][2 * h + j];
                    if constexpr (SOFTCAP > 0.0f)
                        v = SOFTCAP * dec_tanh(v * cap_in);
                    const int key = kb + n * 8 + 2 * t + j;
                    const bool vis = key <= st.klim[mt][h] && (!WINDOW || key >= st.kfirst[mt][h]);
                    v = vis ? v : neg_inf;
                    s[mt][n][2 * h + j] = v;
                    mx = hk_maxf(mx, v);
                }
            mx = hk_maxf(mx, hk_shfl_xor_f32(mx, 1));
            mx = hk_maxf(mx, hk_shfl_xor_f32(mx, 2));
            const float m_new = hk_maxf(st.m[mt][h], mx * c);
            const float m_use = m_new == neg_inf ? 0.0f : m_new; // nothing seen yet: keep exp2 finite
            const float alpha = hk_exp2f(st.m[mt][h] - m_use);
            st.m[mt][h] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                const float e0 = hk_exp2f(s[mt][n][2 * h] * c - m_use);
                const float e1 = hk_exp2f(s[mt][n][2 * h + 1] * c - m_use);
                sum += e0 + e1;
                p[mt][2 * n + h] = dec_pack(e0, e1);
            }
            st.l[mt][h] = st.l[mt][h] * alpha + sum;
            if (hk_warp_any(alpha != 1.0f))              // most tiles leave every row's max as it was
#pragma unroll
                for (int n = 0; n < D / 8; ++n) {
                    st.o[mt][n][2 * h] *= alpha;
                    st.o[mt][n][2 * h + 1] *= alpha;
                }
        }
    // O += P V: ldmatrix.trans matrices (keys 0-7, d chunk 2cc), (8-15, 2cc),
    // (0-7, 2cc+1), (8-15, 2cc+1) are B words of d tiles 2cc and 2cc + 1
#pragma unroll
    for (int cc = 0; cc < D / 16; ++cc) {
        const hk_u32x4 vf = hk_lds_load_mma_x4_trans(lds, vt + dec_swz(((lane / 8) % 2) * 8 + lane % 8, 2 * cc + lane / 16));
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt) {
            dec_mma(p[mt], vf[0], vf[1], st.o[mt][2 * cc]);
            dec_mma(p[mt], vf[2], vf[3], st.o[mt][2 * cc + 1]);
        }
    }
}

// The warp's tiles k0 + 16 (w + WARPS i) below x.k1, STAGES - 1 in flight.
// Their pages' block ids come 32 tiles at a time, lane l holding tile
// 32 j + l's, the next 32 loaded when these start: no table read waits in
// the loop (a read per tile there put its latency before each refill).
HK_DEVICE int dec_page_ids(const dec_ctx &x, int k0, int wave, int nt, int j)
{
    const int i = 32 * j + hk_lane_id();
    return i < nt ? hk_global_load_i32(x.table + (k0 + (wave + i * WARPS) * KT) / BS) : 0;
}

template <bool VEC>
HK_DEVICE void dec_kv_loop(hk_lds_t lds, const dec_ctx &x, int k0, float c, float cap_in, dec_state &st)
{
    const int wave = hk_wave_id();
    const int ring = Q_B + wave * WARP_B, wide = ring + STAGES * STAGE_B;
    const int n_all = (x.k1 - k0 + KT - 1) / KT;
    const int nt = n_all > wave ? (n_all - wave + WARPS - 1) / WARPS : 0;
    static_assert(STAGES - 1 <= 32, "the ring's tiles ahead have their page ids");
    int ids = dec_page_ids(x, k0, wave, nt, 0), ids_next = dec_page_ids(x, k0, wave, nt, 1);
#pragma unroll
    for (int i = 0; i < STAGES - 1; ++i) {
        if (i < nt)
            dec_issue<VEC>(lds, ring + i * STAGE_B, x, k0 + (wave + i * WARPS) * KT, hk_shfl_i32(ids, i));
        hk_async_commit();
    }
    for (int it = 0; it < nt; ++it) {
        const int nx = it + STAGES - 1;
        if (nx < nt) {
            if (nx % 32 == 0 && nx > 0) {                // warp-uniform
                ids = ids_next;
                ids_next = dec_page_ids(x, k0, wave, nt, nx / 32 + 1);
            }
            dec_issue<VEC>(lds, ring + (nx % STAGES) * STAGE_B, x, k0 + (wave + nx * WARPS) * KT,
                           hk_shfl_i32(ids, nx % 32));
        }
        hk_async_commit();
        hk_async_wait<STAGES - 1>();
        hk_syncwarp();
        const int cur = ring + (it % STAGES) * STAGE_B;
        if constexpr (FP8) {
            dec_widen(lds, cur, wide);
            hk_syncwarp();
            dec_tile(lds, cur, wide, k0 + (wave + it * WARPS) * KT, c, cap_in, st);
        } else {
            dec_tile(lds, cur, cur + RAW_TILE, k0 + (wave + it * WARPS) * KT, c, cap_in, st);
        }
        hk_syncwarp();                                   // the stage is read before it is refilled
    }
    hk_async_wait<0>();
}

// ---- the end ---------------------------------------------------------------
// The warps' partials (rows 0 .. ROWS - 1 of warp w at part(w)) merged in warp
// order for local row i: max M, sum L, and O[d .. d + 3] (unnormalised).
HK_DEVICE int dec_part(int w) { return Q_B + w * PART_B; }

HK_DEVICE void dec_row_merge(hk_lds_t lds, int i, float &M, float &L)
{
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
    M = neg_inf;
    L = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w)
        M = hk_maxf(M, hk_u32_as_f32(hk_lds_load_b32(lds, dec_part(w) + ROWS * O_PITCH * 4 + i * 8)));
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        const int ml = dec_part(w) + ROWS * O_PITCH * 4 + i * 8;
        const float m = hk_u32_as_f32(hk_lds_load_b32(lds, ml));
        if (m != neg_inf)
            L += hk_u32_as_f32(hk_lds_load_b32(lds, ml + 4)) * hk_exp2f(m - M);
    }
}

HK_DEVICE void dec_o_merge(hk_lds_t lds, int i, int d, float M, float (&acc)[4])
{
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
#pragma unroll
    for (int e = 0; e < 4; ++e)
        acc[e] = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        const float m = hk_u32_as_f32(hk_lds_load_b32(lds, dec_part(w) + ROWS * O_PITCH * 4 + i * 8));
        if (m == neg_inf)
            continue;
        const float f = hk_exp2f(m - M);
        const hk_u32x4 v = hk_lds_load_b128(lds, dec_part(w) + (i * O_PITCH + d) * 4);
#pragma unroll
        for (int e = 0; e < 4; ++e)
            acc[e] += hk_u32_as_f32(v[e]) * f;
    }
}

// This warp's state into its partial (O, then max and sum per row).
HK_DEVICE void dec_write_part(hk_lds_t lds, const dec_state &st)
{
    const int lane = hk_lane_id(), g = lane / 4, t = lane % 4, part = dec_part(hk_wave_id());
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int i = mt * 16 + g + 8 * h;
#pragma unroll
            for (int n = 0; n < D / 8; ++n) {
                hk_u32x2 v;
                v[0] = hk_f32_as_u32(st.o[mt][n][2 * h]);
                v[1] = hk_f32_as_u32(st.o[mt][n][2 * h + 1]);
                hk_lds_store_b64(lds, part + (i * O_PITCH + n * 8 + 2 * t) * 4, v);
            }
            float l = st.l[mt][h];
            l += hk_shfl_xor_f32(l, 1);
            l += hk_shfl_xor_f32(l, 2);
            if (t == 0) {
                hk_lds_store_b32(lds, part + ROWS * O_PITCH * 4 + i * 8, hk_f32_as_u32(st.m[mt][h]));
                hk_lds_store_b32(lds, part + ROWS * O_PITCH * 4 + i * 8 + 4, hk_f32_as_u32(l));
            }
        }
}

// ---- the merge of the splits ---------------------------------------------------
// Rows r0 .. r0 + nrows - 1 of KV head hk of sequence b from the ns partials
// (unnormalised O at po, max and sum at pml; split sp's at po + sp * R * D and
// pml + sp * R * 2), in split order.  One CTA reads them all, so the reads
// are spread for many in flight: a warp per row for the maxima and sums
// (lanes over the splits), then a thread per 4 columns of a row, its loop
// over the splits unrolled; the weight 2^(m - M) / L of each split's row
// comes from LDS (phase 1 wrote it) when the table fits.
struct dec_merge_ctx {
    const float *po, *pml;
    int R, ns, r0, nrows, b, hk, G;
    int s0, ss;     // partial sp of the merge is split slot s0 + sp * ss
    bool last;      // the final merge (O and LSE), else a group's (a partial into slot s0)
};

static constexpr int MERGE_ML = Q_B + ROWS * 8;             // a group merge's M and L per row
static constexpr int MERGE_W = Q_B + ROWS * 16;             // the weight table [split][ROWS]

HK_DEVICE bool dec_merge_table(int ns) { return (long)ns * ROWS * 4 + ROWS * 16 <= MAIN_B; }

HK_DEVICE float dec_warp_max(float x)
{
#pragma unroll
    for (int m = 16; m >= 1; m /= 2)
        x = hk_maxf(x, hk_shfl_xor_f32(x, m));
    return x;
}

HK_DEVICE float dec_warp_sum(float x)
{
#pragma unroll
    for (int m = 16; m >= 1; m /= 2)
        x += hk_shfl_xor_f32(x, m);
    return x;
}

// Phase 1: each row's max M (0 for none: weights stay finite), 1 / L, LSE.
HK_DEVICE void dec_merge_rows(hk_lds_t lds, const hk_args &a, const dec_merge_ctx &m, int q_tokens, int heads_q)
{
    const int wave = hk_wave_id(), lane = hk_lane_id();
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
    const bool table = dec_merge_table(m.ns);
    for (int i = wave; i < m.nrows; i += WARPS) {        // warp-uniform
        const float *ml = m.pml + ((long)m.s0 * m.R + m.r0 + i) * 2;
        const long sst = (long)m.ss * m.R * 2;           // floats from one partial's max to the next's
        // up to 32 partials: a lane's max and sum read once (one round trip, not three)
        const bool one = m.ns <= HK_WAVE_SIZE;
        const float m1 = one && lane < m.ns ? hk_global_load_f32(ml + lane * sst) : neg_inf;
        const float l1 = one && lane < m.ns ? hk_global_load_f32(ml + lane * sst + 1) : 0.0f;
        float M = m1;
        for (int sp = lane; !one && sp < m.ns; sp += HK_WAVE_SIZE)
            M = hk_maxf(M, hk_global_load_f32(ml + sp * sst));
        M = dec_warp_max(M);
        const float Mu = M == neg_inf ? 0.0f : M;
        const float w1 = hk_exp2f(m1 - Mu);
        float L = l1 * w1;
        for (int sp = lane; !one && sp < m.ns; sp += HK_WAVE_SIZE)
            L += hk_global_load_f32(ml + sp * sst + 1) * hk_exp2f(hk_global_load_f32(ml + sp * sst) - Mu);
        L = dec_warp_sum(L);
        // a group's merge keeps O unnormalised: its partial's max M and sum L
        const float inv = !m.last ? 1.0f : L > 0.0f ? 1.0f / L : 0.0f;
        if (table && one && lane < m.ns)
            hk_lds_store_b32(lds, MERGE_W + (lane * ROWS + i) * 4, hk_f32_as_u32(w1 * inv));
        if (table && !one)
            for (int sp = lane; sp < m.ns; sp += HK_WAVE_SIZE)
                hk_lds_store_b32(lds, MERGE_W + (sp * ROWS + i) * 4,
                                 hk_f32_as_u32(hk_exp2f(hk_global_load_f32(ml + sp * sst) - Mu) * inv));
        if (lane == 0) {
            hk_lds_store_b32(lds, Q_B + i * 8, hk_f32_as_u32(Mu));
            hk_lds_store_b32(lds, Q_B + i * 8 + 4, hk_f32_as_u32(inv));
            hk_lds_store_b32(lds, MERGE_ML + i * 8, hk_f32_as_u32(M));
            hk_lds_store_b32(lds, MERGE_ML + i * 8 + 4, hk_f32_as_u32(L));
            const int r = m.r0 + i, t = r / m.G, hq = m.hk * m.G + r % m.G;
            if (m.last && a.LSE)
                hk_global_store_f32(a.LSE + ((long)m.b * heads_q + hq) * q_tokens + t,
                                    L > 0.0f ? (M + hk_log2f(L)) * LN2 : neg_inf);
        }
    }
}

// Phase 2: columns d .. d + 3 of local row i summed over the splits.
template <bool VEC, bool TABLE>
HK_DEVICE void dec_merge_cols(hk_lds_t lds, const dec_merge_ctx &m, int i, int d, float (&acc)[4])
{
    const int r = m.r0 + i;
    const float Mu = hk_u32_as_f32(hk_lds_load_b32(lds, Q_B + i * 8));
    const float inv = hk_u32_as_f32(hk_lds_load_b32(lds, Q_B + i * 8 + 4));
#pragma unroll
    for (int j = 0; j < 4; ++j)
        acc[j] = 0.0f;
#pragma unroll 16
    for (int sp = 0; sp < m.ns; ++sp) {
        const long slot = m.s0 + (long)sp * m.ss;
        const float f = TABLE ? hk_u32_as_f32(hk_lds_load_b32(lds, MERGE_W + (sp * ROWS + i) * 4))
                              : hk_exp2f(hk_global_load_f32(m.pml + (slot * m.R + r) * 2) - Mu) * inv;
        const float *src = m.po + (slot * m.R + r) * D + d;
        hk_u32x4 v;
        if constexpr (VEC) {
            v = hk_global_load_b128(src);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                v[j] = hk_f32_as_u32(hk_global_load_f32(src + j));
        }
#pragma unroll
        for (int j = 0; j < 4; ++j)
            acc[j] += hk_u32_as_f32(v[j]) * f;
    }
}

HK_DEVICE void dec_merge(hk_lds_t lds, const hk_args &a, const dec_merge_ctx &m, int q_tokens, int heads_q)
{
    dec_merge_rows(lds, a, m, q_tokens, heads_q);
    hk_barrier();
    const bool vec = (unsigned long)m.po % 16 == 0, table = dec_merge_table(m.ns);
    for (int e = hk_thread_id(); e < m.nrows * (D / 4); e += THREADS) {
        const int i = e / (D / 4), d = e % (D / 4) * 4, r = m.r0 + i;
        float acc[4];
        if (vec && table)
            dec_merge_cols<true, true>(lds, m, i, d, acc);
        else if (vec)
            dec_merge_cols<true, false>(lds, m, i, d, acc);
        else
            dec_merge_cols<false, false>(lds, m, i, d, acc);
        if (!m.last) {                                   // this thread alone read these 4 columns
            float *w = (float *)m.po + ((long)m.s0 * m.R + r) * D + d;
#pragma unroll
            for (int j = 0; j < 4; ++j)
                hk_global_store_f32(w + j, acc[j]);
            continue;
        }
        const int t = r / m.G, hq = m.hk * m.G + r % m.G;
        hk_bf16 *Or = a.O + (((long)m.b * q_tokens + t) * heads_q + hq) * D + d;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            hk_global_store_bf16(Or + j, hk_f32_to_bf16(acc[j]));
    }
    if (m.last)
        return;
    hk_barrier();                                        // every max and sum of slot s0 read (non-table merges)
    for (int i = hk_thread_id(); i < m.nrows; i += THREADS) {
        float *ml = (float *)m.pml + ((long)m.s0 * m.R + m.r0 + i) * 2;
        hk_global_store_f32(ml, hk_u32_as_f32(hk_lds_load_b32(lds, MERGE_ML + i * 8)));
        hk_global_store_f32(ml + 1, hk_u32_as_f32(hk_lds_load_b32(lds, MERGE_ML + i * 8 + 4)));
    }
}

// ---- check_tables, scales, sinks -------------------------------------------------
HK_DEVICE void dec_record_fault(const hk_args &a, int b)
{
]hkm_if_true([check_tables], [[    hk_atomic_min_u32(a.table_error, (unsigned)b);]], [[    (void)a;
    (void)b;]])[
}

// The cache's scales times 2^8 (the widened codes are 2^-8 of their values).
HK_DEVICE void dec_scales(const hk_args &a, float &ks, float &vs)
{
]m4_ifelse(hkm_param([kv_dtype]), [fp8_e4m3], [[    ks = a.k_scale * 256.0f;
    vs = a.v_scale * 256.0f;]], [[    (void)a;
    ks = vs = 1.0f;]])[
}

// The sink logit of query head hq in base 2 (sinks: fp32 [heads_q], natural).
HK_DEVICE float dec_sink(const hk_args &a, int hq)
{
]hkm_if_true([sinks], [[    return hk_global_load_f32(a.sinks + hq) * LOG2E;]], [[    (void)a;
    (void)hq;
    return 0.0f;]])[
}

// Q rows of the block into shared memory (16-bit swizzled rows), negated when
// the scores' scale is negative, fp16 for an fp8 cache; rows past R repeat row R - 1.
HK_DEVICE void dec_load_q(hk_lds_t lds, const hk_bf16 *Q, int r0, int R, int G, int hk, int b, int q_tokens,
                          int heads_q, bool neg)
{
    const bool vec = (unsigned long)Q % 16 == 0;
    for (int i = hk_thread_id(); i < ROWS * CHUNKS; i += THREADS) {
        const int row = i / CHUNKS, ch = i % CHUNKS;
        const int rr = r0 + row < R ? r0 + row : R - 1, t = rr / G, hq = hk * G + rr % G;
        const hk_bf16 *qr = Q + (((long)b * q_tokens + t) * heads_q + hq) * D;
        hk_bf16x8 v = hk_global_load_bf16x8(qr + ch * 8, 8, vec);
        if constexpr (FP8) {
            // k position p of each 16 holds d 4(p/2 % 4) + p%2 + 2(p/8) (dec_tile's K order):
            // chunk 2u holds d 16u + {0,1,4,5,8,9,12,13}, chunk 2u+1 the others
            const hk_bf16x8 a = hk_global_load_bf16x8(qr + (ch & ~1) * 8, 8, vec);
            const hk_bf16x8 bb = hk_global_load_bf16x8(qr + (ch | 1) * 8, 8, vec);
            const bool odd = ch & 1;
#pragma unroll
            for (int j = 0; j < 2; ++j) {                // positions 2j, 2j+1 (a), 4 + 2j.. (bb): d 4j + 2 odd, +1
                v[2 * j] = odd ? a[4 * j + 2] : a[4 * j];
                v[2 * j + 1] = odd ? a[4 * j + 3] : a[4 * j + 1];
                v[4 + 2 * j] = odd ? bb[4 * j + 2] : bb[4 * j];
                v[5 + 2 * j] = odd ? bb[4 * j + 3] : bb[4 * j + 1];
            }
        }
        hk_u32x4 w;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            float lo = hk_bf16_to_f32(v[2 * j]), hi = hk_bf16_to_f32(v[2 * j + 1]);
            if (neg) {
                lo = -lo;
                hi = -hi;
            }
            w[j] = dec_pack(lo, hi);
        }
        hk_lds_store_b128(lds, dec_swz(row, ch), w);
    }
}

// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    (void)head_dim;
    (void)block_size;
    (void)check_tables;
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
    const int G = heads_q / heads_k;
    const int R = q_tokens * G;                          // query rows of a KV head
    const int RG = (R + ROWS - 1) / ROWS;                // row groups (grid y = heads_k * RG)
    const int ns = hk_grid_dim_x(), split = hk_block_id_x();
    const int hk = hk_block_id_y() / RG, rg = hk_block_id_y() % RG;
    const int b = hk_block_id_z();
    const int tid = hk_thread_id(), wave = hk_wave_id(), lane = hk_lane_id();
    HK_LDS_DECLARE_DYNAMIC();

    // the sequence's keys, clamped into its table (check_tables reports a
    // length outside it)
    const int *table = hk_a.block_tables + (long)b * max_blocks;
    const int cap = max_blocks * BS;
    int len = hk_global_load_i32(hk_a.seq_lens + b);
    // the scores' scale in base 2, made positive (Q negated when it is
    // negative), and Q into shared memory while the length is in flight
    float ks, vs;
    dec_scales(hk_a, ks, vs);
    const float sc = hk_a.scale * ks;
    const bool neg_scale = sc < 0.0f;
    float c = (neg_scale ? -sc : sc) * LOG2E;
    c = c >= 1.17549435e-38f ? c : 1.17549435e-38f;
    float cap_in = 0.0f;
    if constexpr (SOFTCAP > 0.0f) {                      // the cap applies to scale q.k
        cap_in = (neg_scale ? -sc : sc) / (SOFTCAP > 0.0f ? SOFTCAP : 1.0f);
        c = LOG2E;
    }
    dec_load_q(hk_lds, hk_a.Q, rg * ROWS, R, G, hk, b, q_tokens, heads_q, neg_scale);

    bool bad = false;
    if (CHECK && (len < 0 || len > cap)) {
        if (tid == 0) {
            hk_report_fault("sequence %ld: seq_len %ld is beyond its block table (max_blocks %ld x block_size %ld)",
                            b, len, max_blocks, BS);
            dec_record_fault(hk_a, b);
        }
        bad = true;
    }
    len = len < 0 ? 0 : len > cap ? cap : len;

    // the group's keys kbeg .. len - 1 (a window leaves out those before its
    // first token's window), from a tile boundary; this split's k0 .. k1 - 1:
    // whole rounds of the warps' tiles, the last split's range cut
    const int kfirst0 = WINDOW && window_left >= 0 ? len - q_tokens - window_left : 0;
    const int kbeg = (kfirst0 > 0 ? kfirst0 : 0) / KT * KT;
    const int per = ((len - kbeg + ns - 1) / ns + WARPS * KT - 1) / (WARPS * KT) * (WARPS * KT);
    const int k0 = kbeg + split * per;
    dec_ctx x;
    x.k1 = k0 + per < len ? k0 + per : len;
    x.k1 = x.k1 > k0 ? x.k1 : k0;
    if (CHECK) {
        if (tid == 0)
            hk_lds_store_b32(hk_lds, FLAGS, bad ? 1u : 0u);
        hk_barrier();
        for (int i = k0 / BS + tid; i < (x.k1 + BS - 1) / BS; i += THREADS) {
            const int id = hk_global_load_i32(table + i);
            if (id < 0 || id >= num_blocks) {
                hk_report_fault("sequence %ld: block_tables[%ld][%ld] = %ld is not a block of the cache", b, b, i, id);
                dec_record_fault(hk_a, b);
                hk_lds_store_b32(hk_lds, FLAGS, 1u);
            }
        }
        hk_barrier();
        if (hk_lds_load_b32(hk_lds, FLAGS))
            x.k1 = k0;                                   // a bad sequence reads no key
    }
    x.K = hk_a.KV + (long)hk * D / EPW;
    x.V = x.K + (long)num_blocks * BS * heads_k * D / EPW;
    x.table = table;
    x.page_stride = (long)BS * heads_k * D / EPW;
    x.key_stride = (long)heads_k * D / EPW;
    const bool vec_kv = (unsigned long)hk_a.KV % 16 == 0;

    // this lane's rows: their last key in the split and first (window)
    dec_state st;
    const int g = lane / 4, t4 = lane % 4;
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int rl = rg * ROWS + mt * 16 + g + 8 * h;
            const int rr = rl < R ? rl : R - 1;
            const int pos = len - q_tokens + rr / G;     // the row's position: the last key it sees
            st.klim[mt][h] = pos < x.k1 - 1 ? pos : x.k1 - 1;
            st.kfirst[mt][h] = WINDOW && window_left >= 0 ? pos - window_left : 0;
            st.m[mt][h] = neg_inf;
            st.l[mt][h] = 0.0f;
            if (SINKS && split == 0 && wave == 0) {      // the sink joins the first split's sum
                st.m[mt][h] = dec_sink(hk_a, hk * G + rr % G);
                st.l[mt][h] = t4 == 0 ? 1.0f : 0.0f;
            }
#pragma unroll
            for (int n = 0; n < D / 8; ++n)
                st.o[mt][n] = hk_mma_acc_zero();
        }
    hk_barrier();                                        // Q written
    if (vec_kv)
        dec_kv_loop<true>(hk_lds, x, k0, c, cap_in, st);
    else
        dec_kv_loop<false>(hk_lds, x, k0, c, cap_in, st);
    hk_barrier();                                        // every ring read: the partials reuse it
    dec_write_part(hk_lds, st);
    hk_barrier();

    const int r0 = rg * ROWS, nrows = R - r0 < ROWS ? R - r0 : ROWS;
    if (ns == 1) {                                       // uniform: no split, no workspace
        for (int e = tid; e < nrows * (D / 4); e += THREADS) {
            const int i = e / (D / 4), d = e % (D / 4) * 4, r = r0 + i;
            const int t = r / G, hq = hk * G + r % G;
            float M, L, acc[4];
            dec_row_merge(hk_lds, i, M, L);
            dec_o_merge(hk_lds, i, d, M, acc);
            const float inv = L > 0.0f ? vs / L : 0.0f;
            hk_bf16 *Or = hk_a.O + (((long)b * q_tokens + t) * heads_q + hq) * D + d;
#pragma unroll
            for (int j = 0; j < 4; ++j)
                hk_global_store_bf16(Or + j, hk_f32_to_bf16(acc[j] * inv));
            if (d == 0 && hk_a.LSE)
                hk_global_store_f32(hk_a.LSE + ((long)b * heads_q + hq) * q_tokens + t,
                                    L > 0.0f ? (M + hk_log2f(L)) * LN2 : neg_inf);
        }
        return;
    }

    // the split's partial: O [b][hk][split][R][D], then max and sum [b][hk][split][R][2]
    const long grp = ((long)b * heads_k + hk) * ns;
    const float *po = hk_a.workspace + grp * R * D;
    const float *pml = hk_a.workspace + (long)batch * heads_q * q_tokens * ns * D + grp * R * 2;
    for (int e = tid; e < nrows * (D / 4); e += THREADS) {
        const int i = e / (D / 4), d = e % (D / 4) * 4;
        float M, L, acc[4];
        dec_row_merge(hk_lds, i, M, L);
        dec_o_merge(hk_lds, i, d, M, acc);
        float *w = hk_a.workspace + (grp + split) * R * D + (long)(r0 + i) * D + d;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            hk_global_store_f32(w + j, acc[j] * vs);
        if (d == 0) {
            float *ml = (float *)pml + ((long)split * R + r0 + i) * 2;
            hk_global_store_f32(ml, M);
            hk_global_store_f32(ml + 1, L);
        }
    }
    hk_fence_device();                                   // the partial, before the count
    hk_barrier();
    // more than MGROUP splits: groups of MGROUP, the block completing a
    // group's counter merges its partials (split order) into the group's
    // first slot, then the one completing the group count merges those
    // (group order): every merge reads at most max(MGROUP, groups) partials
    const int ng = ns > MGROUP ? (ns + MGROUP - 1) / MGROUP : 1, gi = split / MGROUP;
    const long cid = (long)b * heads_k * RG + hk_block_id_y();
    int *cnt_main = hk_a.counters + cid;
    dec_merge_ctx m;
    m.po = po;
    m.pml = pml;
    m.R = R;
    m.r0 = r0;
    m.nrows = nrows;
    m.b = b;
    m.hk = hk;
    m.G = G;
    if (ng > 1) {
        int *cnt_g = hk_a.counters + (long)batch * heads_k * RG + cid * ng + gi;
        const int gn = ns - gi * MGROUP < MGROUP ? ns - gi * MGROUP : MGROUP;
        if (tid == 0) {
            const bool last = hk_atomic_add_i32(cnt_g, 1) == gn - 1;
            if (last)
                hk_global_store_b32(cnt_g, 0u);
            hk_lds_store_b32(hk_lds, FLAGS + 4, last ? 1u : 0u);
        }
        hk_barrier();
        if (!hk_lds_load_b32(hk_lds, FLAGS + 4))
            return;
        hk_fence_device();                               // the group's partials, after its count
        m.ns = gn;
        m.s0 = gi * MGROUP;
        m.ss = 1;
        m.last = false;
        dec_merge(hk_lds, hk_a, m, q_tokens, heads_q);
        hk_fence_device();                               // the group's partial, before the count
        hk_barrier();
    }
    if (tid == 0) {
        const bool last = hk_atomic_add_i32(cnt_main, 1) == (ng > 1 ? ng : ns) - 1;   // groups, or splits
        if (last)
            hk_global_store_b32(cnt_main, 0u);           // for the next launch
        hk_lds_store_b32(hk_lds, FLAGS + 4, last ? 1u : 0u);
    }
    hk_barrier();
    if (!hk_lds_load_b32(hk_lds, FLAGS + 4))
        return;
    hk_fence_device();                                   // the other partials, after the count
    m.ns = ng > 1 ? ng : ns;
    m.s0 = 0;
    m.ss = ng > 1 ? MGROUP : 1;
    m.last = true;
    dec_merge(hk_lds, hk_a, m, q_tokens, heads_q);
}
]hkm_output_end()
