#!/bin/bash
# Builds the H200 bundle of the small-GEMM variants into build/devbundle (run from the
# repository root, after make): the catalogue of tests/device/smallgemm.yaml (or $1),
# libhkrt.so, hkrt.py, the benchmark and run.sh; the commit in COMMIT.
set -e
spec=${1:-tests/device/smallgemm.yaml}
b=build/devbundle
rm -rf "$b"
mkdir -p "$b"
./build/hkgen build -q --target sm_90a "$spec" -o "$b/cat" -j 2
cp build/libhkrt.so runtime/python/hkrt.py tests/device/smallgemm_bench.py "$b/"
cp tests/device/smallgemm_run.sh "$b/run.sh"
git rev-parse --short HEAD > "$b/COMMIT"
git diff --quiet HEAD -- gen templates runtime tests/device || echo "+dirty" >> "$b/COMMIT"
du -sh "$b"
