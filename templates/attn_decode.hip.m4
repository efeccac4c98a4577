m4_divert(-1)                                                   -*- C -*-
# attn_decode.hip.m4 - attention decode over a paged KV cache for AMD CDNA:
# bf16 Q, cache and O, fp32 softmax and accumulation, split-KV merged in
# the same launch.  The semantics, the layouts and the contract on device
# data are gen/op_attn_decode.c's (its top comment).
#
# Parameters (hkm_p_*): dtype (bf16), kv_dtype (bf16|fp8_e4m3), head_dim (64|128|256), block_size
# (16|32|64), check_tables (baked bool), batch, q_tokens, heads_q, heads_k,
# max_blocks, num_blocks, window_left (baked or `any'), sinks (baked bool),
# softcap (baked float, 0: none).  Arguments (hkm_kernarg_struct):
# Q, KV, block_tables, seq_lens, O, LSE, workspace, workspace_bytes,
# counters, counters_len, scale, the run-time dimensions (window_left
# among them), sinks with sinks, and table_error with check_tables.
#
# Grid: x = splits (the descriptor's formula), y = heads_k x row groups,
# z = batch.  Block: 256 threads = 4 waves.  A workgroup takes up to ROWS
# (128) query rows of one KV head: row r = t * G + g is token t of query
# head hk * G + g (G = heads_q / heads_k), wave w rows 32 w .. 32 w + 31 of
# its group, so the K and V of each page are read once for all of them.
#
# Per tile of BLOCK_N (64; 32 where a 64-key stage leaves no room for two
# workgroups per CU) keys of the workgroup's split, one LDS stage:
#   K as [key][d] and V^T as [d][key] (attn_vt_pos order), gathered from
#   the pages (block_tables) into registers while the tile before is
#   computed, then written to LDS between two barriers;
#   S^T = K Q^T and O^T += V^T P^T as attn_fwd.hip.m4 does (32x32 MFMA, the
#   key in the accumulator rows, the query row in the lane), always masked
#   (keys past the split's end or after the row's position are -inf; their
#   loads read the split's last key);
#   online softmax in base 2; waves without rows skip the MFMAs.
# End: one split writes O and LSE.  Several: each writes its rows' partial
# (unnormalised O, running max, sum: fp32) to the workspace, fences, and
# thread 0 adds 1 to the group's counter; the workgroup that completes it
# merges the partials in split order (deterministic), writes O and LSE and
# resets the counter.

m4_include([attn_common.m4])
hkm_check_one_of([dtype], [bf16])hkm_check_one_of([kv_dtype], [bf16], [fp8_e4m3])m4_dnl
hkm_check_one_of([head_dim], [64], [128], [256])m4_dnl
hkm_check_one_of([block_size], [16], [32], [64])hkm_if_true([check_tables], [], [])m4_dnl
hkm_if_true([sinks], [], [])hkm_param([window_left])hkm_param([softcap])
m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([attn_decode needs hkm_block_size 256, got ]hkm_block_size)])

# The plan (gen/op_attn_decode.c dec_plan): hkm_tune([rows]) query rows per
# workgroup, hkm_tune([block_n]) keys per tile, hkm_tune([waves]) waves per
# SIMD the registers are planned for.

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr int BS = ]hkm_param([block_size])[;       // keys per page
static constexpr bool CHECK = ]hkm_if_true([check_tables], [true], [false])[;
// the cache: bf16, or fp8 e4m3 codes (FNUZ: bias 8, 0x80 the NaN; else OCP:
// bias 7, 0x7f/0xff the NaNs) read 4 to a word, widened times k_scale /
// v_scale to bf16 on their way to LDS
static constexpr bool FP8 = ]m4_ifelse(hkm_param([kv_dtype]), [fp8_e4m3], [true], [false])[;
static constexpr bool FP8_FNUZ = ]m4_ifelse(hkm_tune([fp8_fnuz]), [1], [true], [false])[;
typedef ]m4_ifelse(hkm_param([kv_dtype]), [fp8_e4m3], [unsigned], [hk_bf16])[ dec_kv_t;
static constexpr int EPW = FP8 ? 4 : 1;                    // cache elements per dec_kv_t
// masks and logit transforms, each free when off
static constexpr bool WINDOW = ]hkm_if_param([window_left], [-1], [false], [true])[;
static constexpr bool SINKS = ]hkm_if_true([sinks], [true], [false])[;
static constexpr float SOFTCAP = (float)(]hkm_param([softcap])[);     // 0: none
static constexpr int WAVES = ATTN_THREADS / HK_WAVE_SIZE;
static constexpr int ROWS = ]hkm_tune([rows])[;             // query rows per workgroup
static constexpr int BLOCK_N = ]hkm_tune([block_n])[;       // keys per tile
// attn_common.m4's helpers read these (the causal limits go unused here)
static constexpr bool CAUSAL = true;
static constexpr int BLOCK_M = ROWS;
static constexpr int SUB_N = BLOCK_N / 32;                  // 32-key subtiles
static constexpr int K_PITCH = D * 2 + 16;                  // K rows padded by 16 bytes
]hkm_attn_vt_pitch()[
static constexpr int VT_PITCH = attn_vt_pitch(BLOCK_N);
static constexpr int LDS_K_BYTES = BLOCK_N * K_PITCH;
static constexpr int LDS_FLAGS = LDS_K_BYTES + D * VT_PITCH; // 2 words: table fault, last split
static constexpr int LDS_BYTES = LDS_FLAGS + 16;
static constexpr int LDS_LIMIT = ]hkm_target_lds_unit[;
// MFMA plan
static constexpr int D_CHUNKS = D / 16;
static constexpr int AB_PER_CHUNK = 8 / HK_MFMA_KPL;
static constexpr int D_TILES = D / 32;
static constexpr int PV_STEPS = 32 / HK_MFMA_K;
// global -> register staging
static constexpr int K_VECS = BLOCK_N * D / 8 / ATTN_THREADS;
static constexpr int V_UNITS = BLOCK_N / 2 * D / 8;         // (key pair, 8 d) units of V
static constexpr int V_REGS = V_UNITS / ATTN_THREADS;
]hkm_attn_limits()hkm_attn_lse_out()[

static_assert(ROWS == 32 * WAVES, "a wave per 32 query rows (gen/op_attn_decode.c DEC_ROWS)");
static_assert(BLOCK_N == 32 || BLOCK_N == 64, "32-key subtiles; the staging below fits both");
static_assert(BLOCK_N * D % (8 * ATTN_THREADS) == 0 && V_UNITS % ATTN_THREADS == 0, "even staging");
static_assert(ATTN_THREADS % (D / 8) == 0 && ATTN_THREADS % (BLOCK_N / 2) == 0, "affine staging");
static_assert(LDS_BYTES <= LDS_LIMIT, "LDS budget");
static_assert(ROWS * 8 <= LDS_K_BYTES, "the merge's row maxima and sums fit in the K region");

typedef float attn_f2 __attribute__((ext_vector_type(2)));
static constexpr bool VT_PAIRS = false;                      // V^T read a k step at a time
]hkm_attn_cdna_operands()[
// ---- the pages ---------------------------------------------------------------
// One KV head of one sequence: the head's first element in the K and V
// halves of the cache, the sequence's table row, element strides of a page
// and of a key within it, and the split's keys k0 .. k1 - 1.
struct dec_ctx {
    const dec_kv_t *K, *V;      // element offsets are divided by EPW
    const int *table;
    long page_stride, key_stride;
    int k1;
    float c;          // |scale| log2(e); with SOFTCAP, log2(e)
    float cap_in;     // SOFTCAP: |scale| / SOFTCAP
    float ks, vs;     // FP8: the cache's scales
};

// One fp8 e4m3 code (the low byte of c) as a float.
HK_DEVICE float dec_fp8(unsigned c)
{
    constexpr unsigned BIAS = FP8_FNUZ ? 8u : 7u;
    const unsigned s = (c & 0x80u) << 24, e = (c >> 3) & 15u, m = c & 7u;
    const float normal = hk_u32_as_f32(s | ((e + 127u - BIAS) << 23) | (m << 20));
    const float sub = hk_u32_as_f32(s | 0x3f800000u) * (float)m * (FP8_FNUZ ? 0x1p-10f : 0x1p-9f);
    const bool nan = FP8_FNUZ ? (c & 0xffu) == 0x80u : (c & 0x7fu) == 0x7fu;
    return nan ? hk_u32_as_f32(0x7fc00000u) : e ? normal : sub;
}

// 8 elements of the cache from element offset off (a multiple of 8): one
// 16-byte load of bf16 (VEC), or two words of fp8 codes widened times scale.
template <bool VEC>
HK_DEVICE hk_bf16x8 dec_load_row(const dec_kv_t *base, long off, float scale)
{
    if constexpr (FP8) {
        hk_bf16x8 v;
#pragma unroll
        for (int w = 0; w < 2; ++w) {
            const unsigned u = hk_f32_as_u32(hk_global_load_f32((const float *)(base + off / EPW) + w));
#pragma unroll
            for (int j = 0; j < 4; j += 2) {
                const unsigned p = hk_f32x2_to_bf16x2(dec_fp8(u >> (8 * j)) * scale, dec_fp8(u >> (8 * j + 8)) * scale);
                v[4 * w + j] = (hk_bf16)p;
                v[4 * w + j + 1] = (hk_bf16)(p >> 16);
            }
        }
        return v;
    } else {
        (void)scale;
        return hk_global_load_bf16x8((const hk_bf16 *)base + off, 8, VEC);
    }
}

// tanh(z) = 1 - 2 / (1 + e^(2z)): 1 and -1 at the ends (exp2 gives inf and 0)
HK_DEVICE float dec_tanh(float z) { return 1.0f - 2.0f / (1.0f + hk_exp2f(2.0f * LOG2E * z)); }

// The first element of key j (clamped to the split's last key: a key past
// it is masked, so its finite data adds nothing).
HK_DEVICE long dec_key_offset(const dec_ctx &x, int j)
{
    j = j < x.k1 - 1 ? j : x.k1 - 1;
    const int page = hk_global_load_i32(x.table + j / BS);
    return (long)page * x.page_stride + (long)(j % BS) * x.key_stride;
}

// K vector j of thread tid: key row r, column c; V unit j: key pair r, r + 1.
HK_DEVICE void dec_k_index(int tid, int j, int &r, int &c)
{
    constexpr int VPR = D / 8;
    r = tid / VPR + j * (ATTN_THREADS / VPR);
    c = (tid % VPR) * 8;
}

HK_DEVICE void dec_v_index(int tid, int j, int &r, int &c)
{
    r = 2 * (tid % (BLOCK_N / 2));
    c = (tid / (BLOCK_N / 2) + j * (ATTN_THREADS / (BLOCK_N / 2))) * 8;
}

template <bool VEC>
HK_DEVICE void dec_load(hk_bf16x8 (&k)[K_VECS], hk_bf16x8 (&v)[V_REGS][2], const dec_ctx &x, int kb)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < K_VECS; ++j) {
        int r, c;
        dec_k_index(tid, j, r, c);
        k[j] = dec_load_row<VEC>(x.K, dec_key_offset(x, kb + r) + c, x.ks);
    }
#pragma unroll
    for (int j = 0; j < V_REGS; ++j) {
        int r, c;
        dec_v_index(tid, j, r, c);
        v[j][0] = dec_load_row<VEC>(x.V, dec_key_offset(x, kb + r) + c, x.vs);
        v[j][1] = dec_load_row<VEC>(x.V, dec_key_offset(x, kb + r + 1) + c, x.vs);
    }
}

HK_DEVICE void dec_store(hk_lds_t lds, const hk_bf16x8 (&k)[K_VECS], const hk_bf16x8 (&v)[V_REGS][2])
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < K_VECS; ++j) {
        int r, c;
        dec_k_index(tid, j, r, c);
        hk_lds_store_b128(lds, r * K_PITCH + c * 2, __builtin_bit_cast(hk_u32x4, k[j]));
    }
    // V^T: one 32-bit word = keys 2m, 2m + 1 of one d
#pragma unroll
    for (int j = 0; j < V_REGS; ++j) {
        int r, c;
        dec_v_index(tid, j, r, c);
        const int pos = attn_vt_pos(r);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const unsigned w = (unsigned)v[j][0][i] | ((unsigned)v[j][1][i] << 16);
            hk_lds_store_b32(lds, LDS_K_BYTES + (c + i) * VT_PITCH + pos * 2, w);
        }
    }
}

// ---- one tile for one wave -------------------------------------------------------
// Scores S^T = K Q^T (lane: query row lane % 32, keys (r/4)*8 + half*4 + r%4
// of each subtile), soft-capped (SOFTCAP), masked outside kfirst .. klim
// (the keys this lane's row sees in the split), online softmax in base 2 (m_run: running max of the scaled
// scores, l_run: this lane's half of the sum), O^T += V^T P^T.
HK_DEVICE void dec_tile(hk_lds_t lds, const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK], const dec_ctx &x, int kb,
                        int kfirst, int klim, float &m_run, float &l_run, hk_mfma_acc_t (&o)[D_TILES])
{
    const int lane = hk_lane_id();
    const int half = lane / 32;
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
    hk_mfma_acc_t s[SUB_N];
    attn_qk<true>(lds, K_PITCH, qop, s);

    const float c = x.c;
    float mx = neg_inf;
    const int lim = klim - kb - half * 4, first = kfirst - kb - half * 4;
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            // + -inf past lim, + 0 before it: arithmetic, no compare masks
            // (32 of them live at once spilled SGPRs on gfx942)
            const int key = tt * 32 + (r / 4) * 8 + r % 4;
            if constexpr (SOFTCAP > 0.0f)
                s[tt][r] = SOFTCAP * dec_tanh(s[tt][r] * x.cap_in);
            s[tt][r] += hk_u32_as_f32((unsigned)((lim - key) >> 31) & 0xff800000u);
            if constexpr (WINDOW)
                s[tt][r] += hk_u32_as_f32((unsigned)((key - first) >> 31) & 0xff800000u);
            mx = hk_maxf(mx, s[tt][r]);
        }
    mx = hk_maxf(mx, hk_swap_halves(mx));
    const float m_new = hk_maxf(m_run, mx * c);
    const float m_use = m_new == neg_inf ? 0.0f : m_new; // nothing seen yet: keep exp2 finite
    const float alpha = hk_exp2f(m_run - m_use);
    m_run = m_new;

    hk_mfma_ab_t p[SUB_N][PV_STEPS];
    float sum = 0.0f;
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
        for (int st = 0; st < PV_STEPS; ++st) {
            attn_bf16_pairs t;
#pragma unroll
            for (int j = 0; j < HK_MFMA_KPL; j += 2) {
                const float e0 = hk_exp2f(s[tt][st * HK_MFMA_KPL + j] * c - m_use);
                const float e1 = hk_exp2f(s[tt][st * HK_MFMA_KPL + j + 1] * c - m_use);
                sum += e0 + e1;
                t[j / 2] = hk_f32x2_to_bf16x2(e0, e1);
            }
            p[tt][st] = __builtin_bit_cast(hk_mfma_ab_t, t);
        }
    l_run = l_run * alpha + sum;
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        o[dt] *= alpha;

#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
        attn_pv_sub<true>(lds, LDS_K_BYTES, VT_PITCH, tt, p[tt], o);
}

// The split's tiles k0, k0 + BLOCK_N, ... below x.k1: the next tile's pages
// are gathered into registers while this one is computed.
template <bool VEC>
HK_DEVICE void dec_kv_loop(hk_lds_t lds, const dec_ctx &x, int k0, bool wave_on, int kfirst, int klim,
                           const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK], float &m_run, float &l_run,
                           hk_mfma_acc_t (&o)[D_TILES])
{
    const int n_tiles = (x.k1 - k0 + BLOCK_N - 1) / BLOCK_N;
    hk_bf16x8 rk[K_VECS];
    hk_bf16x8 rv[V_REGS][2];
    if (n_tiles > 0) {
        dec_load<VEC>(rk, rv, x, k0);
        dec_store(lds, rk, rv);
    }
    hk_barrier();
    for (int it = 0; it < n_tiles; ++it) {
        const int kb = k0 + it * BLOCK_N;
        const bool more = it + 1 < n_tiles;              // uniform
        if (more)
            dec_load<VEC>(rk, rv, x, kb + BLOCK_N);
        if (wave_on)                                     // wave-uniform
            dec_tile(lds, qop, x, kb, kfirst, klim, m_run, l_run, o);
        hk_barrier();                                    // tile read by every wave
        if (more)
            dec_store(lds, rk, rv);
        hk_barrier();                                    // next tile written
    }
}

// ---- the merge of the splits ---------------------------------------------------------
// Rows r0 .. r0 + nrows - 1 of KV head hk of sequence b from the ns
// partials (unnormalised O at po, max and sum at pml; split sp's at
// po + sp * R * D and pml + sp * R * 2), in split order.
struct dec_merge_ctx {
    const float *po, *pml;
    int R, ns, r0, nrows, b, hk, G;
};

HK_DEVICE void dec_merge(hk_lds_t lds, const hk_args &a, const dec_merge_ctx &m, int q_tokens, int heads_q)
{
    const int tid = hk_thread_id();
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
    for (int i = tid; i < m.nrows; i += ATTN_THREADS) {
        const int r = m.r0 + i;
        float M = neg_inf, L = 0.0f;
        for (int sp = 0; sp < m.ns; ++sp)
            M = hk_maxf(M, hk_global_load_f32(m.pml + ((long)sp * m.R + r) * 2));
        for (int sp = 0; sp < m.ns && M != neg_inf; ++sp) {
            const float ms = hk_global_load_f32(m.pml + ((long)sp * m.R + r) * 2);
            if (ms != neg_inf)
                L += hk_global_load_f32(m.pml + ((long)sp * m.R + r) * 2 + 1) * hk_exp2f(ms - M);
        }
        const hk_u32x2 mi = {hk_f32_as_u32(M), hk_f32_as_u32(attn_inv_sum(L))}; // one 8-byte store: no bank conflict
        hk_lds_store_b64(lds, i * 8, mi);
        const int t = r / m.G, hq = m.hk * m.G + r % m.G;
        hk_global_store_f32(a.LSE + ((long)m.b * heads_q + hq) * q_tokens + t, attn_lse(M, L));
    }
    hk_barrier();
    for (int e = tid; e < m.nrows * D; e += ATTN_THREADS) {
        const int i = e / D, d = e % D, r = m.r0 + i;
        const hk_u32x2 mi = hk_lds_load_b64(lds, i * 8);
        const float M = hk_u32_as_f32(mi[0]), inv = hk_u32_as_f32(mi[1]);
        float acc = 0.0f;
        for (int sp = 0; sp < m.ns; ++sp) {
            const float ms = hk_global_load_f32(m.pml + ((long)sp * m.R + r) * 2);
            if (ms != neg_inf)
                acc += hk_global_load_f32(m.po + ((long)sp * m.R + r) * D + d) * hk_exp2f(ms - M);
        }
        const int t = r / m.G, hq = m.hk * m.G + r % m.G;
        hk_global_store_bf16(a.O + (((long)m.b * q_tokens + t) * heads_q + hq) * D + d, hk_f32_to_bf16(acc * inv));
    }
}

// ---- check_tables -------------------------------------------------------------
// The lowest faulty sequence, for the caller (table_error; 0xffffffff: none).
HK_DEVICE void dec_record_fault(const hk_args &a, int b)
{
]hkm_if_true([check_tables], [[    hk_atomic_min_u32(a.table_error, (unsigned)b);]], [[    (void)a;
    (void)b;]])[
}

// ---- the cache's scales (fp8) ----------------------------------------------------
HK_DEVICE void dec_scales(const hk_args &a, dec_ctx &x)
{
]m4_ifelse(hkm_param([kv_dtype]), [fp8_e4m3], [[    x.ks = a.k_scale;
    x.vs = a.v_scale;]], [[    (void)a;
    x.ks = x.vs = 1.0f;]])[
}

// ---- sinks ---------------------------------------------------------------------
// The sink logit of query head hq in base 2 (sinks: fp32 [heads_q], natural).
HK_DEVICE float dec_sink(const hk_args &a, int hq)
{
]hkm_if_true([sinks], [[    return hk_global_load_f32(a.sinks + hq) * LOG2E;]], [[    (void)a;
    (void)hq;
    return 0.0f;]])[
}

// ---- kernel ------------------------------------------------------------------
#undef HK_WAVES_PER_SIMD
#define HK_WAVES_PER_SIMD ]hkm_tune([waves])[
]hkm_kernel_begin()[
    (void)head_dim;
    (void)block_size;
    (void)check_tables;
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);
    const int G = heads_q / heads_k;
    const int R = q_tokens * G;                          // query rows of a KV head
    const int RG = (R + ROWS - 1) / ROWS;                // row groups (grid y = heads_k * RG)
    const int ns = hk_grid_blocks_x(), split = hk_block_id_x();
    const int hk = hk_block_id_y() / RG, rg = hk_block_id_y() % RG;
    const int b = hk_block_id_z();
    const int tid = hk_thread_id(), wave = hk_wave_id(), lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
    HK_LDS_DECLARE(LDS_BYTES);

    // the sequence's keys, clamped into its table (the contract's range;
    // check_tables reports a length outside it)
    const int *table = hk_a.block_tables + (long)b * max_blocks;
    const int cap = max_blocks * BS;
    int len = hk_uniform_i32(hk_global_load_i32(hk_a.seq_lens + b));
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
    // first token's window); this split's k0 .. k1 - 1: whole tiles, the
    // last split's range cut
    const int kfirst0 = WINDOW && window_left >= 0 ? len - q_tokens - window_left : 0;
    const int kbeg = kfirst0 > 0 ? kfirst0 : 0;
    const int per = ((len - kbeg + ns - 1) / ns + BLOCK_N - 1) / BLOCK_N * BLOCK_N;
    const int k0 = kbeg + split * per;
    dec_ctx x;
    x.k1 = k0 + per < len ? k0 + per : len;
    x.k1 = x.k1 > k0 ? x.k1 : k0;
    if (CHECK) {
        // every table entry the split reads: a page of the cache
        if (tid == 0)
            hk_lds_store_b32(hk_lds, LDS_FLAGS, bad ? 1u : 0u);
        hk_barrier();
        for (int i = k0 / BS + tid; i < (x.k1 + BS - 1) / BS; i += ATTN_THREADS) {
            const int id = hk_global_load_i32(table + i);
            if (id < 0 || id >= num_blocks) {
                hk_report_fault("sequence %ld: block_tables[%ld][%ld] = %ld is not a block of the cache", b, b, i, id);
                dec_record_fault(hk_a, b);
                hk_lds_store_b32(hk_lds, LDS_FLAGS, 1u);
            }
        }
        hk_barrier();
        if (hk_uniform_i32((int)hk_lds_load_b32(hk_lds, LDS_FLAGS)))
            x.k1 = k0;                                   // a bad sequence reads no key
    }

    // the KV head in both halves of the cache; 16-byte loads from an aligned cache
    x.K = hk_a.KV + (long)hk * D / EPW;
    x.V = x.K + (long)num_blocks * BS * heads_k * D / EPW;
    dec_scales(hk_a, x);
    x.table = table;
    x.page_stride = (long)BS * heads_k * D;
    x.key_stride = (long)heads_k * D;
    const bool vec_kv = !FP8 && (unsigned long)hk_a.KV % 16 == 0;

    // this lane's query row (rows past R read row R - 1 and are not stored)
    const int r_lane = rg * ROWS + wave * 32 + row;
    const bool wave_on = rg * ROWS + wave * 32 < R;      // wave-uniform
    const int rr = r_lane < R ? r_lane : R - 1;
    const int t = rr / G, hq = hk * G + rr % G;
    const int pos = len - q_tokens + t;                  // its position: the last key it sees
    const int klim = pos < x.k1 - 1 ? pos : x.k1 - 1;
    const int kfirst = WINDOW && window_left >= 0 ? pos - window_left : 0;

    // softmax scale in base 2, made positive (Q negated when scale < 0)
    const bool neg_scale = hk_a.scale < 0.0f;
    const float c = (neg_scale ? -hk_a.scale : hk_a.scale) * LOG2E;
    x.c = c >= 1.17549435e-38f ? c : 1.17549435e-38f;
    x.cap_in = 0.0f;
    if constexpr (SOFTCAP > 0.0f) {                      // the cap applies to scale q.k
        x.cap_in = (neg_scale ? -hk_a.scale : hk_a.scale) / SOFTCAP;
        x.c = LOG2E;
    }
    const bool vec_q = (unsigned long)hk_a.Q % 16 == 0;
    const hk_bf16 *Qr = hk_a.Q + (((long)b * q_tokens + t) * heads_q + hq) * D;
    hk_mfma_ab_t qop[D_CHUNKS][AB_PER_CHUNK];
#pragma unroll
    for (int u = 0; u < D_CHUNKS; ++u)
        attn_split_ab(hk_global_load_bf16x8(Qr + 16 * u + 8 * half, 8, vec_q),
                      neg_scale ? (hk_bf16)0x8000 : (hk_bf16)0, qop[u]);

    hk_mfma_acc_t o[D_TILES];
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        o[dt] = hk_mfma_acc_zero();
    float m_run = neg_inf, l_run = 0.0f;
    if (SINKS && split == 0) {                           // the sink joins the first split's sum
        m_run = dec_sink(hk_a, hq);
        l_run = half == 0 ? 1.0f : 0.0f;
    }
    if (vec_kv)
        dec_kv_loop<true>(hk_lds, x, k0, wave_on, kfirst, klim, qop, m_run, l_run, o);
    else
        dec_kv_loop<false>(hk_lds, x, k0, wave_on, kfirst, klim, qop, m_run, l_run, o);
    const float l_tot = wave_on ? l_run + hk_swap_halves(l_run) : 0.0f;
    const bool stores = wave_on && r_lane < R;

    // O^T accumulator element r of lane l: d = dt*32 + (r/4)*8 + (l/32)*4 + r%4
    if (ns == 1) {                                       // uniform: no split, no workspace
        if (stores) {
            const float inv = attn_inv_sum(l_tot);
            hk_bf16 *Or = hk_a.O + (((long)b * q_tokens + t) * heads_q + hq) * D;
#pragma unroll
            for (int dt = 0; dt < D_TILES; ++dt)
#pragma unroll
                for (int r = 0; r < 16; ++r)
                    hk_global_store_bf16(Or + dt * 32 + (r / 4) * 8 + half * 4 + r % 4,
                                         hk_f32_to_bf16(o[dt][r] * inv));
            attn_store_lse(hk_a, half == 0, b, hq, heads_q, q_tokens, t, m_run, l_tot);
        }
        return;
    }

    // the split's partial: O [b][hk][split][R][D], then max and sum [b][hk][split][R][2]
    const long grp = ((long)b * heads_k + hk) * ns;
    const float *po = hk_a.workspace + grp * R * D;
    const float *pml = hk_a.workspace + (long)batch * heads_q * q_tokens * ns * D + grp * R * 2;
    if (stores) {
        float *w = hk_a.workspace + (grp + split) * R * D + (long)r_lane * D;
#pragma unroll
        for (int dt = 0; dt < D_TILES; ++dt)
#pragma unroll
            for (int r = 0; r < 16; ++r)
                hk_global_store_f32(w + dt * 32 + (r / 4) * 8 + half * 4 + r % 4, o[dt][r]);
        if (half == 0) {
            float *ml = (float *)pml + ((long)split * R + r_lane) * 2;
            hk_global_store_f32(ml, m_run);
            hk_global_store_f32(ml + 1, l_tot);
        }
    }
    hk_fence_device();                                   // the partial, before the count
    hk_barrier();
    if (tid == 0) {
        int *cnt = hk_a.counters + (long)b * heads_k * RG + hk_block_id_y();
        const bool last = hk_atomic_add_i32(cnt, 1) == ns - 1;
        if (last)
            hk_global_store_b32(cnt, 0u);               // for the next launch
        hk_lds_store_b32(hk_lds, LDS_FLAGS + 4, last ? 1u : 0u);
    }
    hk_barrier();
    if (!hk_uniform_i32((int)hk_lds_load_b32(hk_lds, LDS_FLAGS + 4)))
        return;
    hk_fence_device();                                   // the other splits' partials, after the count
    dec_merge_ctx m;
    m.po = po;
    m.pml = pml;
    m.R = R;
    m.ns = ns;
    m.r0 = rg * ROWS;
    m.nrows = R - m.r0 < ROWS ? R - m.r0 : ROWS;
    m.b = b;
    m.hk = hk;
    m.G = G;
    dec_merge(hk_lds, hk_a, m, q_tokens, heads_q);
}
]hkm_output_end()
