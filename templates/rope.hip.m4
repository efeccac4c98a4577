m4_divert(-1)                                                   -*- C -*-
# rope.hip.m4 - rotary position embedding on bf16 Q and K, fp32 math.
#
# Tensors are [batch][seq][heads][head_dim] with element strides for batch,
# seq and head (dim contiguous).  Token (b, s) has position pos_offset + s.
#   style rotate_half:  pairs (i, i + d/2)
#   style interleaved:  pairs (2i, 2i + 1)
#   out0 = x0 * cos - x1 * sin,   out1 = x1 * cos + x0 * sin,   i < d/2
# table true:  cos/sin read from fp32 tables [position][d/2];
# table false: angle = float(pos) * exp2f(-(2i/d) * log2f(theta)) in fp32,
#              sin/cos of that float with a double-precision range reduction.
#
# Parameters (hkm_p_*): batch, seq_len, heads_q, heads_k, head_dim (baked or
# `any'), style, inplace, table, theta (baked).  Kernel arguments, in order:
# q, k (inplace) or q_in, k_in, q_out, k_out; cos_table, sin_table (table);
# <tensor>_stride_b/_s/_h per tensor (long); pos_offset; the run-time dims.
#
# One workgroup per token (grid x = batch * seq_len), 256 threads covering
# every Q and K head of the token.  First the token's cos/sin row (d/2 pairs)
# is read from the tables or computed, once per pair, into LDS.
#
# Vector path (chosen at run time, the same for the whole grid): when every
# base pointer is 16-byte aligned, every stride a multiple of 8 elements and
# head_dim a multiple of 16 (rotate_half) or 8 (interleaved), a thread owns
# one `unit' of a head: rotate_half, 8 consecutive pairs i (one 16-byte load
# from each half); interleaved, 8 consecutive elements (4 pairs).  Units are
# numbered head-major over Q then K heads, so a warp reads whole 16-byte
# chunks of consecutive heads.  Each thread loads its first two units before
# the barrier that publishes the cos/sin row, so the loads of every workgroup
# are in flight while the row is being made; 16-byte stores, fp32 math.
# Scalar path otherwise: thread t works on pair index i = t % (d/2) for heads
# t / (d/2), + 256 / (d/2), ...; when d/2 > 256 a thread also strides over i.

hkm_check_one_of([style], [rotate_half], [interleaved])
hkm_if_true([inplace], [], [])
hkm_if_true([table], [], [])
hkm_check_even_if_baked([head_dim])
hkm_param([batch])hkm_param([seq_len])hkm_param([heads_q])hkm_param([heads_k])
hkm_if_true([table], [],
           [hkm_if_baked([theta], [], [hkm_fatal([rope: theta must be baked])])])
m4_ifelse(hkm_block_size, [256], [],
      [hkm_fatal([rope needs hkm_block_size 256, got ]hkm_block_size)])


# hkm_rope_tensor(NAME, SRC, DST)
# ------------------------------
# Base pointers and head stride of tensor NAME for this token: reads from
# kernel argument SRC, writes to DST (the same tensor when in place).
m4_define([hkm_rope_tensor],
[[    const hk_bf16 *$1_src = hk_a.$2 + b * hk_a.$2_stride_b + s * hk_a.$2_stride_s;
    hk_bf16 *$1_dst = hk_a.$3 + b * hk_a.$3_stride_b + s * hk_a.$3_stride_s;
    const long $1_src_h = hk_a.$2_stride_h, $1_dst_h = hk_a.$3_stride_h;
]])


hkm_output_begin()m4_dnl
hkm_file_head()[
// ---- configuration -----------------------------------------------------
static constexpr int ROPE_THREADS = ]hkm_block_size[;
]hkm_if_true([table], [], [[static constexpr float ROPE_THETA = (float)(]hkm_param([theta])[);
]])[
]hkm_if_true([table], [],
[[// sin and cos of a float angle: x = q * pi/2 + r with |r| <= pi/4, the
// reduction done in double so that large angles (long sequences) stay
// accurate; minimax polynomials for sin and cos on [-pi/4, pi/4].
HK_DEVICE void rope_sincos(float x, float *sin_x, float *cos_x)
{
    const double q = __builtin_rint((double)x * 0.63661977236758134308);
    const float r = (float)__builtin_fma(-q, 1.57079632679489661923, (double)x);
    const float r2 = r * r;
    const float sp = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
    const float cp = 1.0f - 0.5f * r2
                     + r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    switch ((long long)q & 3) {
    case 0: *sin_x = sp;  *cos_x = cp;  break;
    case 1: *sin_x = cp;  *cos_x = -sp; break;
    case 2: *sin_x = -sp; *cos_x = -cp; break;
    default: *sin_x = -cp; *cos_x = sp; break;
    }
}

]])[// ---- vector path helpers ----------------------------------------------------
// LDS: cos of pair i at 4 i, sin at ROPE_SIN_OFF + 4 i (d/2 <= 256 pairs)
static constexpr int ROPE_MAX_HALF = 256;
static constexpr int ROPE_SIN_OFF = 4 * ROPE_MAX_HALF;
// units per thread loaded before the barrier (the plan's: 1 on NVIDIA, where 2 made nvcc spill in the
// interleaved table kernels)
static constexpr int ROPE_BATCH = ]hkm_tune([batch_units])[;

// 8 floats of the cos (or sin) row from LDS at byte offset off (16-byte aligned)
HK_DEVICE void rope_lds_f32x8(hk_lds_t lds, int off, float *v)
{
    const hk_u32x4 a = hk_lds_load_b128(lds, off), b = hk_lds_load_b128(lds, off + 16);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[j] = hk_u32_as_f32(a[j]);
        v[4 + j] = hk_u32_as_f32(b[j]);
    }
}

HK_DEVICE float rope_lo(hk_bf16x8 x, int j) { return hk_bf16_to_f32(x[j]); }

// One unit: x0, x1 loaded (x1 unused for interleaved), rotated, stored at dst.
HK_DEVICE void rope_vec_unit(hk_lds_t lds, hk_bf16 *dst, int c, int half, hk_bf16x8 x0, hk_bf16x8 x1)
{
]hkm_if_param([style], [rotate_half],
[[    // pairs i = 8c .. 8c+7: x0 = elements i, x1 = elements i + d/2
    float cs[8], sn[8], a[8], b[8];
    rope_lds_f32x8(lds, 32 * c, cs);
    rope_lds_f32x8(lds, ROPE_SIN_OFF + 32 * c, sn);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float u = rope_lo(x0, j), v = rope_lo(x1, j);
        a[j] = u * cs[j] - v * sn[j];
        b[j] = v * cs[j] + u * sn[j];
    }
    hk_u32x4 wa, wb;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        wa[j] = hk_f32x2_to_bf16x2(a[2 * j], a[2 * j + 1]);
        wb[j] = hk_f32x2_to_bf16x2(b[2 * j], b[2 * j + 1]);
    }
    hk_global_store_b128(dst + 8 * c, wa);
    hk_global_store_b128(dst + half + 8 * c, wb);
]],
[[    // elements 8c .. 8c+7 = pairs i = 4c .. 4c+3
    (void)x1;
    (void)half;
    const hk_u32x4 cw = hk_lds_load_b128(lds, 16 * c), sw = hk_lds_load_b128(lds, ROPE_SIN_OFF + 16 * c);
    hk_u32x4 w;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float cs = hk_u32_as_f32(cw[j]), sn = hk_u32_as_f32(sw[j]);
        const float u = rope_lo(x0, 2 * j), v = rope_lo(x0, 2 * j + 1);
        w[j] = hk_f32x2_to_bf16x2(u * cs - v * sn, v * cs + u * sn);
    }
    hk_global_store_b128(dst + 8 * c, w);
]])[}

// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    const int tid = hk_thread_id();
    const int half = head_dim / 2;
    if (half <= 0 || half > ROPE_MAX_HALF) // head_dim is at most 512
        return;

    // token of this workgroup and its tensors
    const long b = hk_block_id_x() / seq_len;
    const long s = hk_block_id_x() % seq_len;
    const int pos = hk_a.pos_offset + (int)s;
]hkm_if_true([inplace],
            [hkm_rope_tensor([q], [q], [q])hkm_rope_tensor([k], [k], [k])],
            [hkm_rope_tensor([q], [q_in], [q_out])hkm_rope_tensor([k], [k_in], [k_out])])[
    const int heads = heads_q + heads_k;
    HK_LDS_DECLARE(8 * ROPE_MAX_HALF);

    // ---- vector path: 16-byte loads and stores of whole units
]hkm_if_param([style], [rotate_half],
[[    const int chunks = half / 8;                 // units per head: 8 pairs (i, i + d/2) each
    const bool vec_dim = half % 8 == 0;
]],
[[    const int chunks = head_dim / 8;             // units per head: 8 elements = 4 pairs each
    const bool vec_dim = head_dim % 8 == 0;
]])[    const bool vec = vec_dim
        && (hk_a.]hkm_if_true([inplace], [[q]], [[q_in]])[_stride_b | hk_a.]hkm_if_true([inplace], [[q]], [[q_in]])[_stride_s | q_src_h) % 8 == 0
        && (hk_a.]hkm_if_true([inplace], [[k]], [[k_in]])[_stride_b | hk_a.]hkm_if_true([inplace], [[k]], [[k_in]])[_stride_s | k_src_h) % 8 == 0
]hkm_if_true([inplace], [], [[        && (hk_a.q_out_stride_b | hk_a.q_out_stride_s | q_dst_h) % 8 == 0
        && (hk_a.k_out_stride_b | hk_a.k_out_stride_s | k_dst_h) % 8 == 0
        && (((unsigned long)hk_a.q_out | (unsigned long)hk_a.k_out) % 16 == 0)
]])[        && (((unsigned long)hk_a.]hkm_if_true([inplace], [[q | (unsigned long)hk_a.k]], [[q_in | (unsigned long)hk_a.k_in]])[) % 16 == 0);
    const int units = vec ? heads * chunks : 0;

    // first ROPE_BATCH units of this thread: loads issued before the barrier
    hk_bf16x8 x0[ROPE_BATCH], x1[ROPE_BATCH];
#pragma unroll
    for (int r = 0; r < ROPE_BATCH; ++r) {
        const int u = tid + r * ROPE_THREADS;
        const bool ok = u < units;
        const int h = ok ? u / chunks : 0, c = ok ? u % chunks : 0;
        const bool is_q = h < heads_q;
        const hk_bf16 *src = (is_q ? q_src + h * q_src_h : k_src + (h - heads_q) * k_src_h) + 8 * c;
        x0[r] = ok ? hk_global_load_bf16x8(src, 8, true) : hk_bf16x8{};
]hkm_if_param([style], [rotate_half],
[[        x1[r] = ok ? hk_global_load_bf16x8(src + half, 8, true) : hk_bf16x8{};
]], [[        x1[r] = x0[r];
]])[    }

    // ---- the token's cos/sin row into LDS, one pair per thread
    for (int i = tid; i < half; i += ROPE_THREADS) {
        float cs, sn;
]hkm_if_true([table],
[[        cs = hk_global_load_f32(hk_a.cos_table + (long)pos * half + i);
        sn = hk_global_load_f32(hk_a.sin_table + (long)pos * half + i);
]],
[[        // cos and sin of pos * theta^(-2i/d)
        const float inv_freq = __builtin_exp2f(-(float)(2 * i) / (float)head_dim * __builtin_log2f(ROPE_THETA));
        rope_sincos((float)pos * inv_freq, &sn, &cs);
]])[        hk_lds_store_b32(hk_lds, 4 * i, hk_f32_as_u32(cs));
        hk_lds_store_b32(hk_lds, ROPE_SIN_OFF + 4 * i, hk_f32_as_u32(sn));
    }
    hk_barrier();

    if (vec) {
#pragma unroll
        for (int r = 0; r < ROPE_BATCH; ++r) {
            const int u = tid + r * ROPE_THREADS;
            if (u < units) {
                const int h = u / chunks, c = u % chunks;
                const bool is_q = h < heads_q;
                hk_bf16 *dst = is_q ? q_dst + h * q_dst_h : k_dst + (h - heads_q) * k_dst_h;
                rope_vec_unit(hk_lds, dst, c, half, x0[r], x1[r]);
            }
        }
        // the rest (many heads): ROPE_BATCH units per round, loads first
        for (int u0 = tid + ROPE_BATCH * ROPE_THREADS; u0 < units; u0 += ROPE_BATCH * ROPE_THREADS) {
#pragma unroll
            for (int r = 0; r < ROPE_BATCH; ++r) {
                const int u = u0 + r * ROPE_THREADS;
                const bool ok = u < units;
                const int h = ok ? u / chunks : 0, c = ok ? u % chunks : 0;
                const bool is_q = h < heads_q;
                const hk_bf16 *src = (is_q ? q_src + h * q_src_h : k_src + (h - heads_q) * k_src_h) + 8 * c;
                x0[r] = ok ? hk_global_load_bf16x8(src, 8, true) : hk_bf16x8{};
]hkm_if_param([style], [rotate_half],
[[                x1[r] = ok ? hk_global_load_bf16x8(src + half, 8, true) : hk_bf16x8{};
]], [[                x1[r] = x0[r];
]])[            }
#pragma unroll
            for (int r = 0; r < ROPE_BATCH; ++r) {
                const int u = u0 + r * ROPE_THREADS;
                if (u < units) {
                    const int h = u / chunks, c = u % chunks;
                    const bool is_q = h < heads_q;
                    hk_bf16 *dst = is_q ? q_dst + h * q_dst_h : k_dst + (h - heads_q) * k_dst_h;
                    rope_vec_unit(hk_lds, dst, c, half, x0[r], x1[r]);
                }
            }
        }
        return;
    }

    // ---- scalar path: thread -> (first head g, pair i0); `groups' threads share each pair i
    const int groups = half >= ROPE_THREADS ? 1 : ROPE_THREADS / half;
    const int g = half >= ROPE_THREADS ? 0 : tid / half;
    const int i0 = half >= ROPE_THREADS ? tid : tid % half;
    if (g >= groups)
        return;

    for (int i = i0; i < half; i += ROPE_THREADS) {
        const float cs = hk_u32_as_f32(hk_lds_load_b32(hk_lds, 4 * i));
        const float sn = hk_u32_as_f32(hk_lds_load_b32(hk_lds, ROPE_SIN_OFF + 4 * i));
        // rotate pair i of every head this thread owns (Q heads, then K heads)
        for (int h = g; h < heads; h += groups) {
            const bool is_q = h < heads_q;
            const long hh = is_q ? h : h - heads_q;
            const hk_bf16 *src = is_q ? q_src + hh * q_src_h : k_src + hh * k_src_h;
            hk_bf16 *dst = is_q ? q_dst + hh * q_dst_h : k_dst + hh * k_dst_h;
]hkm_if_param([style], [rotate_half],
[[            const int e0 = i, e1 = i + half;        // rotate_half
]],
[[            const int e0 = 2 * i, e1 = 2 * i + 1;   // interleaved
]])[            const float x0s = hk_bf16_to_f32(hk_global_load_bf16(src + e0, true));
            const float x1s = hk_bf16_to_f32(hk_global_load_bf16(src + e1, true));
            hk_global_store_bf16(dst + e0, hk_f32_to_bf16(x0s * cs - x1s * sn));
            hk_global_store_bf16(dst + e1, hk_f32_to_bf16(x1s * cs + x0s * sn));
        }
    }
}
]hkm_output_end()
