#!/bin/sh
# fuzz_run.sh [SECONDS]: runs the libFuzzer spec target for a bounded time
# (default 60 s) on a seed corpus of specs/ and tests/spec/; any crash, leak,
# timeout (10 s per input) or out-of-memory (2 GiB) fails the test. Findings
# are copied to tests/build/fuzz-findings/. See docs/FUZZING.md.
. "$(dirname "$0")/../lib/lib.sh"
secs=${1:-60}
fuzzer=$TESTS_DIR/build/fuzz_spec
[ -x "$fuzzer" ] || fail "$fuzzer is missing: run 'make -C tests'"

corpus=$T/corpus
mkdir -p "$corpus" "$T/artifacts"
n=0
for f in "$TOP"/specs/*.yaml "$TESTS_DIR"/spec/bad/*.yaml "$TESTS_DIR"/spec/good/*.yaml; do
  n=$((n + 1))
  cp "$f" "$corpus/seed-$n.yaml"
done
[ "$n" -ge 10 ] || fail "seed corpus has only $n files"
# A few seeds for the override path ('!' first) and hostile shapes.
{ printf '!'; cat "$TOP/specs/llama3-8b-tp1.yaml"; } >"$corpus/seed-override.yaml"
printf 'kernels: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n' >"$corpus/seed-deep.yaml"
printf 'a: &a [1]\nkernels: [*a]\n' >"$corpus/seed-alias.yaml"

rc=0
"$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
  -dict="$TESTS_DIR/fuzz/spec.dict" -close_fd_mask=2 -print_final_stats=1 \
  -artifact_prefix="$T/artifacts/" "$corpus" >"$T/fuzz.log" 2>&1 || rc=$?
grep -E '^(stat::|Done|#[0-9]+ *DONE)' "$T/fuzz.log" || true
if [ "$rc" != 0 ] || [ -n "$(ls "$T/artifacts")" ]; then
  mkdir -p "$TESTS_DIR/build/fuzz-findings"
  cp "$T"/artifacts/* "$TESTS_DIR/build/fuzz-findings/" 2>/dev/null || true
  tail -n 60 "$T/fuzz.log" >&2
  fail "the fuzzer found a problem (status $rc); inputs in tests/build/fuzz-findings/"
fi
grep -q 'stat::number_of_executed_units' "$T/fuzz.log" || fail "no final stats: did the fuzzer run?"
echo "fuzz_spec: no findings in $secs s"
