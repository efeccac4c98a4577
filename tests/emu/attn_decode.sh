#!/bin/sh
# attn_decode.sh TARGET (CTest emu_attn_decode_<target>): every attn_decode
# kernel of emu/attn_decode.yaml on the emulator at the op's default shapes
# (GQA 8, 3, 5, 1, 24 in three row groups; q_tokens 1 to 16; random page
# permutations; lengths that fill the table, end inside the first page or
# mid-page; up to 24 splits; sliding windows, sinks, a soft cap; an fp8
# cache) against the fp64 reference of
# gen/op_attn_decode.c, which gathers the pages. The check_tables kernel's
# runs also corrupt one sequence's table, which the emulator must report
# naming the sequence; the 24-page shape launches twice (the emulator draws
# another workgroup order each launch) and must give the same bits, which a
# merge in arrival order fails. hkgen is build/hkgen-asan (lib/lib.sh).
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"

target=${1:?usage: attn_decode.sh gfx942|gfx950}
EXPECTED_RUNS=77 # (4 run-time kernels + check_tables + 3 with masks + 2 fp8 + baked 8:1) x 7 shapes
run_hk "$T/out.txt" test --target "$target" "$EMU_DIR/attn_decode.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test --target $target emu/attn_decode.yaml"
expect_emu_runs "$target" "$T/out.txt" "$EXPECTED_RUNS" "emu_attn_decode_$target"
reported=$(grep -c '^emu_dec_chk .*  PASS  corrupt table reported: sequence [0-9]' "$T/out.txt" || true)
[ "$reported" -eq 7 ] || fail "$reported of 7 check_tables runs reported the corrupt table"

# The split count's other term: with HKRT_UNITS=2 standing in for the
# device's units, cdiv(4, batch*heads_k) splits (4, 2 or 1) rather than the
# table's (the 7 shapes of one run-time kernel).
cat >"$T/units.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_decode
    name: emu_dec_units
    head_dim: 128
    block_size: 16
SPEC
rc=0
HKRT_UNITS=2 "$HKGEN" test --target "$target" "$T/units.yaml" >"$T/units.txt" 2>&1 || rc=$?
cat "$T/units.txt"
hk_out=$T/units.txt
expect_rc 0 "HKRT_UNITS=2 hkgen test --target $target units.yaml"
expect_emu_runs "$target" "$T/units.txt" 7 "emu_attn_decode_$target (HKRT_UNITS=2)"
