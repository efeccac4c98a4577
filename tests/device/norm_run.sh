#!/bin/bash
# The norm device bundle's run.sh (build/devbundle, made by tests/device/norm_bundle.sh):
# tests/device/norm_sweep.py over main/ (h200_norm.yaml built at main), cur/ (the same here) and sweep/
# (h200_norm_sweep.yaml): numerics of every kernel, then timings next to torch.compile
# and a same-bytes copy; then, when cur/ exists (h200_norm.yaml with this branch's
# defaults), norm_bench.py --no-bench over it (dropout numerics too), in LIMIT seconds.
# Usage on the H200, from the bundle: OUT=<dir> bash run.sh
cd "$(dirname "$0")" || exit 2
export PYTHONPATH="$PWD" HKRT_LIB="$PWD/libhkrt.so" PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}
export OUT COMMIT=$(cat COMMIT)
mkdir -p "$OUT"
limit=$(cat LIMIT)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >"$OUT/gpu.txt" 2>&1
t0=$(date +%s)
# the sweep first (the timings matter most), then the numerics of cur/ in what is left
left=$(( limit - 14 ))
SWEEP_BUDGET=$(( left - 14 )) timeout $left python3 norm_sweep.py main cur sweep >"$OUT/sweep.stdout" 2>&1
echo "norm_sweep exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
if [ -d cur ]; then
  left=$(( limit - ($(date +%s) - t0) - 3 ))
  [ $left -gt 5 ] && timeout $left python3 norm_bench.py cur --no-bench >"$OUT/bench.stdout" 2>&1
  echo "norm_bench exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/gpu.txt"
fi
