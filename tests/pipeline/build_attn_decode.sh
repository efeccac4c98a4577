#!/bin/sh
# build_attn_decode: every attn_decode kernel of emu/attn_decode.yaml (head_dim
# 64, 128 and 256, pages of 16, 32 and 64 keys, check_tables, windows, sinks and
# a soft cap, an fp8 cache, a baked 8:1 GQA)
# compiles for gfx942 and gfx950 with zero spills and at least one wave per
# SIMD (hkgen build fails on either), and inspect reports an MFMA hot loop
# for each.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the compilers dominate; ASan adds nothing here
run_hk "$T/out" build -q --target gfx942,gfx950 "$TESTS_DIR/emu/attn_decode.yaml" -o "$T/cat"
expect_rc 0 "hkgen build --target gfx942,gfx950 emu/attn_decode.yaml"
m=$T/cat/manifest.json
n=$(jsonq -c "$m" 'kernels[op=attn_decode]')
[ "$n" -eq 22 ] || fail "$n decode kernels, expected 11 per target"
[ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq "$n" ] || fail "a kernel spills"
run_hk "$T/inspect" inspect "$T/cat"
expect_rc 0 "hkgen inspect"
mfma=$(grep -c ' v_mfma_' "$T/inspect")
[ "$mfma" -eq "$n" ] || fail "$mfma of $n kernels show an MFMA hot loop"
echo "ok: $n decode kernels, no spills, an MFMA hot loop each"
