# attn_common.m4 - what the attention forward skeletons share: attn_fwd.hip.m4
# (AMD) and attn_fwd.sm90.hip.m4 (sm_90a) read it with
# m4_include([attn_common.m4]) before hkm_output_begin, call
# hkm_attn_check_params at their top and splice ]hkm_attn_common()[ after their
# configuration.  Read in diversion -1 (nothing here is output but the macros'
# text); gen/skel.c hashes it into the source key and annotates it for
# synclines like the skeleton (templates/README.md).
#
# The semantics both targets implement:
#   O[b][i][h][:] = sum_j softmax_j(scale * q_i . k_j) v_j     (keys j of KV head h / (Hq/Hk))
#   LSE[b][h][i]  = log sum_j exp(scale * q_i . k_j)          (fp32, [batch][heads_q][seqlen_q])
#   causal: key j visible iff j <= i + (seqlen_k - seqlen_q) (bottom-right aligned);
#   a row with no visible key gives O = 0 and LSE = -inf.


# hkm_attn_check_params(HEAD_DIM...)
# ---------------------------------
# The parameters of attn_fwd: dtype bf16, head_dim one of HEAD_DIMs (what the
# target's skeleton implements), causal a baked boolean, and the dimensions
# (baked or `any') defined by the prologue.
m4_define([hkm_attn_check_params],
[hkm_check_one_of([dtype], [bf16])hkm_check_one_of([head_dim], $@)hkm_if_true([causal], [], [])
hkm_param([batch])hkm_param([seqlen_q])hkm_param([seqlen_k])hkm_param([heads_q])hkm_param([heads_k])])


# hkm_attn_common()
# ----------------
# Device code of both forward targets, written once: the causal limits, the
# alignment predicates (hkm_attn_limits) and the log-sum-exp epilogue
# (hkm_attn_lse_out).
m4_define([hkm_attn_common], [hkm_attn_limits()hkm_attn_lse_out()])


# hkm_attn_limits()
# ----------------
# The causal limits and the alignment predicates, also attn_bwd.hip.m4's.
# It uses the skeleton's CAUSAL, BLOCK_M (queries per workgroup), BLOCK_N
# (keys per K/V block), and only tile-header primitives.
m4_define([hkm_attn_limits], [[
// ---- shared by the attention skeletons (templates/attn_common.m4) ----
static constexpr float LOG2E = 1.44269504088896340736f;
static constexpr float LN2 = 0.693147180559945309417f;

// Causal masks are bottom-right aligned: key j is visible to query i iff
// j <= i + (Sk - Sq).  The last key query qi sees (clamped to Sk - 1; below 0
// when it sees none); for the first query of a group, the last key all of
// the group sees.
HK_DEVICE int attn_last_key(int qi, int Sq, int Sk)
{
    const int diag = Sk - Sq;
    return CAUSAL ? (qi + diag < Sk - 1 ? qi + diag : Sk - 1) : Sk - 1;
}

// The end of the keys queries q0 .. q0 + BLOCK_M - 1 see (keys 0 .. end - 1):
// blocks past it are never loaded.
HK_DEVICE int attn_key_end(int q0, int Sq, int Sk)
{
    const int diag = Sk - Sq;
    return CAUSAL ? (q0 + BLOCK_M + diag < Sk ? q0 + BLOCK_M + diag : Sk) : Sk;
}

// K/V blocks of BLOCK_N keys up to key end kend (0 for a tile without keys:
// it stores O = 0 and LSE = -inf).
HK_DEVICE int attn_key_blocks(int kend) { return kend > 0 ? (kend + BLOCK_N - 1) / BLOCK_N : 0; }

// Whether a tensor at base with these batch, sequence and head strides (in
// elements; head_dim contiguous) can be read or written E elements (2E bytes)
// at a time: every stride a multiple of E and the base 2E-byte aligned.  E = 8
// gates the 16-byte loads, copies and stores.
template <int E>
HK_DEVICE bool attn_aligned(const void *base, long sb, long ss, long sh)
{
    return (sb % E == 0) && (ss % E == 0) && (sh % E == 0) && ((unsigned long)base % (2 * E) == 0);
}
]])


# hkm_attn_lse_out()
# -----------------
# The forward's epilogue of a row: normalisation and LSE (struct hk_args
# with a float *LSE).
m4_define([hkm_attn_lse_out], [[

// The epilogue of a row from its running max m (of the base-2 scaled
// scores) and its sum l of exp2(score - m): O is normalised by 1 / l, and
// LSE = ln(sum exp) = (m + log2 l) ln 2; a row without visible keys (l = 0)
// gives O = 0 and LSE = -inf.
HK_DEVICE float attn_inv_sum(float l) { return l > 0.0f ? 1.0f / l : 0.0f; }
HK_DEVICE float attn_lse(float m, float l) { return l > 0.0f ? (m + hk_log2f(l)) * LN2 : -__builtin_huge_valf(); }

// LSE[b][hq][qi] ([batch][heads_q][seqlen_q], fp32) when the caller asked for
// it (LSE not null) and `writes' (this lane holds the row's final sum).
HK_DEVICE void attn_store_lse(const hk_args &a, bool writes, int b, int hq, int Hq, int Sq, int qi, float m, float l)
{
    if (a.LSE && writes)
        hk_global_store_f32(a.LSE + ((long)b * Hq + hq) * Sq + qi, attn_lse(m, l));
}
]])


# hkm_attn_vt_pitch()
# -------------------
# attn_vt_pitch(n): the bytes of an AMD skeleton's V^T row of n keys (the
# forward and decode skeletons emit it before their LDS layout).
m4_define([hkm_attn_vt_pitch], [[// Bytes of a V^T row of n keys: padded by 8 where a lane reads 8 bytes (16
// lanes a pass over 32 banks: a pitch of 2 mod 32 words puts rows 0..15 on
// distinct bank pairs, and the 4-byte stores' rows 8 apart 16 banks apart),
// by 16 where it reads 16.
static constexpr int attn_vt_pitch(int n) { return n * 2 + (HK_MFMA_KPL == 4 ? 8 : 16); }
]])

# hkm_attn_cdna_operands()
# -----------------------
# The AMD skeletons' MFMA operand helpers (attn_fwd.hip.m4, attn_bwd.hip.m4,
# attn_decode.hip.m4): the position of a key (or query) in a transposed LDS
# tile that makes an accumulator usable as a B operand, 8 bf16 split into A/B
# operands, and the two products of attention from LDS.  It uses the
# skeleton's AB_PER_CHUNK (8 / HK_MFMA_KPL) and VT_PAIRS (whether two k
# steps of a transposed tile are read at once).
m4_define([hkm_attn_cdna_operands], [[
typedef unsigned short attn_bf16_kpl __attribute__((ext_vector_type(HK_MFMA_KPL)));
typedef unsigned attn_bf16_pairs __attribute__((ext_vector_type(HK_MFMA_KPL / 2)));

// Position of key `key` (0..BLOCK_N-1) of a block in the V^T rows, B's k order
// of P^T (see the top comment). A lane half's keys of k step st start at key
// st * HK_MFMA_K + 4 * half (its first HK_MFMA_KPL accumulator rows); with
// bits 2 and 3 swapped the 8 keys of step st (HK_MFMA_KPL 8), or of steps st
// and st + 1 (HK_MFMA_KPL 4, st even, where the skeleton's VT_PAIRS reads
// them together), lie together at attn_vt_pos of that key: one 16-byte read.
// Bit 0 is kept, so a key pair stays adjacent.
HK_DEVICE int attn_vt_pos(int key)
{
    if constexpr (HK_MFMA_KPL == 8 || VT_PAIRS)
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

// The AB_PER_CHUNK operands of the 8 bf16 at LDS byte off (16-byte aligned),
// in order, from one 16-byte read. Narrower reads (8 bytes, gfx90a / gfx942)
// go 16 lanes a pass, and rows 8 apart of a 16-byte-padded pitch meet in one
// bank: 2x; 8 lanes a pass of 16 bytes take 8 rows, each in its own banks.
HK_DEVICE void attn_lds_ops(hk_lds_t lds, int off, hk_mfma_ab_t (&out)[AB_PER_CHUNK])
{
    if constexpr (AB_PER_CHUNK == 1)
        out[0] = hk_lds_load_mfma_ab(lds, off);
    else
        attn_split_ab(__builtin_bit_cast(hk_bf16x8, hk_lds_load_b128(lds, off)), 0, out);
}

// S^T = K Q^T for NT 32-key subtiles (subtiles innermost: independent
// accumulators back to back), K rows from LDS byte 0 at pitch kp: a 16-wide d
// chunk's operands read as a group, then (WAIT) one LDS wait.
template <bool WAIT, int NT, int CH>
HK_DEVICE void attn_qk(hk_lds_t lds, int kp, const hk_mfma_ab_t (&qop)[CH][AB_PER_CHUNK], hk_mfma_acc_t (&s)[NT])
{
    const int lane = hk_lane_id();
    const int row = lane % 32, half = lane / 32;
#pragma unroll
    for (int tt = 0; tt < NT; ++tt)
        s[tt] = hk_mfma_acc_zero();
#pragma unroll
    for (int u = 0; u < CH; ++u) {
        hk_mfma_ab_t a[NT][AB_PER_CHUNK];
#pragma unroll
        for (int tt = 0; tt < NT; ++tt)
            attn_lds_ops(lds, (tt * 32 + row) * kp + (16 * u + 8 * half) * 2, a[tt]);
        if (WAIT)
            hk_waitcnt_lds();
#pragma unroll
        for (int e = 0; e < AB_PER_CHUNK; ++e)
#pragma unroll
            for (int tt = 0; tt < NT; ++tt)
                s[tt] = hk_mfma_32x32(a[tt][e], qop[u][e], s[tt]);
    }
}

// Byte offset of the lane's A operand of k step st and 32-row d tile dt in a
// transposed tile at LDS byte t (rows of pitch tp, columns in attn_vt_pos
// order, from column r0, a multiple of 32): row dt * 32 + lane % 32, its
// keys from attn_vt_pos(st * HK_MFMA_K + 4 * half).
HK_DEVICE int attn_vt_off(int t, int tp, int r0, int st, int dt)
{
    const int lane = hk_lane_id();
    return t + (dt * 32 + lane % 32) * tp + (r0 + attn_vt_pos(st * HK_MFMA_K + 4 * (lane / 32))) * 2;
}

// O^T += V^T P^T over 32-key subtile tt (d tiles innermost), V^T rows from LDS
// byte vt at pitch vp, keys in attn_vt_pos order: each k step's operands as a
// group, then (WAIT) one LDS wait. One read a step and operand: two steps in
// one 16-byte read would hold twice the operands (gfx942 d128 lost its third
// wave), and with attn_vt_pitch the narrow reads meet no bank conflict.
template <bool WAIT, int STEPS, int DT>
HK_DEVICE void attn_pv_sub(hk_lds_t lds, int vt, int vp, int tt, const hk_mfma_ab_t (&p)[STEPS], hk_mfma_acc_t (&o)[DT])
{
#pragma unroll
    for (int st = 0; st < STEPS; ++st) {
        hk_mfma_ab_t a[DT];
#pragma unroll
        for (int dt = 0; dt < DT; ++dt)
            a[dt] = hk_lds_load_mfma_ab(lds, attn_vt_off(vt, vp, tt * 32, st, dt));
        if (WAIT)
            hk_waitcnt_lds();
#pragma unroll
        for (int dt = 0; dt < DT; ++dt)
            o[dt] = hk_mfma_32x32(a[dt], p[st], o[dt]);
    }
}

]])

# hkm_fwd_winl / _winr / _sinks / _softcap / _varlen(IF, ELSE): IF when the
# kernel has the serving feature (a window edge other than -1, a cap other
# than 0); both forward skeletons bake their feature code with them.
m4_define([hkm_fwd_winl], [m4_ifelse(hkm_param([window_left]), [-1], [$2], [$1])])
m4_define([hkm_fwd_winr], [m4_ifelse(hkm_param([window_right]), [-1], [$2], [$1])])
m4_define([hkm_fwd_sinks], [hkm_if_true([sinks], [$1], [$2])])
m4_define([hkm_fwd_softcap], [m4_ifelse(hkm_param([softcap]), [0], [$2], [$1])])
m4_define([hkm_fwd_varlen], [hkm_if_true([varlen], [$1], [$2])])


# hkm_attn_window()
# ----------------
# The sliding window's edges of a query (attn_hi, attn_lo), bottom-right
# aligned; they use the skeleton's WIN_L and WIN_R (whether the kernel has
# each edge) and attn_last_key (hkm_attn_limits).
m4_define([hkm_attn_window], [[// ---- sliding window: the last and the first key query qi sees --------------
// With i' = qi + Sk - Sq (bottom-right aligned), key j is visible iff the
// causal mask lets it, j <= i' + right (WIN_R) and j >= i' - left (WIN_L);
// a run-time size of -1 leaves that edge open.
HK_DEVICE int attn_hi(int qi, int Sq, int Sk, int right)
{
    int hi = attn_last_key(qi, Sq, Sk);
    if constexpr (WIN_R) {
        const int r = qi + (Sk - Sq) + right;
        hi = right >= 0 && r < hi ? r : hi;
    } else {
        (void)right;
    }
    return hi;
}

HK_DEVICE int attn_lo(int qi, int Sq, int Sk, int left)
{
    const int l = qi + (Sk - Sq) - left;
    return WIN_L && left >= 0 && l > 0 ? l : 0;
}]])


# hkm_attn_sink()
# --------------
# The epilogue's attention sink (attn_sink): the head's logit joins a row's
# sum, no value.
m4_define([hkm_attn_sink], [[// ---- attention sinks: the head's logit joins the row's sum ------------------
// sb: the sink in base 2.  The row's max m becomes m' = max(m, sb), its sum
// l * 2^(m - m') + 2^(sb - m'); the returned factor 2^(m - m') rescales O
// (0 for a row without keys: O = 0, LSE = the sink).
HK_DEVICE float attn_sink(float sb, float &m, float &l)
{
    const float m_new = hk_maxf(m, sb);
    const float alpha = hk_exp2f(m - m_new);
    l = l * alpha + hk_exp2f(sb - m_new);
    m = m_new;
    return alpha;
}]])
