#!/bin/sh
# Builds build/devbundle/ for an H200 round of the sm_90a attention backward
# (tests/device/attn_bwd_run.sh): libhkrt, hkrt.py, the bench script and one
# catalogue per spec given (default tests/device/h200_attn_bwd.yaml), cat0, cat1, ...
# Run from the repository root after `make`.
set -e
B=build/devbundle
rm -rf "$B"
mkdir -p "$B"
i=0
for spec in ${@:-tests/device/h200_attn_bwd.yaml}; do
  ./build/hkgen build -q --target sm_90a "$spec" -o "$B/cat$i"
  i=$((i + 1))
done
cp build/libhkrt.so runtime/python/hkrt.py tests/device/attn_bwd_bench.py "$B/"
cp tests/device/attn_bwd_run.sh "$B/run.sh"
git rev-parse --short HEAD >"$B/COMMIT"
[ -z "$(git status --porcelain -- templates gen runtime tests/device)" ] || echo "+dirty" >>"$B/COMMIT"
du -sh "$B"
