#!/bin/bash
# The device bundle's run.sh (build/devbundle, made by tests/device/smallgemm_bundle.sh):
# numerics of every kernel of cat/, then benchmarks of those that passed, against cuBLAS.
# Usage on the H200, from the bundle: OUT=<dir> bash run.sh
cd "$(dirname "$0")" || exit 2
export PYTHONPATH="$PWD" HKRT_LIB="$PWD/libhkrt.so"
OUT=${OUT:-$PWD/out}
export OUT
mkdir -p "$OUT"
passed=$(mktemp)
SG_BUDGET=${SG_NUM_BUDGET:-15} timeout 19 python3 smallgemm_bench.py cat --numerics --passed "$passed"
echo "numerics exit $?"
SG_BUDGET=${SG_BENCH_BUDGET:-42} timeout 47 python3 smallgemm_bench.py cat --bench --only "$passed"
echo "bench exit $?"
rm -f "$passed"
