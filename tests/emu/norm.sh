# norm.sh TARGET: `hkgen test --target TARGET emu/norm.yaml` (CTest
# emu_norm_<target>): every RMSNorm / LayerNorm kernel of norm.yaml, forward,
# backward and the backward's reduction, run on the emulator against fp64.
# Asserts exit status 0, exactly EXPECTED_RUNS result rows, all PASS, none
# FAIL, and the summary line agreeing. hkgen is build/hkgen-asan (lib/lib.sh).
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"

target=${1:?usage: norm.sh gfx942|gfx950}
# tests/emu/norm.yaml: 16 x 11 + 8 x 11 + 2 x 11 + 12 x 8 (distinct rows) + 2 x 11 + 4 x 8
# = 436, less the RMSNorm backward kernels' hidden-1 shape (6 kernels, hidden at run
# time), plus the 601-row shape of the 18 backward kernels (norm_shape_ok).
EXPECTED_RUNS=448

run_hk "$T/out.txt" test --target "$target" "$EMU_DIR/norm.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test --target $target emu/norm.yaml"

# Result rows: "kernel target shape... rel-err PASS|FAIL [message]".
expect_emu_runs "$target" "$T/out.txt" "$EXPECTED_RUNS" "emu_norm_$target"
