#!/bin/sh
# build_attn: every attention kernel of emu/attn.yaml (head_dim 64-256, causal or
# not, run-time / GQA / MQA heads, a baked odd shape) compiles for gfx90a, gfx942
# and gfx950 with zero spills and at least one wave per SIMD (hkgen build fails
# on either), and inspect reports an MFMA hot loop for each; so does every
# kernel of emu/attn_serve.yaml (the serving features) for gfx942 and gfx950.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the compilers dominate; ASan adds nothing here
expect_mfma_build gfx90a,gfx942,gfx950 "$TESTS_DIR/emu/attn.yaml" "$T/cat" attn_fwd 60 attention

# the serving features (emu/attn_serve.yaml: windows, sinks, soft-capping,
# varlen) on gfx942 and gfx950: no spills, an MFMA hot loop each
expect_mfma_build gfx942,gfx950 "$TESTS_DIR/emu/attn_serve.yaml" "$T/serve" attn_fwd 18 "serving attention"
