#!/bin/sh
# fuzz_run.sh [SECONDS]: runs the libFuzzer spec target for a bounded time
# (default 60 s) on a seed corpus of specs/ and tests/spec/; any crash, leak,
# timeout (10 s per input) or out-of-memory (2 GiB) fails the test. Findings
# are copied to tests/build/fuzz-findings/. See docs/FUZZING.md.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
secs=${1:-60}
fuzzer=$TESTS_DIR/build/fuzz_spec
[ -x "$fuzzer" ] || fail "$fuzzer is missing: run 'make -C tests'"

corpus=$T/corpus
mkdir -p "$corpus"
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

run_fuzzer fuzz_spec "$fuzzer" "$corpus" "$secs" -dict="$TESTS_DIR/fuzz/spec.dict"
