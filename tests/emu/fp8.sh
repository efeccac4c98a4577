# fp8.sh (CTest emu_fp8): the emulator's fp8 conversions (hk_emu.h,
# hk_emu_fp8.h) against an independent table. emu/fp8_table.py derives every
# value of the four formats from their definitions with exact fractions and
# narrows a fresh random set of fp32 values (plus every fp8 value, the
# midpoints and their neighbours, the range's edges, zeros, subnormals,
# infinities and NaNs) by nearest-value search; build/emu_fp8_gfx942 (FNUZ)
# and build/emu_fp8_gfx950 (OCP) compare the primitives with it, one and four
# at a time. HKGEN_TEST_SEED repeats a table.
set -eu
TESTS_DIR=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/hkgen-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

python3 "$TESTS_DIR/emu/fp8_table.py" ${HKGEN_TEST_SEED:-} >"$T/table" || fail "fp8_table.py failed"
[ "$(grep -c '^D ' "$T/table")" -eq 1024 ] || fail "the table does not hold 4 x 256 codes"
for t in gfx942 gfx950; do
  bin="$TESTS_DIR/build/emu_fp8_$t"
  [ -x "$bin" ] || fail "tests/build/emu_fp8_$t is missing: run 'make -C tests'"
  rc=0
  "$bin" "$T/table" >"$T/out" 2>&1 || rc=$?
  cat "$T/out"
  [ "$rc" -eq 0 ] || fail "emu_fp8_$t: exit status $rc"
  [ "$(grep -c ' 0 mismatches$' "$T/out")" -eq 2 ] || fail "emu_fp8_$t: not two formats checked clean"
done
echo "ok   fp8 conversions: 2 formats on each of gfx942 and gfx950 agree with fp8_table.py"
