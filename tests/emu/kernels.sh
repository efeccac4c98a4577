# kernels.sh TARGET: `hkgen test --target TARGET emu/ops.yaml` (CTest
# emu_kernels_<target>): every generated GEMM and RoPE kernel of ops.yaml run
# on the emulator against fp64. Asserts exit status 0, exactly EXPECTED_RUNS
# result rows, all PASS, none FAIL, and the summary line agreeing.
# hkgen is build/hkgen-asan (lib/lib.sh): the generator runs under ASan/UBSan;
# the emulator (libhkrt.a) and the host-built kernels are not instrumented,
# so the fibers' stack switches never confuse ASan.
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"

target=${1:?usage: kernels.sh gfx90a|gfx942|gfx950}
# tests/emu/ops.yaml: GEMM 8 x 7 + 4 x 7 + 1 x 1 + 2 x 7 + 1 x 1 + 3 x 7 = 121,
# RoPE 8 x 5 + 4 x 5 = 60.
EXPECTED_RUNS=181

run_hk "$T/out.txt" test --target "$target" "$EMU_DIR/ops.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test --target $target emu/ops.yaml"

# Result rows: "kernel target shape... rel-err PASS|FAIL [message]".
expect_emu_runs "$target" "$T/out.txt" "$EXPECTED_RUNS" "emu_kernels_$target"
