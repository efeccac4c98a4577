#!/bin/sh
# emu_attn_bwd_<target>: every attn_bwd kernel of emu/attn_bwd.yaml (head_dim
# 64 and 128, causal or not; run-time heads, GQA 12:4, MQA, one baked shape;
# 96 and 192 at one baked shape)
# on the emulator at the op's default shapes (12/12, 6:2, 7:1, 40:8, 12:4,
# odd lengths, Sq > Sk and Sq < Sk, several blocks with partial last ones,
# BSHD and BHSD layouts) against the fp64 reference of gen/op_attn_bwd.c:
# the worst relative L2 error of dQ, dK and dV, dQ exactly zero on rows
# with no visible key, and (12:12 and 40:8) a second launch on re-poisoned
# outputs giving the same bits.
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"
target=${1:?usage: attn_bwd.sh gfx90a|gfx942|gfx950}
EXPECTED_RUNS=61 # 8 kernels x 7 shapes + 1 baked + 4 (head_dim 96, 192)
run_hk "$T/out.txt" test -j 2 --target "$target" "$EMU_DIR/attn_bwd.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test --target $target emu/attn_bwd.yaml"
! grep -q 'FAIL' "$T/out.txt" || fail "FAIL rows for $target"
pass=$(awk -v t="$target" '$2 == t && $0 ~ /  PASS( |$)/' "$T/out.txt" | wc -l)
[ "$pass" -eq "$EXPECTED_RUNS" ] || fail "$pass PASS rows for $target, expected $EXPECTED_RUNS"
grep -q "^$EXPECTED_RUNS runs, 0 failed, 0 kernels not built; seed " "$T/out.txt" ||
  fail "the summary line does not say '$EXPECTED_RUNS runs, 0 failed, 0 kernels not built'"
# the causal cases with seqlen_q > seqlen_k have rows with no visible key
grep -q 'rows with no visible key: dQ zero\|keyless rows. dQ zero' "$T/out.txt" ||
  fail "no run checked the dQ of rows with no visible key"
echo "emu_attn_bwd_$target: $pass of $EXPECTED_RUNS runs PASS"
