#!/bin/sh
# manifest_run.sh [SECONDS]: runs the libFuzzer target for libhkrt's manifest
# reader and selection (fuzz_manifest.c) for a bounded time (default 30 s) on
# seeds that hkgen itself writes (an emulated and a GPU catalogue of
# tests/rt/abuse.yaml); any crash, leak, timeout or out-of-memory fails.
# Findings are copied to tests/build/fuzz-findings/. See docs/FUZZING.md.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
secs=${1:-30}
fuzzer=$TESTS_DIR/build/fuzz_manifest
[ -x "$fuzzer" ] || fail "$fuzzer is missing: run 'make -C tests'"
run_hk "$T/emu.out" build --emulate --target gfx942 "$TESTS_DIR/rt/abuse.yaml" -o "$T/emu"
expect_rc 0 "the emulated seed catalogue"
run_hk "$T/gpu.out" build --target gfx942 "$TESTS_DIR/rt/abuse.yaml" -o "$T/gpu"
expect_rc 0 "the GPU seed catalogue"
mkdir -p "$T/corpus"
cp "$T/emu/manifest.json" "$T/corpus/seed-emu.json"
cp "$T/gpu/manifest.json" "$T/corpus/seed-gpu.json"
run_fuzzer fuzz_manifest "$fuzzer" "$T/corpus" "$secs"
