#!/bin/sh
# decode_bundle.sh [HKGEN...]: builds the H200 bundle of tests/device/decode_h200.py
# into build/devbundle (libhkrt, the sm_90a catalogue of decode_h200.yaml, hkrt.py,
# the script, run.sh, COMMIT). Run from the repository root after `make`.
# Each further hkgen given (another plan of the same kernels, e.g. one built
# with -DDEC_SM90_WARPS=4) adds a catalogue cat2, cat3, ... that run.sh
# times in the same run (CATS lists them; DIR:MODE there also chooses
# numerics for one: tests/device/decode_h200.py).
set -e
B=build/devbundle
rm -rf "$B" && mkdir -p "$B"
build/hkgen build -q -j2 --target sm_90a tests/device/decode_h200.yaml -o "$B/cat"
cats=cat
i=2
for h in "$@"; do
  "$h" build -q -j2 --target sm_90a tests/device/decode_h200.yaml -o "$B/cat$i"
  cats="$cats,cat$i"
  i=$((i + 1))
done
echo "$cats" >"$B/CATS"
cp build/libhkrt.so runtime/python/hkrt.py tests/device/decode_h200.py "$B/"
cp tests/device/decode_h200.sh "$B/run.sh"
git rev-parse --short HEAD >"$B/COMMIT"
du -sh "$B"
