#!/bin/sh
# build_attn: every attention kernel of emu/attn.yaml (head_dim 64-256, causal or
# not, run-time / GQA / MQA heads, a baked odd shape) compiles for gfx90a, gfx942
# and gfx950 with zero spills and at least one wave per SIMD (hkgen build fails
# on either), and inspect reports an MFMA hot loop for each; so does every
# kernel of emu/attn_serve.yaml (the serving features) for gfx942 and gfx950.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the compilers dominate; ASan adds nothing here
run_hk "$T/out" build -q --target gfx90a,gfx942,gfx950 "$TESTS_DIR/emu/attn.yaml" -o "$T/cat"
expect_rc 0 "hkgen build --target gfx90a,gfx942,gfx950 emu/attn.yaml"
m=$T/cat/manifest.json
n=$(jsonq -c "$m" 'kernels[op=attn_fwd]')
[ "$n" -eq 60 ] || fail "$n attention kernels, expected 20 per target"
[ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq "$n" ] || fail "a kernel spills"
run_hk "$T/inspect" inspect "$T/cat"
expect_rc 0 "hkgen inspect"
mfma=$(grep -c ' v_mfma_' "$T/inspect")
[ "$mfma" -eq "$n" ] || fail "$mfma of $n kernels show an MFMA hot loop"
echo "ok: $n attention kernels, no spills, an MFMA hot loop each"

# the serving features (emu/attn_serve.yaml: windows, sinks, soft-capping,
# varlen) on gfx942 and gfx950: no spills, an MFMA hot loop each
run_hk "$T/out" build -q --target gfx942,gfx950 "$TESTS_DIR/emu/attn_serve.yaml" -o "$T/serve"
expect_rc 0 "hkgen build --target gfx942,gfx950 emu/attn_serve.yaml"
m=$T/serve/manifest.json
n=$(jsonq -c "$m" 'kernels[op=attn_fwd]')
[ "$n" -eq 18 ] || fail "$n serving attention kernels, expected 9 per target"
[ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq "$n" ] || fail "a serving kernel spills"
run_hk "$T/inspect" inspect "$T/serve"
expect_rc 0 "hkgen inspect"
mfma=$(grep -c ' v_mfma_' "$T/inspect")
[ "$mfma" -eq "$n" ] || fail "$mfma of $n serving kernels show an MFMA hot loop"
echo "ok: $n serving attention kernels, no spills, an MFMA hot loop each"
