#!/bin/sh
# Builds build/devbundle/ for an H200 round of the sm_90a attention backward
# (tests/device/attn_bwd_run.sh): libhkrt, hkrt.py, the bench script and the
# catalogue of tests/device/h200_attn_bwd.yaml as cat1 (the kernels under
# test); cat0 (a reference) and cat2_* (variants) are the caller's to add.
# Run from the repository root after `make`.
set -e
B=build/devbundle
rm -rf "$B"
mkdir -p "$B"
./build/hkgen build -q --target sm_90a tests/device/h200_attn_bwd.yaml -o "$B/cat1"
rm -f "$B"/cat1/sm_90a/*.hip
cp build/libhkrt.so runtime/python/hkrt.py tests/device/attn_bwd_bench.py "$B/"
cp tests/device/attn_bwd_run.sh "$B/run.sh"
git rev-parse --short HEAD >"$B/COMMIT"
[ -z "$(git status --porcelain -- templates gen runtime tests/device)" ] || echo "+dirty" >>"$B/COMMIT"
du -sh "$B"
