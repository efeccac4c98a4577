#!/usr/bin/env python3
"""fp8_table.py [SEED]: the independent reference for the emulator's fp8
conversions (CTest emu_fp8; runtime/include/hk_emu_fp8.h is what it checks).

Standard library only, and a different method from the emulator's: every
value is an exact fraction built from the format's definition (sign,
exponent field, mantissa field, bias, special codes), and narrowing is a
search for the nearest of the format's values, not bit arithmetic.

Formats (docs/FP8.md): OCP E4M3 (bias 7, no infinities, NaN S.1111.111),
OCP E5M2 (bias 15, IEEE-like: inf S.11111.00, NaN S.11111.{01,10,11}),
FNUZ E4M3 and E5M2 (bias 8 and 16, no infinities, no negative zero, 0x80 the
only NaN). Narrowing as the tile primitive hk_f32_to_fp8 defines it: round to
nearest, ties to the even code; magnitudes at or over the largest finite value
(infinities included) saturate to it; NaN gives 0x7f (OCP) or 0x80 (FNUZ); a
zero result is +0 in FNUZ.

Prints one line per check:
  D FORMAT CODE F32BITS|nan     the value of code CODE (hex) as fp32 bits
  E FORMAT F32BITS CODE         the code the fp32 value F32BITS narrows to
"""
import bisect
import random
import struct
import sys
from fractions import Fraction

FORMATS = {
    # name: (exponent bits, mantissa bits, bias, kind)
    "E4M3_OCP": (4, 3, 7, "ocp_e4m3"),
    "E5M2_OCP": (5, 2, 15, "ieee"),
    "E4M3_FNUZ": (4, 3, 8, "fnuz"),
    "E5M2_FNUZ": (5, 2, 16, "fnuz"),
}


def value(fmt, code):
    """Fraction, or 'nan', 'inf', '-inf'; zero as (sign, Fraction 0)."""
    ebits, mbits, bias, kind = FORMATS[fmt]
    sign = code >> 7
    e = (code >> mbits) & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    if kind == "fnuz" and code == 0x80:
        return "nan"
    if kind == "ocp_e4m3" and e == (1 << ebits) - 1 and m == (1 << mbits) - 1:
        return "nan"
    if kind == "ieee" and e == (1 << ebits) - 1:
        if m:
            return "nan"
        return "-inf" if sign else "inf"
    if e == 0:
        mag = Fraction(m, 1 << mbits) * Fraction(2) ** (1 - bias)
    else:
        mag = (1 + Fraction(m, 1 << mbits)) * Fraction(2) ** (e - bias)
    return (sign, mag)


def f32_bits_of_fraction(sign, mag):
    x = float(mag)  # exact: every fp8 value has few significant bits
    assert Fraction(x) == mag
    return struct.unpack("<I", struct.pack("<f", -x if sign else x))[0]


def fraction_of_f32(bits):
    """(sign, Fraction) for finite bits, else 'nan' / 'inf'."""
    sign, e, m = bits >> 31, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    if e == 0xFF:
        return "nan" if m else "inf"
    if e == 0:
        return sign, Fraction(m, 1 << 23) * Fraction(2) ** -126
    return sign, (1 + Fraction(m, 1 << 23)) * Fraction(2) ** (e - 127)


def finite_magnitudes(fmt):
    """[(Fraction, code)] for the positive codes that are finite numbers."""
    out = []
    for code in range(0x80):
        v = value(fmt, code)
        if isinstance(v, tuple):
            out.append((v[1], code))
    return out


def narrow(fmt, bits, table):
    kind = FORMATS[fmt][3]
    nan = 0x80 if kind == "fnuz" else 0x7F
    v = fraction_of_f32(bits)
    if v == "nan":
        return nan
    sign = bits >> 31
    top, top_code = table[-1]
    if v == "inf":
        code = top_code
    else:
        mag = v[1]
        if mag >= top:
            code = top_code
        else:  # the nearest of the two values around mag; a tie goes to the even code
            i = bisect.bisect_left(table, (mag, -1))
            if table[i][0] == mag:
                code = table[i][1]
            else:
                (lo, lc), (hi, hc) = table[i - 1], table[i]
                d_lo, d_hi = mag - lo, hi - mag
                code = lc if d_lo < d_hi or (d_lo == d_hi and lc % 2 == 0) else hc
    if code == 0 and kind == "fnuz":
        return 0
    return (sign << 7) | code


def f32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def inputs(fmt, table, rng):
    """fp32 bit patterns worth narrowing: every value, the midpoints and their
    fp32 neighbours, the edges of the range, the specials, and random ones."""
    mags = [v for v, _ in table]
    pos = set()
    for v in mags:
        b = f32_bits_of_fraction(0, v)
        pos.update({b, b + 1, b - 1 if b else 0})
    for lo, hi in zip(mags, mags[1:]):
        mid = (lo + hi) / 2
        b = f32_bits_of_fraction(0, mid)  # exact: one bit more than the format
        pos.update({b - 1, b, b + 1})
    top = mags[-1]
    step = mags[-1] - mags[-2]
    for extra in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1), Fraction(2), Fraction(100)):
        b = f32_bits_of_fraction(0, top + extra * step)
        pos.update({b - 1, b, b + 1})
    smallest = mags[1]
    for frac in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(3, 2), Fraction(5, 2)):
        b = f32_bits_of_fraction(0, smallest * frac)
        pos.update({b - 1, b, b + 1})
    pos.update({0, 1, 0x7FFFFF, 0x800000, f32(1e-30), f32(1.0), 0x7F7FFFFF, 0x7F800000})
    for _ in range(3000):
        pos.add(rng.getrandbits(31))  # anywhere in the fp32 range
    for _ in range(3000):  # concentrated on the format's range
        pos.add(f32(rng.random() * 2 * float(top)) if rng.random() < 0.5
                else rng.randrange(f32(float(smallest) / 8), f32(float(top) * 2)))
    out = []
    for b in sorted(pos):
        if b > 0x7F800000:
            continue
        out += [b, b | 0x80000000]
    out += [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FA00000]
    return out


def self_check():
    """Cross-checks of the definitions by other routes: OCP E5M2 is the top byte of an
    IEEE binary16 (decoded here by the struct module's half-precision code), and each
    FNUZ format is its OCP sibling's bit pattern at half the value (bias one higher),
    apart from the special codes."""
    for code in range(256):
        half = struct.unpack("<e", bytes([0, code]))[0]
        v = value("E5M2_OCP", code)
        if half != half:
            ok = v == "nan"
        elif half in (float("inf"), float("-inf")):
            ok = v == ("inf" if half > 0 else "-inf")
        else:
            ok = isinstance(v, tuple) and (-1) ** v[0] * v[1] == Fraction(half) and v[0] == (code >> 7)
        if not ok:
            sys.exit("fp8_table.py: E5M2_OCP code %02x is %r, binary16 says %r" % (code, v, half))
    for ocp, fnuz in (("E4M3_OCP", "E4M3_FNUZ"), ("E5M2_OCP", "E5M2_FNUZ")):
        for code in range(1, 128):
            a, b = value(ocp, code), value(fnuz, code)
            if isinstance(a, tuple) and (not isinstance(b, tuple) or b[1] * 2 != a[1]):
                sys.exit("fp8_table.py: %s %02x is %r but %s %02x is %r" % (ocp, code, a, fnuz, code, b))


def main():
    self_check()
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else random.SystemRandom().getrandbits(32)
    rng = random.Random(seed)
    w = sys.stdout.write
    w("# fp8_table.py seed %d\n" % seed)
    for fmt in FORMATS:
        table = finite_magnitudes(fmt)
        for code in range(256):
            v = value(fmt, code)
            if v == "nan":
                w("D %s %02x nan\n" % (fmt, code))
            elif v in ("inf", "-inf"):
                w("D %s %02x %08x\n" % (fmt, code, 0x7F800000 | (0x80000000 if v == "-inf" else 0)))
            else:
                w("D %s %02x %08x\n" % (fmt, code, f32_bits_of_fraction(*v)))
        for b in inputs(fmt, table, rng):
            w("E %s %08x %02x\n" % (fmt, b, narrow(fmt, b, table)))


if __name__ == "__main__":
    main()
