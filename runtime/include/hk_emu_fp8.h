/* hk_emu_fp8.h: the emulator's model of the CDNA 8-bit float formats and of
 * the conversions the tile primitives make (hk_cdna.h, docs/FP8.md). C and
 * C++; included by hk_emu.h (the per-lane primitives) and by libhkrt's
 * emu_mfma.c (the fp8 MFMA), so both decode with the same text.
 *
 * Four formats, one byte each, sign in bit 7:
 *   E4M3_OCP   (gfx950; OCP OFP8 E4M3, LLVM Float8E4M3FN)   bias 7,  max 448   (0x7e),
 *              no infinities, NaN S.1111.111
 *   E5M2_OCP   (gfx950; OCP OFP8 E5M2, LLVM Float8E5M2)     bias 15, max 57344 (0x7b),
 *              +-inf S.11111.00, NaN S.11111.{01,10,11}
 *   E4M3_FNUZ  (gfx942; LLVM Float8E4M3FNUZ)                bias 8,  max 240   (0x7f)
 *   E5M2_FNUZ  (gfx942; LLVM Float8E5M2FNUZ)                bias 16, max 57344 (0x7f)
 *              FNUZ: no infinities, no negative zero, 0x80 the only NaN
 * Subnormals (exponent field 0) in all four.
 *
 * Narrowing (hkemu_fp8_encode) is what hk_f32_to_fp8 computes on the GPU:
 * round to nearest even (v_cvt_pk_fp8_f32 / v_cvt_pk_bf8_f32), finite values
 * and infinities saturated to +-max first (the primitive's v_med3_f32 clamp:
 * the instructions themselves overflow to NaN or inf), a NaN input giving the
 * format's NaN code below (a select after the conversion), zero keeping its
 * sign except in FNUZ (0x00). Widening is exact; a NaN code widens to the
 * quiet NaN 0x7fc00000 with the code's sign (FNUZ: positive). */
#ifndef HK_EMU_FP8_H
#define HK_EMU_FP8_H

#include <math.h>
#include <string.h>

enum { HKEMU_FP8_E4M3_OCP = 0, HKEMU_FP8_E5M2_OCP = 1, HKEMU_FP8_E4M3_FNUZ = 2, HKEMU_FP8_E5M2_FNUZ = 3 };

static inline int hkemu_fp8_fnuz(int fmt) { return fmt >= HKEMU_FP8_E4M3_FNUZ; }
static inline const char *hkemu_fp8_name(int fmt)
{
    static const char *const names[4] = {"E4M3_OCP", "E5M2_OCP", "E4M3_FNUZ", "E5M2_FNUZ"};
    return fmt >= 0 && fmt < 4 ? names[fmt] : "an unknown format";
}
static inline int hkemu_fp8_mbits(int fmt) { return fmt == HKEMU_FP8_E4M3_OCP || fmt == HKEMU_FP8_E4M3_FNUZ ? 3 : 2; }
static inline int hkemu_fp8_bias(int fmt)
{
    static const int bias[4] = {7, 15, 8, 16};
    return bias[fmt & 3];
}
/* largest finite code (positive) and the code a NaN input narrows to */
static inline unsigned hkemu_fp8_max_code(int fmt)
{
    static const unsigned char c[4] = {0x7e, 0x7b, 0x7f, 0x7f};
    return c[fmt & 3];
}
static inline unsigned hkemu_fp8_nan_code(int fmt) { return hkemu_fp8_fnuz(fmt) ? 0x80u : 0x7fu; }

static inline float hkemu_fp8_bits_f32(unsigned u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The value of one code: exact (every fp8 value is a normal fp32). */
static inline float hkemu_fp8_decode(unsigned code, int fmt)
{
    const int m = hkemu_fp8_mbits(fmt), bias = hkemu_fp8_bias(fmt);
    const unsigned sign = (code >> 7) & 1u, mag = code & 0x7fu;
    const unsigned e = mag >> m, f = mag & ((1u << m) - 1u);
    if (hkemu_fp8_fnuz(fmt) ? (code & 0xffu) == 0x80u
                            : (fmt == HKEMU_FP8_E4M3_OCP ? mag == 0x7fu : e == 0x1fu && f != 0))
        return hkemu_fp8_bits_f32(0x7fc00000u | (hkemu_fp8_fnuz(fmt) ? 0u : sign << 31));
    float v;
    if (fmt == HKEMU_FP8_E5M2_OCP && e == 0x1fu)
        v = INFINITY;
    else if (e)
        v = ldexpf(1.0f + (float)f / (float)(1u << m), (int)e - bias);
    else
        v = ldexpf((float)f, 1 - bias - m);
    return sign ? -v : v;
}

/* Round to nearest even with saturation (see the top of the file). */
static inline unsigned hkemu_fp8_encode(float x, int fmt)
{
    unsigned u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return hkemu_fp8_nan_code(fmt);
    const unsigned sign = (u >> 24) & 0x80u, maxc = hkemu_fp8_max_code(fmt);
    const int m = hkemu_fp8_mbits(fmt), bias = hkemu_fp8_bias(fmt), emin = 1 - bias;
    const float a = fabsf(x);
    unsigned mag;
    if (a >= hkemu_fp8_decode(maxc, fmt)) {
        mag = maxc; /* over the largest finite value, infinities included */
    } else if (a == 0.0f) {
        mag = 0;
    } else {
        int e2;
        frexpf(a, &e2); /* a = r * 2^e2, 0.5 <= r < 1: the unbiased exponent is e2 - 1 */
        const int e = e2 - 1 < emin ? emin : e2 - 1;
        /* a in units of the code's last place, rounded to an integer (rintf: the
           default rounding mode, nearest even); exact scaling by a power of two */
        unsigned q = (unsigned)rintf(ldexpf(a, m - e));
        if (e2 - 1 < emin) {
            mag = q; /* subnormal; q == 2^m is the smallest normal, encoded right */
        } else {
            int be = e + bias;
            if (q == 2u << m) { /* rounded up into the next binade */
                q = 1u << m;
                be++;
            }
            mag = ((unsigned)be << m) | (q - (1u << m));
        }
    }
    if (mag == 0 && hkemu_fp8_fnuz(fmt))
        return 0; /* no negative zero */
    return sign | mag;
}

#endif
