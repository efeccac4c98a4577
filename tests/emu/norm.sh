# norm.sh TARGET: `hkgen test --target TARGET emu/norm.yaml` (CTest
# emu_norm_<target>): every RMSNorm / LayerNorm kernel of norm.yaml, forward,
# backward and the backward's reduction, run on the emulator against fp64.
# Asserts exit status 0, exactly EXPECTED_RUNS result rows, all PASS, none
# FAIL, and the summary line agreeing. hkgen is build/hkgen-asan (lib/lib.sh).
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"

target=${1:?usage: norm.sh gfx942|gfx950}
# tests/emu/norm.yaml: 16 x 11 + 8 x 11 + 2 x 11 + 8 x 8 (distinct rows) = 350,
# less the RMSNorm backward kernels' hidden-1 shape (6 kernels, hidden at run
# time), plus the 601-row shape of the 16 backward kernels (norm_shape_ok).
EXPECTED_RUNS=360

run_hk "$T/out.txt" test --target "$target" "$EMU_DIR/norm.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test --target $target emu/norm.yaml"

rows=$(awk -v t="$target" '$2 == t && ($0 ~ / PASS/ || $0 ~ / FAIL/)' "$T/out.txt" | wc -l)
pass=$(awk -v t="$target" '$2 == t && $0 ~ / PASS( |$)/' "$T/out.txt" | wc -l)
fails=$(grep -c 'FAIL' "$T/out.txt" || true)
[ "$fails" -eq 0 ] || fail "$fails FAIL line(s) for $target"
[ "$rows" -eq "$EXPECTED_RUNS" ] || fail "$rows result rows for $target, expected $EXPECTED_RUNS"
[ "$pass" -eq "$EXPECTED_RUNS" ] || fail "$pass PASS rows for $target, expected $EXPECTED_RUNS"
grep -q "^$EXPECTED_RUNS runs, 0 failed, 0 kernels not built; seed " "$T/out.txt" ||
  fail "the summary line does not say '$EXPECTED_RUNS runs, 0 failed, 0 kernels not built'"
echo "emu_norm_$target: $pass of $EXPECTED_RUNS runs PASS"
