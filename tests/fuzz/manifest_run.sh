#!/bin/sh
# manifest_run.sh [SECONDS]: runs the libFuzzer target for libhkrt's manifest
# reader and selection (fuzz_manifest.c) for a bounded time (default 30 s) on
# seeds that hkgen itself writes (an emulated and a GPU catalogue of
# tests/rt/abuse.yaml); any crash, leak, timeout or out-of-memory fails.
# Findings are copied to tests/build/fuzz-findings/. See docs/FUZZING.md.
. "$(dirname "$0")/../lib/lib.sh"
secs=${1:-30}
fuzzer=$TESTS_DIR/build/fuzz_manifest
[ -x "$fuzzer" ] || fail "$fuzzer is missing: run 'make -C tests'"
run_hk "$T/emu.out" build --emulate --target gfx942 "$TESTS_DIR/rt/abuse.yaml" -o "$T/emu"
expect_rc 0 "the emulated seed catalogue"
run_hk "$T/gpu.out" build --target gfx942 "$TESTS_DIR/rt/abuse.yaml" -o "$T/gpu"
expect_rc 0 "the GPU seed catalogue"
mkdir -p "$T/corpus" "$T/artifacts"
cp "$T/emu/manifest.json" "$T/corpus/seed-emu.json"
cp "$T/gpu/manifest.json" "$T/corpus/seed-gpu.json"
rc=0
"$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=65536 -close_fd_mask=2 \
  -print_final_stats=1 -artifact_prefix="$T/artifacts/" "$T/corpus" >"$T/fuzz.log" 2>&1 || rc=$?
grep -E '^(stat::|Done)' "$T/fuzz.log" || true
if [ "$rc" != 0 ] || [ -n "$(ls "$T/artifacts")" ]; then
  mkdir -p "$TESTS_DIR/build/fuzz-findings"
  cp "$T"/artifacts/* "$TESTS_DIR/build/fuzz-findings/" 2>/dev/null || true
  tail -n 60 "$T/fuzz.log" >&2
  fail "the fuzzer found a problem (status $rc); inputs in tests/build/fuzz-findings/"
fi
grep -q 'stat::number_of_executed_units' "$T/fuzz.log" || fail "no final stats: did the fuzzer run?"
echo "fuzz_manifest: no findings in $secs s"
