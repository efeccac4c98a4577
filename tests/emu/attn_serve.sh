#!/bin/sh
# emu_attn_serve_<target>: attn_fwd's serving features (emu/attn_serve.yaml:
# sliding windows baked and at run time, sinks, soft-capping, varlen with
# empty and length-1 sequences, a K/V stride past the 32-bit row-offset
# limit) on the emulator against the fp64 reference of gen/op_attn.c.
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"
target=${1:?usage: attn_serve.sh gfx90a|gfx942|gfx950}
EXPECTED_RUNS=81 # 9 kernels x 9 shapes (gen/op_attn.c attn_fwd_shapes)
run_hk "$T/out.txt" test --target "$target" "$EMU_DIR/attn_serve.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test --target $target emu/attn_serve.yaml"
! grep -q 'FAIL' "$T/out.txt" || fail "FAIL rows for $target"
pass=$(awk -v t="$target" '$2 == t && $0 ~ /  PASS( |$)/' "$T/out.txt" | wc -l)
[ "$pass" -eq "$EXPECTED_RUNS" ] || fail "$pass PASS rows for $target, expected $EXPECTED_RUNS"
grep -q "^$EXPECTED_RUNS runs, 0 failed, 0 kernels not built or not run; [0-9.]* s; seed " "$T/out.txt" ||
  fail "the summary line does not say '$EXPECTED_RUNS runs, 0 failed, 0 kernels not built or not run'"
# every feature ran: a window at run time, varlen, a baked window with sinks, a cap
for k in emu_attn_win_c1 emu_attn_win_c0 emu_attn_win128 emu_attn_swa_sink emu_attn_cap_sink emu_attn_cap \
  emu_attn_varlen emu_attn_varlen128 emu_attn_varlen_all; do
  n=$(awk -v k="$k" -v t="$target" '$1 == k && $2 == t && / PASS/' "$T/out.txt" | wc -l)
  [ "$n" -eq 9 ] || fail "$k: $n PASS rows on $target, expected 9"
done
echo "emu_attn_serve_$target: $pass of $EXPECTED_RUNS runs PASS"
