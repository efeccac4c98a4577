#!/bin/sh
# build_attn_bwd: every attention-backward kernel of emu/attn_bwd.yaml compiles
# for gfx942 and gfx950 with zero spills and at least one wave per SIMD
# (hkgen build fails on either), and inspect reports an MFMA hot loop for each.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the compilers dominate; ASan adds nothing here
run_hk "$T/out" build -q -j 2 --target gfx942,gfx950 "$TESTS_DIR/emu/attn_bwd.yaml" -o "$T/cat"
expect_rc 0 "hkgen build --target gfx942,gfx950 emu/attn_bwd.yaml"
m=$T/cat/manifest.json
n=$(jsonq -c "$m" 'kernels[op=attn_bwd]')
[ "$n" -eq 26 ] || fail "$n attention-backward kernels, expected 13 per target"
[ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq "$n" ] || fail "a kernel spills"
[ "$(jsonq -c "$m" 'kernels[op=attn_bwd][resources.scratch=0]')" -eq "$n" ] || fail "a kernel uses scratch memory"
run_hk "$T/inspect" inspect "$T/cat"
expect_rc 0 "hkgen inspect"
cat "$T/inspect"
mfma=$(grep -c ' v_mfma_' "$T/inspect")
[ "$mfma" -eq "$n" ] || fail "$mfma of $n kernels show an MFMA hot loop"
echo "ok: $n attention-backward kernels, no spills, an MFMA hot loop each"
