// emu_fp8.cc: the emulator's fp8 tile primitives (runtime/include/hk_emu.h,
// hk_emu_fp8.h) against the independent table of tests/emu/fp8_table.py.
//
//   emu_fp8_gfx942 TABLE   (built with -DHK_EMU_ARCH=3: E4M3_FNUZ, E5M2_FNUZ)
//   emu_fp8_gfx950 TABLE   (built with -DHK_EMU_ARCH=4: E4M3_OCP, E5M2_OCP)
//
// For each of the build's two formats: hk_fp8_to_f32 on all 256 codes (bit
// for bit; a NaN code must give a NaN), hk_fp8x4_to_f32x4 on the same codes
// packed four to a word in a shuffled order, hk_f32_to_fp8 on every fp32 value
// of the table (bit for bit), hk_f32x4_to_fp8x4 on them four at a time, and
// hk_fp8_max against the largest finite value of the table. The table must
// hold 256 codes and at least 10000 values per format.
// Exit status: 0 all pass, 1 a mismatch, 2 usage or an unreadable table.
#include "hk_emu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fp8_funcs {
    const char *name;
    float (*to_f32)(unsigned);
    hk_f32x4 (*x4_to_f32x4)(unsigned);
    unsigned (*from_f32)(float);
    unsigned (*f32x4_to_x4)(hk_f32x4);
    float max;
};

#define FP8_FUNCS_(F)                                                                  \
    {                                                                                  \
        #F, hk_fp8_to_f32_##F, hk_fp8x4_to_f32x4_##F, hk_f32_to_fp8_##F, hk_f32x4_to_fp8x4_##F, \
            hk_fp8_max(F)                                                              \
    }
#define FP8_FUNCS(F) FP8_FUNCS_(F) // F expanded first (HK_FP8_E4M3 -> E4M3_FNUZ)
#define FP8_STR_(F) #F
#define FP8_STR(F) FP8_STR_(F)

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    if (++failures <= 30) {
        va_list ap;
        va_start(ap, fmt);
        fputs("FAIL: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static unsigned bits(float f) { return hk_f32_as_u32(f); }

struct decode_row {
    unsigned code, want; // want: fp32 bits; nan: any NaN
    bool nan;
};
struct encode_row {
    unsigned in, want;
};

enum { MAX_ROWS = 1 << 16 };
struct rows {
    decode_row dec[256];
    size_t ndec;
    encode_row enc[MAX_ROWS];
    size_t nenc;
};

static void check_format(const fp8_funcs &f, const rows &t, unsigned long long seed)
{
    const decode_row *dec = t.dec;
    const encode_row *enc = t.enc;
    const int before = failures;
    if (t.ndec != 256)
        fail("%s: the table has %zu codes, expected 256", f.name, t.ndec);
    if (t.nenc < 10000)
        fail("%s: the table has %zu values to narrow, expected at least 10000", f.name, t.nenc);
    float top = 0;
    for (size_t i = 0; i < t.ndec; i++) {
        const decode_row &r = dec[i];
        const float got = f.to_f32(r.code | 0xab00u); // bits above the low byte are ignored
        if (r.nan ? got == got : bits(got) != r.want)
            fail("%s: hk_fp8_to_f32(0x%02x) = 0x%08x, the table says %s%08x", f.name, r.code, bits(got),
                 r.nan ? "NaN, not " : "", r.nan ? bits(got) : r.want);
        if (!r.nan && (r.want & 0x7f800000u) != 0x7f800000u && hk_u32_as_f32(r.want) > top)
            top = hk_u32_as_f32(r.want);
    }
    if (f.max != top)
        fail("%s: hk_fp8_max = %g, the table's largest finite value %g", f.name, (double)f.max, (double)top);
    // packed widening: the 256 codes in a shuffled order, four to a word
    unsigned order[256];
    for (size_t i = 0; i < t.ndec; i++)
        order[i] = (unsigned)i;
    unsigned long long s = seed;
    for (size_t i = t.ndec; i > 1; i--) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const size_t j = (size_t)(s >> 33) % i;
        const unsigned t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i + 4 <= t.ndec; i += 4) {
        unsigned w = 0;
        for (int j = 0; j < 4; j++)
            w |= dec[order[i + j]].code << (8 * j);
        const hk_f32x4 v = f.x4_to_f32x4(w);
        for (int j = 0; j < 4; j++) {
            const decode_row &r = dec[order[i + j]];
            if (r.nan ? v[j] == v[j] : bits(v[j]) != r.want)
                fail("%s: hk_fp8x4_to_f32x4(0x%08x) element %d = 0x%08x, the table says %s%08x", f.name, w, j,
                     bits(v[j]), r.nan ? "NaN, not " : "", r.want);
        }
    }
    for (size_t i = 0; i < t.nenc; i++) {
        const encode_row &r = enc[i];
        const unsigned got = f.from_f32(hk_u32_as_f32(r.in));
        if (got != r.want)
            fail("%s: hk_f32_to_fp8(0x%08x = %.9g) = 0x%02x, the table says 0x%02x", f.name, r.in,
                 (double)hk_u32_as_f32(r.in), got, r.want);
    }
    for (size_t i = 0; i + 4 <= t.nenc; i += 4) {
        hk_f32x4 v;
        unsigned want = 0;
        for (int j = 0; j < 4; j++) {
            v[j] = hk_u32_as_f32(enc[i + j].in);
            want |= enc[i + j].want << (8 * j);
        }
        const unsigned got = f.f32x4_to_x4(v);
        if (got != want)
            fail("%s: hk_f32x4_to_fp8x4(0x%08x 0x%08x 0x%08x 0x%08x) = 0x%08x, the table says 0x%08x", f.name,
                 enc[i].in, enc[i + 1].in, enc[i + 2].in, enc[i + 3].in, got, want);
    }
    printf("%-10s %zu codes widened (one and four at a time), %zu values narrowed (one and four at a time), "
           "%d mismatches\n",
           f.name, t.ndec, t.nenc, failures - before);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TABLE (the output of tests/emu/fp8_table.py)\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        fprintf(stderr, "emu_fp8: cannot open %s\n", argv[1]);
        return 2;
    }
    const fp8_funcs funcs[2] = {FP8_FUNCS(HK_FP8_E4M3), FP8_FUNCS(HK_FP8_E5M2)};
    static rows t[2];
    char line[256], kind[8], fmt[32], a[32], b[32];
    unsigned long long seed = 0;
    int lineno = 0;
    while (fgets(line, sizeof line, in)) {
        lineno++;
        if (sscanf(line, "# fp8_table.py seed %llu", &seed) == 1 || line[0] == '#')
            continue;
        if (sscanf(line, "%7s %31s %31s %31s", kind, fmt, a, b) != 4 || (strcmp(kind, "D") && strcmp(kind, "E"))) {
            fprintf(stderr, "emu_fp8: %s:%d: bad line '%s'\n", argv[1], lineno, line);
            return 2;
        }
        int k = !strcmp(fmt, FP8_STR(HK_FP8_E4M3)) ? 0 : !strcmp(fmt, FP8_STR(HK_FP8_E5M2)) ? 1 : -1;
        if (k < 0)
            continue; // a format of the other target
        if (kind[0] == 'D') {
            decode_row r = {(unsigned)strtoul(a, NULL, 16), 0, !strcmp(b, "nan")};
            if (!r.nan)
                r.want = (unsigned)strtoul(b, NULL, 16);
            if (t[k].ndec == 256) {
                fprintf(stderr, "emu_fp8: %s:%d: more than 256 codes for %s\n", argv[1], lineno, fmt);
                return 2;
            }
            t[k].dec[t[k].ndec++] = r;
        } else {
            encode_row r = {(unsigned)strtoul(a, NULL, 16), (unsigned)strtoul(b, NULL, 16)};
            if (t[k].nenc == MAX_ROWS) {
                fprintf(stderr, "emu_fp8: %s:%d: more than %d values for %s\n", argv[1], lineno, MAX_ROWS, fmt);
                return 2;
            }
            t[k].enc[t[k].nenc++] = r;
        }
    }
    fclose(in);
    printf("table seed %llu (python3 tests/emu/fp8_table.py %llu repeats it)\n", seed, seed);
    for (int k = 0; k < 2; k++)
        check_format(funcs[k], t[k], seed);
    if (failures) {
        printf("%d mismatch%s\n", failures, failures == 1 ? "" : "es");
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
