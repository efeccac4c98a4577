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
# every Q and K head of the token.  Thread t works on pair index
# i = t % (d/2) for heads t / (d/2), + 256 / (d/2), ... so each thread
# computes (or reads) one cos/sin and reuses it over its heads; when
# d/2 > 256 a thread also strides over i.

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


# hkm_rope_pair_index()
# --------------------
# The two elements (e0, e1) of pair i, by style.
m4_define([hkm_rope_pair_index], [hkm_if_param([style], [rotate_half],
[[            const int e0 = i, e1 = i + half;        // rotate_half
]],
[[            const int e0 = 2 * i, e1 = 2 * i + 1;   // interleaved
]])])

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

]])[// ---- kernel ------------------------------------------------------------------
]hkm_kernel_begin()[
    const int tid = hk_thread_id();
    const int half = head_dim / 2;
    if (half <= 0)
        return;

    // token of this workgroup and its tensors
    const long b = hk_block_id_x() / seq_len;
    const long s = hk_block_id_x() % seq_len;
    const int pos = hk_a.pos_offset + (int)s;
]hkm_if_true([inplace],
            [hkm_rope_tensor([q], [q], [q])hkm_rope_tensor([k], [k], [k])],
            [hkm_rope_tensor([q], [q_in], [q_out])hkm_rope_tensor([k], [k_in], [k_out])])[
    // thread -> (first head g, pair i0); `groups' threads share each pair i
    const int groups = half >= ROPE_THREADS ? 1 : ROPE_THREADS / half;
    const int g = half >= ROPE_THREADS ? 0 : tid / half;
    const int i0 = half >= ROPE_THREADS ? tid : tid % half;
    if (g >= groups)
        return;
    const int heads = heads_q + heads_k;

    for (int i = i0; i < half; i += ROPE_THREADS) {
        // cos and sin of pos * theta^(-2i/d)
        float cs, sn;
]hkm_if_true([table],
[[        cs = hk_global_load_f32(hk_a.cos_table + (long)pos * half + i);
        sn = hk_global_load_f32(hk_a.sin_table + (long)pos * half + i);
]],
[[        const float inv_freq = __builtin_exp2f(-(float)(2 * i) / (float)head_dim * __builtin_log2f(ROPE_THETA));
        rope_sincos((float)pos * inv_freq, &sn, &cs);
]])[
        // rotate pair i of every head this thread owns (Q heads, then K heads)
        for (int h = g; h < heads; h += groups) {
            const bool is_q = h < heads_q;
            const long hh = is_q ? h : h - heads_q;
            const hk_bf16 *src = is_q ? q_src + hh * q_src_h : k_src + hh * k_src_h;
            hk_bf16 *dst = is_q ? q_dst + hh * q_dst_h : k_dst + hh * k_dst_h;
]hkm_rope_pair_index()[            const float x0 = hk_bf16_to_f32(hk_global_load_bf16(src + e0, true));
            const float x1 = hk_bf16_to_f32(hk_global_load_bf16(src + e1, true));
            hk_global_store_bf16(dst + e0, hk_f32_to_bf16(x0 * cs - x1 * sn));
            hk_global_store_bf16(dst + e1, hk_f32_to_bf16(x1 * cs + x0 * sn));
        }
    }
}
]hkm_output_end()
