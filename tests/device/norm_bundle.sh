#!/bin/bash
# Builds the H200 bundle of the norm sweep into build/devbundle (run from the repository
# root, after make): main/ = tests/device/h200_norm.yaml built at a main checkout ($1,
# its hkgen built; left out: keep build/devbundle/main), sweep/ = h200_norm_sweep.yaml,
# cur/ = h200_norm.yaml here (this branch's defaults; NORM_CUR=0 leaves it out),
# libhkrt.so, hkrt.py, the scripts and run.sh; the commit in COMMIT, LIMIT seconds.
set -e
b=build/devbundle
mkdir -p "$b"
if [ -n "${1:-}" ]; then
  rm -rf "$b/main"
  (cd "$1" && ./build/hkgen build -q --target sm_90a tests/device/h200_norm.yaml -o "$OLDPWD/$b/main" -j 2)
fi
./build/hkgen build -q --target sm_90a tests/device/h200_norm_sweep.yaml -o "$b/sweep" -j 2
if [ "${NORM_CUR:-1}" = 1 ]; then
  ./build/hkgen build -q --target sm_90a tests/device/h200_norm.yaml -o "$b/cur" -j 2
fi
cp build/libhkrt.so runtime/python/hkrt.py tests/device/norm_sweep.py tests/device/norm_bench.py "$b/"
cp tests/device/norm_run.sh "$b/run.sh"
echo "${NORM_LIMIT:-115}" > "$b/LIMIT"
git rev-parse --short HEAD > "$b/COMMIT"
git diff --quiet HEAD -- gen templates runtime tests/device || echo "+dirty" >> "$b/COMMIT"
du -sh "$b"
