m4_divert(-1)                                                   -*- C -*-
# attn_fwd.hip.m4 - attention forward, FlashAttention-2 style, bf16 in/out,
# fp32 softmax and accumulation, row log-sum-exp as a second output.
#
# The semantics, the parameter checks, the causal limits, the alignment
# predicates and the log-sum-exp epilogue are attn_common.m4's (shared with
# attn_fwd.sm90.hip.m4).
#
# Parameters (hkm_p_*): dtype (bf16), head_dim (64|96|128|192|256), causal (baked bool),
# batch, seqlen_q, seqlen_k, heads_q, heads_k (baked or `any'), and the
# serving features (baked; a kernel without one has none of its code):
# window_left, window_right (a sliding window; -1 no edge, `any' a kernel
# argument), sinks (bool), softcap (0: none), varlen (bool).  Kernel
# arguments (hkm_kernarg_struct): Q, K, V, O, LSE (may be null), element
# strides {q,k,v,o}_stride_{b,s,h} (head_dim contiguous; varlen: _s, _h of
# the packed [total][heads][head_dim] tensors), scale, the run-time ones of
# the dimensions, then cu_seqlens_q, cu_seqlens_k (varlen), sinks and the
# run-time window sizes.
#
# Grid: x = cdiv(seqlen_q, 128), y = heads_q, z = batch (varlen: seqlen_q is
# the longest sequence's; workgroups past their sequence's end exit).
# Block: 256 threads = 4 waves; wave w owns queries q0 + 32 w .. q0 + 32 w + 31.
#
# Features: a window's left edge adds masked blocks below the main loop's
# (keys before klo, the first a lane's query sees, masked; they run after the
# tail, attn_masked_block) and its right edge lowers the last visible key
# (attn_hi); soft-capping replaces the raw scores by
# tanh(|scale| s / cap) and takes cap * log2(e) as the softmax scale; a sink
# joins the row's sum in the epilogue (attn_sink).
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
# Pipelining: one LDS stage of BLOCK_N keys (128 on gfx950 up to head_dim 128,
# else 64 or 32: the most whose stage leaves room for two workgroups per CU),
# two barriers per block.  Main loop (blocks every query of the workgroup sees
# wholly, with a whole next block or, where MAIN_LAST, none): scores and
# softmax of block t from LDS;
# barrier; K of t+1 loaded to registers during the first half of P V, then
# written to LDS; V of t+1 loaded during the second half; barrier; V written.
# LDS operands of one MFMA k step are read as a group with one LDS wait
# (hk_waitcnt_lds).  The few remaining blocks (causal diagonal, last partial
# block) run a second loop without overlap: masked, loads clamped (keys past
# seqlen_k read the last row; their scores are -inf), waves whose queries see
# no key of a block skip it (wave-uniform).  The K/V loops are instantiated
# twice: 16-byte loads (strides multiples of 8, aligned bases, 32-bit row
# offsets) and element loads.  Workgroups are remapped XCD-aware
# (hk_xcd_remap): query blocks of one head, then the heads sharing a KV head,
# run on one XCD.  Registers are planned for HK_WAVES_PER_SIMD waves per SIMD.

m4_include([attn_common.m4])
hkm_attn_check_params([64], [96], [128], [192], [256])
hkm_if_true([sinks], [], [])hkm_if_true([varlen], [], [])hkm_param([softcap])

m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([attn_fwd needs hkm_block_size 256, got ]hkm_block_size)])

# The register and loop plan comes from the descriptor (gen/op_attn.c
# attn_plan_amd): hkm_tune([waves]) waves per SIMD the registers are planned
# for, hkm_tune([block_n]) keys per block, hkm_tune([main_last]) whether the
# unmasked main loop also takes the last block when it is whole.

hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ATTN_THREADS = ]hkm_block_size[;
static constexpr int D = ]hkm_param([head_dim])[;          // head_dim
static constexpr bool CAUSAL = ]hkm_if_true([causal], [true], [false])[;
static constexpr int WAVES = ATTN_THREADS / HK_WAVE_SIZE;
static constexpr int BLOCK_M = 32 * WAVES;                 // queries per workgroup
static constexpr int LDS_LIMIT = ]hkm_target_lds_unit[;       // LDS per CU
// LDS: K as [key][d] (d innermost), V^T as [d][key] (keys innermost), rows
// padded (K by 16 bytes, V^T by attn_vt_pitch); one stage (see the pipeline above)
static constexpr int K_PITCH = D * 2 + 16;
]hkm_attn_vt_pitch()[
static constexpr int attn_lds_bytes(int bn) { return bn * K_PITCH + D * attn_vt_pitch(bn); }
// keys per block (the plan's): the most (128, 64, 32) whose stage leaves room
// for two workgroups; 64 at most for head_dim 64 (its S tile would crowd the
// registers planned for three waves per SIMD)
static constexpr int BLOCK_N = ]hkm_tune([block_n])[;
static constexpr int SUB_N = BLOCK_N / 32;                  // 32-key subtiles
static constexpr int VT_PITCH = attn_vt_pitch(BLOCK_N);
static constexpr int LDS_K_BYTES = BLOCK_N * K_PITCH;
static constexpr int LDS_BYTES = attn_lds_bytes(BLOCK_N);
// MFMA plan
static constexpr int D_CHUNKS = D / 16;                     // Q K^T: 16-wide d chunks
static constexpr int AB_PER_CHUNK = 8 / HK_MFMA_KPL;        // operands per 8 bf16 of a lane
static constexpr int D_TILES = D / 32;                      // O^T: 32-row tiles
static constexpr int PV_STEPS = 32 / HK_MFMA_K;             // P V MFMAs per subtile and d tile
// global -> register staging
static constexpr int K_VECS = BLOCK_N * D / 8 / ATTN_THREADS;   // 8-bf16 vectors of K per thread
static constexpr int V_UNITS = BLOCK_N / 2 * D / 8;             // (key pair, 8 d) units of V
static constexpr int V_REGS = (V_UNITS + ATTN_THREADS - 1) / ATTN_THREADS;
// The main loop also takes the last block when it is whole (its prefetch
// re-reads a whole block, unused): the masked tail then vanishes from
// whole-block shapes, and with it the register peak of baked ones
// (where: the plan's main_last, gen/op_attn.c).
static constexpr bool MAIN_LAST = ]m4_ifelse(hkm_tune([main_last]), [1], [true], [false])[;
// serving features (baked: a kernel without one has none of its code)
static constexpr bool WIN_L = ]hkm_fwd_winl([true], [false])[;      // a window's left edge
static constexpr bool WIN_R = ]hkm_fwd_winr([true], [false])[;      // its right edge
static constexpr bool SINKS = ]hkm_fwd_sinks([true], [false])[;
static constexpr bool SOFTCAP = ]hkm_fwd_softcap([true], [false])[;
static constexpr float CAP = (float)(]hkm_fwd_softcap([hkm_param([softcap])], [0])[);
static constexpr bool VARLEN = ]hkm_fwd_varlen([true], [false])[;
]hkm_attn_common()[

static_assert(BLOCK_M == 128, "the grid (op_attn.c) assumes 128 queries per workgroup");
static_assert(BLOCK_N * D % (8 * ATTN_THREADS) == 0, "K block must split into 8-bf16 vectors evenly");
static_assert(D % 32 == 0 && BLOCK_N % 32 == 0, "32x32 MFMA tiles");
static_assert(8 % HK_MFMA_KPL == 0, "an 8-bf16 vector holds whole MFMA operands");
static_assert(LDS_BYTES <= LDS_LIMIT, "LDS budget");
static_assert(LDS_K_BYTES + D * VT_PITCH < (1 << 30), "LDS offsets");

typedef float attn_f2 __attribute__((ext_vector_type(2)));
static constexpr bool VT_PAIRS = false;                      // V^T read a k step at a time
]hkm_attn_cdna_operands()[
// ---- global -> registers: K or V of the block of keys kb .. kb + BLOCK_N - 1 ----
// CLAMP: keys past seqlen_k read row seqlen_k - 1 instead (finite data, no
// branch): their scores are masked to -inf, so P = 0 and their V rows add
// nothing.  Without CLAMP the whole block is in range (the caller knows).
// VEC: 16-byte loads (strides multiples of 8, aligned bases, and a head's
// rows within 2^31 elements: 32-bit offsets from the head's uniform base).
// Row and column of K vector j of thread tid: affine in j when the threads
// cover whole rows (head_dim 64, 128, 256), so one lane offset serves every j.
HK_DEVICE void attn_k_index(int tid, int j, int &r, int &c)
{
    constexpr int VPR = D / 8;                           // vectors per row
    if constexpr (ATTN_THREADS % VPR == 0) {
        r = tid / VPR + j * (ATTN_THREADS / VPR);
        c = (tid % VPR) * 8;
    } else {
        const int v = tid + ATTN_THREADS * j;
        r = v / VPR;
        c = (v % VPR) * 8;
    }
}

// Key pair (first row) and column of V unit j of thread tid (affine in j).
static_assert(ATTN_THREADS % (BLOCK_N / 2) == 0, "V units: whole key-pair rows per pass");
HK_DEVICE void attn_v_index(int tid, int j, int &r, int &c)
{
    r = 2 * (tid % (BLOCK_N / 2));
    c = (tid / (BLOCK_N / 2) + j * (ATTN_THREADS / (BLOCK_N / 2))) * 8;
}

template <bool VEC>
HK_DEVICE hk_bf16x8 attn_load_row(const hk_bf16 *base, long ss, int row, int c)
{
    if constexpr (VEC)
        return hk_global_load_bf16x8(
            (const hk_bf16 *)((const char *)base + ((unsigned)(row * (int)ss + c) << 1)), 8, true);
    else
        return hk_global_load_bf16x8(base + (long)row * ss + c, 8, false);
}

template <bool VEC, bool CLAMP>
HK_DEVICE void attn_load_k(hk_bf16x8 (&k)[K_VECS], const hk_bf16 *Kh, long k_ss, int Sk, int kb)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < K_VECS; ++j) {
        int r, c;
        attn_k_index(tid, j, r, c);
        k[j] = attn_load_row<VEC>(Kh, k_ss, CLAMP && kb + r > Sk - 1 ? Sk - 1 : kb + r, c);
    }
}

template <bool VEC, bool CLAMP>
HK_DEVICE void attn_load_v(hk_bf16x8 (&v)[V_REGS][2], const hk_bf16 *Vh, long v_ss, int Sk, int kb)
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < V_REGS; ++j) {
        if (V_UNITS % ATTN_THREADS == 0 || tid + ATTN_THREADS * j < V_UNITS) {
            int r, c;
            attn_v_index(tid, j, r, c);
            r += kb;
            v[j][0] = attn_load_row<VEC>(Vh, v_ss, CLAMP && r > Sk - 1 ? Sk - 1 : r, c);
            v[j][1] = attn_load_row<VEC>(Vh, v_ss, CLAMP && r + 1 > Sk - 1 ? Sk - 1 : r + 1, c);
        }
    }
}

// ---- registers -> LDS --------------------------------------------------------
HK_DEVICE void attn_store_k(hk_lds_t lds, const hk_bf16x8 (&k)[K_VECS])
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < K_VECS; ++j) {
        int r, c;
        attn_k_index(tid, j, r, c);
        hk_lds_store_b128(lds, r * K_PITCH + c * 2, __builtin_bit_cast(hk_u32x4, k[j]));
    }
}

// V^T: one 32-bit word = keys 2m, 2m+1 of one d; consecutive lanes take
// consecutive key pairs of the same d rows
HK_DEVICE void attn_store_v(hk_lds_t lds, const hk_bf16x8 (&v)[V_REGS][2])
{
    const int tid = hk_thread_id();
#pragma unroll
    for (int j = 0; j < V_REGS; ++j) {
        if (V_UNITS % ATTN_THREADS == 0 || tid + ATTN_THREADS * j < V_UNITS) {
            int r, c;
            attn_v_index(tid, j, r, c);
            const int pos = attn_vt_pos(r);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const unsigned w = (unsigned)v[j][0][i] | ((unsigned)v[j][1][i] << 16);
                hk_lds_store_b32(lds, LDS_K_BYTES + (c + i) * VT_PITCH + pos * 2, w);
            }
        }
    }
}

// ---- scores and online softmax of one K/V block for one wave ----------------------
// MASKED: some key of the block may be invisible to some query of the wave
// (klim: the last key this lane's query sees).  The MFMA gives raw scores
// q.k (Q already negated when scale < 0); c = |scale| * log2(e) > 0, so the
// row max is taken on raw scores and p = exp2(fma(s, c, -m)), two lanes' worth
// per packed fma.  m_run: running max of the scaled scores (base 2), l_run:
// this lane's partial sum of exp2 (its 16 keys of each subtile; the halves are
// added at the end).  O is rescaled here; p gets the B operands of P^T.
// WIN_L: keys before klo are masked too.  SOFTCAP: the raw scores become
// tanh(s sc) (sc = |scale| / cap) and c is cap * log2(e).
template <bool MASKED>
HK_DEVICE void attn_softmax(hk_lds_t lds, const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK], float c,
                            int kb, int klim, int klo, float sc, float &m_run, float &l_run,
                            hk_mfma_acc_t (&o)[D_TILES], hk_mfma_ab_t (&p)[SUB_N][PV_STEPS])
{
    const int lane = hk_lane_id();
    const int half = lane / 32;
    const float neg_inf = __builtin_bit_cast(float, 0xff800000u);

    // S^T = K Q^T, one 32x32 tile per 32-key subtile; the hot loop waits for
    // each chunk's operands, masked blocks leave the waits to the compiler (registers)
    hk_mfma_acc_t s[SUB_N];
    attn_qk<!MASKED>(lds, K_PITCH, qop, s);

    if constexpr (SOFTCAP) {
#pragma unroll
        for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
            for (int r = 0; r < 16; ++r)
                s[tt][r] = hk_tanhf(s[tt][r] * sc);
    } else {
        (void)sc;
    }

    // mask, row max of the raw scores (in lane, two chains, then across the lane halves)
    float mx0 = neg_inf, mx1 = neg_inf;
    const int lim = klim - kb - half * 4;                // key tt*32 + (r/4)*8 + r%4 visible iff <= lim
    // WIN_L: and >= low (klo); two compares per score would hold twice the
    // lane masks in SGPRs (gfx942 spilled), so [low, lim] is one range: a
    // lane without a visible key gets low far above any key
    const int low0 = WIN_L ? klo - kb - half * 4 : 0;
    const int low = WIN_L && lim < low0 ? 1 << 30 : low0;
    const unsigned span = WIN_L && lim >= low0 ? (unsigned)(lim - low0) : 0u;
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
        for (int r = 0; r < 16; r += 2) {
            if (MASKED && WIN_L) {                       // one unsigned compare: low <= key <= lim
                if ((unsigned)(tt * 32 + (r / 4) * 8 + r % 4 - low) > span)
                    s[tt][r] = neg_inf;
                if ((unsigned)(tt * 32 + (r / 4) * 8 + r % 4 + 1 - low) > span)
                    s[tt][r + 1] = neg_inf;
            } else if (MASKED) {
                if (tt * 32 + (r / 4) * 8 + r % 4 > lim)
                    s[tt][r] = neg_inf;
                if (tt * 32 + (r / 4) * 8 + r % 4 + 1 > lim)
                    s[tt][r + 1] = neg_inf;
            }
            float &m = r % 4 == 0 ? mx0 : mx1;
            m = hk_maxf(m, s[tt][r]);
            m = hk_maxf(m, s[tt][r + 1]);
        }
    float mx = hk_maxf(mx0, mx1);
    mx = hk_maxf(mx, hk_swap_halves(mx));
    const float m_new = hk_maxf(m_run, mx * c);
    const float m_use = m_new == neg_inf ? 0.0f : m_new; // no key seen yet: keep exp2 finite
    const float alpha = hk_exp2f(m_run - m_use);
    m_run = m_new;

    // P = exp2(S c - m), bf16, straight into the B operands of O^T += V^T P^T
    const attn_f2 c2 = {c, c}, nm2 = {-m_use, -m_use};
    attn_f2 sum2 = {0.0f, 0.0f};
#pragma unroll
    for (int tt = 0; tt < SUB_N; ++tt)
#pragma unroll
        for (int st = 0; st < PV_STEPS; ++st) {
            attn_bf16_pairs t;
#pragma unroll
            for (int j = 0; j < HK_MFMA_KPL; j += 2) {
                const attn_f2 x = {s[tt][st * HK_MFMA_KPL + j], s[tt][st * HK_MFMA_KPL + j + 1]};
                const attn_f2 y = x * c2 + nm2;          // v_pk_fma_f32
                const attn_f2 e = {hk_exp2f(y.x), hk_exp2f(y.y)};
                sum2 += e;                               // v_pk_add_f32
                t[j / 2] = hk_f32x2_to_bf16x2(e.x, e.y);
            }
            p[tt][st] = __builtin_bit_cast(hk_mfma_ab_t, t);
        }
    l_run = l_run * alpha + (sum2.x + sum2.y);
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt)
        o[dt] *= alpha;
}

// O^T += V^T P^T (d tiles innermost: independent accumulators back to back)
template <bool GROUP>
HK_DEVICE void attn_pv(hk_lds_t lds, const hk_mfma_ab_t (&p)[SUB_N][PV_STEPS], hk_mfma_acc_t (&o)[D_TILES],
                       int tt0, int tt1)
{
#pragma unroll
    for (int tt = tt0; tt < tt1; ++tt)
        attn_pv_sub<GROUP>(lds, LDS_K_BYTES, VT_PITCH, tt, p[tt], o);
}

// ---- K/V blocks t0 .. t1 - 1 of one wave --------------------------------------------
// One LDS stage, two barriers per block (see the top comment).  MAIN: every
// query of the workgroup sees every key of the block, and block t + 1 lies
// wholly below seqlen_k or (MAIN_LAST) does not exist, when its prefetch
// re-reads the last whole block, unused (no masks, no clamps, no skipping:
// the hot loop).  Otherwise per wave: skip the block if none of its queries
// sees a key of it (wave_last, wave-uniform), else mask it.
// WIN_L: blocks t_first .. t_main - 1 run masked after the tail (attn_masked_block);
// wave_first and klo are the first keys the wave and the lane's query see.
struct attn_ctx {
    const hk_bf16 *Kh, *Vh;
    long k_ss, v_ss;
    int Sk, n_blocks, wave_last, klim;
    float c;
    int t_first, t_main, n_main, wave_first, klo; // WIN_L
    float sc;                             // SOFTCAP: |scale| / cap
};

]hkm_attn_window()[

]hkm_attn_sink()[

// WIN_L: the masked blocks are the tail (n_main .. n_blocks - 1), then the
// head (t_first .. t_main - 1): one masked loop, whose i-th block this is
// (the main loop, then the masked one, walk every block once; the order of
// blocks does not change the online softmax).
HK_DEVICE int attn_masked_block(const attn_ctx &x, int i)
{
    const int n_tail = x.n_blocks - x.n_main;
    return i < n_tail ? x.n_main + i : x.t_first + (i - n_tail);
}

template <bool VEC, bool MAIN>
HK_DEVICE void attn_kv_range(hk_lds_t lds, const attn_ctx &x, int t0, int t1,
                             const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK],
                             float &m_run, float &l_run, hk_mfma_acc_t (&o)[D_TILES])
{
    for (int t = t0; t < t1; ++t) {
        const int kb = (WIN_L && !MAIN ? attn_masked_block(x, t) : t) * BLOCK_N;
        const bool more = MAIN || t + 1 < (WIN_L ? t1 : x.n_blocks); // uniform
        const bool run = MAIN || (kb <= x.wave_last && (!WIN_L || kb + BLOCK_N > x.wave_first)); // wave-uniform
        hk_mfma_ab_t p[SUB_N][PV_STEPS];
        if (run)
            attn_softmax<!MAIN>(lds, qop, x.c, kb, x.klim, x.klo, x.sc, m_run, l_run, o, p);
        hk_barrier();                                    // K of block t read by every wave
        if constexpr (MAIN) {
            int kn = !MAIN_LAST || kb + BLOCK_N < x.Sk - BLOCK_N ? kb + BLOCK_N : x.Sk - BLOCK_N;
            if constexpr (WIN_L)                         // no tail: the head's first block next (whole)
                kn = t + 1 == t1 && x.n_main == x.n_blocks ? x.t_first * BLOCK_N : kn;
            // block t + 1 to registers while P V runs: K during the first
            // half of the subtiles, then to LDS; V during the second half
            // (fewer registers live at once than loading both up front)
            hk_bf16x8 rk[K_VECS];
            hk_bf16x8 rv[V_REGS][2];
            attn_load_k<VEC, false>(rk, x.Kh, x.k_ss, x.Sk, kn);
            attn_pv<true>(lds, p, o, 0, SUB_N / 2);
            attn_store_k(lds, rk);
            attn_load_v<VEC, false>(rv, x.Vh, x.v_ss, x.Sk, kn);
            attn_pv<true>(lds, p, o, SUB_N / 2, SUB_N);
            hk_barrier();                                // V of block t read, K of t + 1 written
            attn_store_v(lds, rv);
        } else {
            // the few masked / clamped blocks: no overlap, fewer live registers
            if (run)
                attn_pv<false>(lds, p, o, 0, SUB_N);
            hk_barrier();                                // V of block t read
            if (more) {
                hk_bf16x8 rk[K_VECS];
                hk_bf16x8 rv[V_REGS][2];
                const int kn = WIN_L ? attn_masked_block(x, t + 1) * BLOCK_N : kb + BLOCK_N;
                attn_load_k<VEC, true>(rk, x.Kh, x.k_ss, x.Sk, kn);
                attn_load_v<VEC, true>(rv, x.Vh, x.v_ss, x.Sk, kn);
                attn_store_k(lds, rk);
                attn_store_v(lds, rv);
            }
            hk_barrier();                                // block t + 1 written
        }
    }
}

template <bool VEC>
HK_DEVICE void attn_kv_loop(hk_lds_t lds, const attn_ctx &x, int n_main,
                            const hk_mfma_ab_t (&qop)[D_CHUNKS][AB_PER_CHUNK],
                            float &m_run, float &l_run, hk_mfma_acc_t (&o)[D_TILES])
{
    // WIN_L: the main loop's first block, or the head's when there is no other
    const int t0 = WIN_L ? (x.t_main < x.n_blocks ? x.t_main : x.t_first) : 0;
    if (x.n_blocks > t0) {                               // prologue: block t0
        hk_bf16x8 rk[K_VECS];
        hk_bf16x8 rv[V_REGS][2];
        attn_load_k<VEC, true>(rk, x.Kh, x.k_ss, x.Sk, t0 * BLOCK_N);
        attn_load_v<VEC, true>(rv, x.Vh, x.v_ss, x.Sk, t0 * BLOCK_N);
        attn_store_k(lds, rk);
        attn_store_v(lds, rv);
    }
    hk_barrier();
    attn_kv_range<VEC, true>(lds, x, WIN_L ? x.t_main : 0, n_main, qop, m_run, l_run, o);
    if constexpr (WIN_L)                                 // the tail, then the window's left edge
        attn_kv_range<VEC, false>(lds, x, 0, x.n_blocks - n_main + (x.t_main > x.t_first ? x.t_main - x.t_first : 0),
                                  qop, m_run, l_run, o);
    else
        attn_kv_range<VEC, false>(lds, x, n_main, x.n_blocks, qop, m_run, l_run, o);
}

// ---- kernel ------------------------------------------------------------------
// registers for two waves per SIMD (two workgroups per CU, as the LDS plan
// allows); three for head_dim 64 (its LDS stage allows four workgroups)
#undef HK_WAVES_PER_SIMD
#define HK_WAVES_PER_SIMD ]hkm_tune([waves])[
]hkm_kernel_begin()[
    (void)head_dim;
    (void)causal;]hkm_fwd_sinks([[
    (void)sinks;]])hkm_fwd_varlen([[
    (void)varlen;]])[
]hkm_fwd_varlen([[    int Sq = seqlen_q, Sk = seqlen_k;                   // the longest sequence's, then this one's]],
[[    const int Sq = seqlen_q, Sk = seqlen_k;]])[
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
    const int q0 = bx * BLOCK_M;]hkm_fwd_varlen([[
    // varlen: this workgroup's sequence; past its end, nothing to do
    const int qs = hk_global_load_i32(hk_a.cu_seqlens_q + b), ks = hk_global_load_i32(hk_a.cu_seqlens_k + b);
    Sq = hk_global_load_i32(hk_a.cu_seqlens_q + b + 1) - qs;
    Sk = hk_global_load_i32(hk_a.cu_seqlens_k + b + 1) - ks;
    if (q0 >= Sq)                                        // workgroup-uniform
        return;]])[
    const int hkv = hq / (heads_q / heads_k);
    const int wave = hk_wave_id();
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
    const int qi = q0 + wave * 32 + row;                 // this lane's query

    // the (sequence, head)'s rows (64-bit offsets: varlen token offsets x strides)
    const hk_bf16 *Qh = hk_a.Q + ]hkm_fwd_varlen([[(long)qs * hk_a.q_stride_s]], [[(long)b * hk_a.q_stride_b]])[ + (long)hq * hk_a.q_stride_h;
    hk_bf16 *Oh = hk_a.O + ]hkm_fwd_varlen([[(long)qs * hk_a.o_stride_s]], [[(long)b * hk_a.o_stride_b]])[ + (long)hq * hk_a.o_stride_h;
    attn_ctx x;
    x.Kh = hk_a.K + ]hkm_fwd_varlen([[(long)ks * hk_a.k_stride_s]], [[(long)b * hk_a.k_stride_b]])[ + (long)hkv * hk_a.k_stride_h;
    x.Vh = hk_a.V + ]hkm_fwd_varlen([[(long)ks * hk_a.v_stride_s]], [[(long)b * hk_a.v_stride_b]])[ + (long)hkv * hk_a.v_stride_h;
    x.k_ss = hk_a.k_stride_s;
    x.v_ss = hk_a.v_stride_s;
    x.Sk = Sk;

    // 16-byte global loads need 8-element strides and 16-byte aligned bases;
    // K/V rows of a block are addressed by 32-bit byte offsets
    const long row_lim = Sk > 0 ? 0x7fffffffL / ((long)Sk + BLOCK_N) : 0;
    const bool vec_q = attn_aligned<8>(hk_a.Q, ]hkm_fwd_varlen([[0]], [[hk_a.q_stride_b]])[, hk_a.q_stride_s, hk_a.q_stride_h);
    const bool vec_k = attn_aligned<8>(hk_a.K, ]hkm_fwd_varlen([[0]], [[hk_a.k_stride_b]])[, x.k_ss, hk_a.k_stride_h) && x.k_ss >= 0 &&
                       x.k_ss <= row_lim;
    const bool vec_v = attn_aligned<8>(hk_a.V, ]hkm_fwd_varlen([[0]], [[hk_a.v_stride_b]])[, x.v_ss, hk_a.v_stride_h) && x.v_ss >= 0 &&
                       x.v_ss <= row_lim;

    HK_LDS_DECLARE(LDS_BYTES);

    // keys the workgroup, this wave and this lane may see
    const int win_l = ]hkm_fwd_winl([[window_left]], [[-1]])[, win_r = ]hkm_fwd_winr([[window_right]], [[-1]])[;
    x.n_blocks = attn_key_blocks(WIN_R ? attn_hi(q0 + BLOCK_M - 1, Sq, Sk, win_r) + 1 : attn_key_end(q0, Sq, Sk));
    const int wq0 = q0 + wave * 32;                      // wave-uniform
    x.wave_last = attn_hi(wq0 + 31, Sq, Sk, win_r);
    x.klim = attn_hi(qi, Sq, Sk, win_r);
    if constexpr (WIN_L) {
        // the first block any query sees, and the first every real one sees wholly
        const int ql = q0 + BLOCK_M - 1 < Sq - 1 ? q0 + BLOCK_M - 1 : Sq - 1;
        x.t_first = attn_lo(q0, Sq, Sk, win_l) / BLOCK_N;
        x.t_main = (attn_lo(ql, Sq, Sk, win_l) + BLOCK_N - 1) / BLOCK_N;
        x.t_main = x.t_main > x.t_first ? x.t_main : x.t_first;
        x.t_main = x.t_main < x.n_blocks ? x.t_main : x.n_blocks;
        x.wave_first = attn_lo(wq0, Sq, Sk, win_l);
        x.klo = attn_lo(qi, Sq, Sk, win_l);
    } else {
        (void)win_l;
    }
    // blocks every query of the workgroup sees wholly: the unmasked main loop,
    // which prefetches whole blocks only: without MAIN_LAST it leaves the last
    // block and any partial one to the tail loop; with it, it stops one short
    // only when the block after it exists but is partial
    const int wg_full = attn_hi(q0, Sq, Sk, win_r);
    int n_main = wg_full >= 0 ? (wg_full + 1) / BLOCK_N : 0;
    if (!MAIN_LAST) {
        n_main = n_main < x.n_blocks - 1 ? n_main : x.n_blocks - 1;
        n_main = n_main < Sk / BLOCK_N - 1 ? n_main : Sk / BLOCK_N - 1;
    } else if (n_main < x.n_blocks && (n_main + 1) * BLOCK_N > Sk) {
        n_main -= 1;
    }
    n_main = n_main > 0 ? n_main : 0;
    if constexpr (WIN_L) {                               // the main loop starts at t_main
        n_main = n_main > x.t_main ? n_main : x.t_main;
        x.n_main = n_main;
    }

    // softmax scale in base 2, made positive: c = |scale| * log2(e) (at least
    // the smallest normal float, so that -inf * c stays -inf) and Q negated
    // (exact in bf16) when scale < 0
    const bool neg_scale = hk_a.scale < 0.0f;
    float c = (neg_scale ? -hk_a.scale : hk_a.scale) * LOG2E;
    x.c = c >= 1.17549435e-38f ? c : 1.17549435e-38f;
    if constexpr (SOFTCAP) {                             // scores tanh(|scale| s / cap), in units of cap
        x.sc = (neg_scale ? -hk_a.scale : hk_a.scale) / CAP;
        x.c = CAP * LOG2E;
    }

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
        attn_kv_loop<true>(hk_lds, x, n_main, qop, m_run, l_run, o);
    else
        attn_kv_loop<false>(hk_lds, x, n_main, qop, m_run, l_run, o);

    // epilogue: the two lane halves' sums, normalise, store.
    // O^T accumulator element r of lane l: d = dt*32 + (r/4)*8 + (l/32)*4 + r%4, query l%32
    float l_tot = l_run + hk_swap_halves(l_run);
    float inv = attn_inv_sum(l_tot);]hkm_fwd_sinks([[
    const float alpha = attn_sink(hk_global_load_f32(hk_a.sinks + hq) * LOG2E, m_run, l_tot);
    inv = attn_inv_sum(l_tot) * alpha;]])[
    if (qi < Sq) {
        hk_bf16 *Oq = Oh + (long)qi * hk_a.o_stride_s;
#pragma unroll
        for (int dt = 0; dt < D_TILES; ++dt)
#pragma unroll
            for (int r = 0; r < 16; ++r)
                hk_global_store_bf16(Oq + dt * 32 + (r / 4) * 8 + half * 4 + r % 4,
                                     hk_f32_to_bf16(o[dt][r] * inv));
]hkm_fwd_varlen([[        // varlen: LSE[hq][total_q] (total_q = cu_seqlens_q[batch])
        if (hk_a.LSE && half == 0)
            hk_global_store_f32(hk_a.LSE + (long)hq * hk_global_load_i32(hk_a.cu_seqlens_q + batch) + qs + qi,
                                attn_lse(m_run, l_tot));]], [[        attn_store_lse(hk_a, half == 0, b, hq, heads_q, Sq, qi, m_run, l_tot);]])[
    }
}
]hkm_output_end()
