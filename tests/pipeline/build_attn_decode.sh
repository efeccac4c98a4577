#!/bin/sh
# build_attn_decode: every attn_decode kernel of emu/attn_decode.yaml (head_dim
# 64, 128 and 256, pages of 16, 32 and 64 keys, check_tables, windows, sinks and
# a soft cap, an fp8 cache, a baked 8:1 GQA)
# compiles for gfx942 and gfx950 with zero spills and at least one wave per
# SIMD (hkgen build fails on either), and inspect reports an MFMA hot loop
# for each.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the compilers dominate; ASan adds nothing here
expect_mfma_build gfx942,gfx950 "$TESTS_DIR/emu/attn_decode.yaml" "$T/cat" attn_decode 22 decode
