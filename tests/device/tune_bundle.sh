#!/bin/sh
# tune_bundle.sh: assembles build/devbundle/ for the H200 (hkgen bench,
# hkgen tune --catalog and hkrt_select there; run there as
# `OUT=DIR bash run.sh`). The device has no m4 and no libyaml headers, so
# nothing is built there: the catalogue of tests/device/bench.yaml is built
# here (nvcc, sm_90a), and hkgen itself travels with the one shared object
# it loads, libyaml-0.so.2 (bench and tune --catalog never run m4).
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B="$TOP/build/devbundle"
cd "$TOP"
make -j2 build/hkgen build/libhkrt.so
rm -rf "$B" && mkdir -p "$B/lib"
build/hkgen build tests/device/bench.yaml -o "$B/cat" -j2
cp build/hkgen "$B/" && cp build/libhkrt.so "$B/lib/"
cp "$(ldconfig -p | awk '/libyaml-0.so.2 / {print $NF; exit}')" "$B/lib/libyaml-0.so.2"
cp tests/device/tune_run.sh "$B/run.sh" && cp tests/device/tune_check.py tests/rt/tune_select.py "$B/"
mkdir -p "$B/python" && cp runtime/python/hkrt.py "$B/python/"
git rev-parse --short HEAD >"$B/commit.txt"
du -sh "$B"
