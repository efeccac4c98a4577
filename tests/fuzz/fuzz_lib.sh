# fuzz_lib.sh: what the libFuzzer scripts share (sourced after lib/lib.sh).
# run_fuzzer NAME FUZZER CORPUS SECS [ARGS...]: runs FUZZER on CORPUS for SECS
# seconds (4 GiB, 10 s per input, inputs up to 64 KiB, plus ARGS); any crash,
# leak, timeout or out-of-memory fails, with the inputs copied to
# tests/build/fuzz-findings/.
run_fuzzer() {
  name=$1 fuzzer=$2 corpus=$3 secs=$4
  shift 4
  mkdir -p "$T/artifacts"
  rc=0
  # 4 GiB: a spec may expand to SPEC_MAX_KERNELS kernels (20000 in the fuzz
  # build, tests/Makefile), each with its plan (about 20 KB: launch rules,
  # arguments, the cost formula), plus ASan's quarantine; at 100000, 2 GiB was
  # exceeded at 64738 kernels and one input of 67200 kernels took 7-13 s
  "$fuzzer" -max_total_time="$secs" -rss_limit_mb=4096 -timeout=10 -max_len=65536 -close_fd_mask=2 \
    -print_final_stats=1 -artifact_prefix="$T/artifacts/" "$@" "$corpus" >"$T/fuzz.log" 2>&1 || rc=$?
  grep -E '^(stat::|Done|#[0-9]+ *DONE)' "$T/fuzz.log" || true
  if [ "$rc" != 0 ] || [ -n "$(ls "$T/artifacts")" ]; then
    mkdir -p "$TESTS_DIR/build/fuzz-findings"
    cp "$T"/artifacts/* "$TESTS_DIR/build/fuzz-findings/" 2>/dev/null || true
    tail -n 60 "$T/fuzz.log" >&2
    fail "the fuzzer found a problem (status $rc); inputs in tests/build/fuzz-findings/"
  fi
  grep -q 'stat::number_of_executed_units' "$T/fuzz.log" || fail "no final stats: did the fuzzer run?"
  echo "$name: no findings in $secs s"
}
