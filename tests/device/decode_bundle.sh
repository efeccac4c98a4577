#!/bin/sh
# decode_bundle.sh: builds the H200 bundle of tests/device/decode_h200.py into
# build/devbundle (libhkrt, the sm_90a catalogue of decode_h200.yaml, hkrt.py,
# the script, run.sh, COMMIT). Run from the repository root after `make`.
set -e
B=build/devbundle
rm -rf "$B" && mkdir -p "$B"
build/hkgen build -q -j2 --target sm_90a tests/device/decode_h200.yaml -o "$B/cat"
cp build/libhkrt.so runtime/python/hkrt.py tests/device/decode_h200.py "$B/"
cp tests/device/decode_h200.sh "$B/run.sh"
git rev-parse --short HEAD >"$B/COMMIT"
du -sh "$B"
