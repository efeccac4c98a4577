# lib.sh: helpers every shell test sources. Tests run from tests/ (CTest's
# working directory) and live one folder below it, in their area's folder
# (tests/spec/, tests/pipeline/, tests/emu/, ...), so $TESTS_DIR is the
# folder above the script's. Each gets a fresh temporary folder $T, removed
# on exit (kept when HKGEN_TEST_KEEP=1), and a build cache inside it, so no
# test ever touches ~/.cache.
set -eu

TESTS_DIR=$(cd "$(dirname "$0")/.." && pwd)
TOP=$(cd "$TESTS_DIR/.." && pwd)
HKGEN=${HKGEN:-$TOP/build/hkgen-asan}
[ -x "$HKGEN" ] || { echo "FAIL: $HKGEN is missing: run 'make build/hkgen-asan' first" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/hkgen-test.XXXXXX")
export HKGEN_CACHE_DIR="$T/cache"
lib_cleanup() {
  if [ "${HKGEN_TEST_KEEP:-0}" = 1 ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
}
trap lib_cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# run_hk OUTFILE CMD...: runs hkgen, output (stdout and stderr) to OUTFILE;
# sets $rc. Never aborts the script, whatever the status.
run_hk() {
  hk_out=$1
  shift
  rc=0
  "$HKGEN" "$@" >"$hk_out" 2>&1 || rc=$?
}

# expect_rc WANT WHAT: checks $rc, showing run_hk's output on failure.
expect_rc() {
  if [ "$rc" != "$1" ]; then
    echo "--- output of hkgen ($2):" >&2
    head -c 4000 "$hk_out" >&2
    fail "$2: exit status $rc, expected $1"
  fi
}

# jsonq [-c] FILE PATH: the values at PATH in the JSON file FILE, one a line,
# or (-c) how many; a missing member fails (status 2). JSON is asserted
# through this parser, never by grepping the writer's layout; lib/jsonq.py
# says how PATH reads (kernels[op=gemm].name, -c kernels.*, ...).
jsonq() { python3 "$TESTS_DIR/lib/jsonq.py" "$@"; }

# expect_emu_runs TARGET FILE EXPECTED NAME: the output of `hkgen test` in
# FILE holds exactly EXPECTED result rows for TARGET, all PASS, no FAIL
# anywhere, and the summary line agreeing.
expect_emu_runs() {
  rows=$(awk -v t="$1" '$2 == t && ($0 ~ / PASS/ || $0 ~ / FAIL/)' "$2" | wc -l)
  pass=$(awk -v t="$1" '$2 == t && $0 ~ /  PASS( |$)/' "$2" | wc -l)
  fails=$(grep -c 'FAIL' "$2" || true)
  [ "$fails" -eq 0 ] || fail "$fails FAIL line(s) for $1"
  [ "$rows" -eq "$3" ] || fail "$rows result rows for $1, expected $3"
  [ "$pass" -eq "$3" ] || fail "$pass PASS rows for $1, expected $3"
  grep -q "^$3 runs, 0 failed, 0 kernels not built or not run; [0-9.]* s; seed " "$2" ||
    fail "the summary line does not say '$3 runs, 0 failed, 0 kernels not built or not run'"
  echo "$4: $pass of $3 runs PASS"
}

# expect_mfma_build TARGETS SPEC OUT OP WANT WHAT: `hkgen build` of SPEC for
# TARGETS into OUT succeeds (it fails on a spill or a kernel without a wave
# per SIMD), with WANT kernels of OP, none spilling, and `hkgen inspect`
# showing an MFMA hot loop for each. Leaves the manifest's path in $m.
expect_mfma_build() {
  run_hk "$T/out" build -q --target "$1" "$2" -o "$3"
  expect_rc 0 "hkgen build --target $1 $(basename "$2")"
  m=$3/manifest.json
  n=$(jsonq -c "$m" "kernels[op=$4]")
  [ "$n" -eq "$5" ] || fail "$n $6 kernels, expected $5"
  [ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq "$n" ] || fail "a $6 kernel spills"
  run_hk "$T/inspect" inspect "$3"
  expect_rc 0 "hkgen inspect"
  mfma=$(grep -c ' v_mfma_' "$T/inspect")
  [ "$mfma" -eq "$n" ] || fail "$mfma of $n $6 kernels show an MFMA hot loop"
  echo "ok: $n $6 kernels, no spills, an MFMA hot loop each"
}
