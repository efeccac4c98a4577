#!/bin/sh
# build_attn_bwd: every attention-backward kernel of emu/attn_bwd.yaml compiles
# for gfx942 and gfx950 with zero spills and at least one wave per SIMD
# (hkgen build fails on either), and inspect reports an MFMA hot loop for each.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the compilers dominate; ASan adds nothing here
expect_mfma_build gfx942,gfx950 "$TESTS_DIR/emu/attn_bwd.yaml" "$T/cat" attn_bwd 26 attention-backward
cat "$T/inspect"
[ "$(jsonq -c "$m" 'kernels[op=attn_bwd][resources.scratch=0]')" -eq "$n" ] || fail "a kernel uses scratch memory"
