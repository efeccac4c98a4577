#!/bin/sh
# emu_attn_<target>: every attn_fwd kernel of emu/attn.yaml (head_dim 64 and
# 128, causal or not, and 96/192/256 at one long shape; run-time heads, GQA 12:4, MQA) on the emulator at the
# op's default shapes (12/12, 6:2, 7:1, 40:8, odd lengths, Sq != Sk, BSHD and
# BHSD layouts) against the fp64 reference of gen/op_attn.c.
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"
target=${1:?usage: attn.sh gfx90a|gfx942|gfx950}
EXPECTED_RUNS=104 # 12 kernels x 8 shapes + 8 kernels (head_dim 96/192/256, 96 whole blocks) x 1
run_hk "$T/out.txt" test --target "$target" "$EMU_DIR/attn.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test --target $target emu/attn.yaml"
! grep -q 'FAIL' "$T/out.txt" || fail "FAIL rows for $target"
pass=$(awk -v t="$target" '$2 == t && $0 ~ /  PASS( |$)/' "$T/out.txt" | wc -l)
[ "$pass" -eq "$EXPECTED_RUNS" ] || fail "$pass PASS rows for $target, expected $EXPECTED_RUNS"
grep -q "^$EXPECTED_RUNS runs, 0 failed, 0 kernels not built or not run; [0-9.]* s; seed " "$T/out.txt" ||
  fail "the summary line does not say '$EXPECTED_RUNS runs, 0 failed, 0 kernels not built or not run'"
echo "emu_attn_$target: $pass of $EXPECTED_RUNS runs PASS"
