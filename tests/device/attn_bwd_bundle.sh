#!/bin/sh
# Builds build/devbundle/ for an H200 round of the sm_90a attention backward
# (tests/device/attn_bwd_run.sh): libhkrt, hkrt.py, the bench and training
# scripts and the catalogue of tests/device/h200_attn_bwd.yaml as cat1 (the
# kernels under test).  With BWD_REF=<git revision>, also that revision's
# kernels as cat0_timing (timed beside cat1, bits compared), built by that
# revision's hkgen (exported to build/bwdref).  Variants (cat2_*...) are the
# caller's to add.  Run from the repository root after `make`.
set -e
B=build/devbundle
rm -rf "$B"
mkdir -p "$B"
./build/hkgen build -q --target sm_90a tests/device/h200_attn_bwd.yaml -o "$B/cat1"
if [ -n "$BWD_REF" ]; then
  R=build/bwdref
  rm -rf "$R"
  mkdir -p "$R"
  git archive "$BWD_REF" | tar -x -C "$R"
  make -s -C "$R" build/hkgen -j1
  "$R/build/hkgen" build -q --target sm_90a "$R/tests/device/h200_attn_bwd.yaml" -o "$B/cat0_timing"
  echo "$BWD_REF $(git rev-parse --short "$BWD_REF")" >"$B/cat0_timing/REVISION"
fi
rm -f "$B"/cat*/sm_90a/*.hip
cp build/libhkrt.so runtime/python/hkrt.py tests/device/attn_bwd_bench.py tests/device/train_block.py "$B/"
cp tests/device/attn_bwd_run.sh "$B/run.sh"
git rev-parse --short HEAD >"$B/COMMIT"
[ -z "$(git status --porcelain -- templates gen runtime tests/device)" ] || echo "+dirty" >>"$B/COMMIT"
du -sh "$B"
