# mutant.sh (CTest emu_layout_mutant): the layout/product checks must catch a
# wrong MFMA layout. build/emu_mfma_mutant is build/emu_mfma linked with
# runtime/src/emu_mfma.c built with -DHKEMU_MUTATE_LAYOUT (A's k interleaved
# across the lane halves of the 32x32 forms and the lane groups of the 16x16). The real build must pass both modes (exit 0);
# the mutant must fail both with exit status 1 (a detected mismatch, not a
# crash, a sanitizer abort or a missing file).
set -eu
TESTS_DIR=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/hkgen-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

data="$TESTS_DIR/data/mfma-layouts"
for bin in emu_mfma emu_mfma_mutant; do
  [ -x "$TESTS_DIR/build/$bin" ] || fail "tests/build/$bin is missing: run 'make -C tests'"
done
for mode in layout product; do
  rc=0
  "$TESTS_DIR/build/emu_mfma" "$mode" "$data" >"$T/good.txt" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { cat "$T/good.txt"; fail "emu_mfma $mode: exit status $rc, expected 0"; }
  rc=0
  "$TESTS_DIR/build/emu_mfma_mutant" "$mode" "$data" >"$T/bad.txt" 2>&1 || rc=$?
  head -n 5 "$T/bad.txt"
  [ "$rc" = 1 ] || { cat "$T/bad.txt"; fail "emu_mfma_mutant $mode: exit status $rc, expected 1 (caught)"; }
  grep -q '^FAIL: ' "$T/bad.txt" || fail "emu_mfma_mutant $mode: no FAIL line"
  # the mutation reaches both MFMA shapes (32x32 and 16x16 A layouts)
  # (summary rows: "layout ... N mismatches", "product ... N over TOL")
  grep -Eq '^(layout|product) +cdna3 v_mfma_f32_16x16x16_bf16 .* [1-9][0-9]* (mismatches|over)' "$T/bad.txt" ||
    fail "emu_mfma_mutant $mode: the 16x16 A mutation went unnoticed"
  echo "emu_layout_mutant: $mode check catches the mutant (exit 1)"
done
