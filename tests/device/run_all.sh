#!/usr/bin/env bash
# run_all.sh (on the H200, from the repository root): one device call that
# checks and times the catalogues built here into build/dev/ by
#   build/hkgen build tests/device/h200_norm.yaml -o build/dev/norm
#   build/hkgen build tests/device/h200_norm_sweep.yaml -o build/dev/sweep   (step sweep only)
#   build/hkgen build tests/device/h200.yaml --target sm_90a -o build/dev/h200
#   build/hkgen build tests/device/h200_attn.yaml --target sm_90a -o build/dev/attn
# (carry build/libhkrt.so and build/dev). Logs go to $OUT; the figures go
# into docs/PERF.md. Steps: norm numerics and benchmarks, GEMM/RoPE numerics
# (check_bench --no-bench --no-sanitize), attention numerics (attn_bench
# --no-bench) by default; RUN_STEPS picks some ("norm check attn"; "sweep": the norm
# defaults next to h200_norm_sweep.yaml's candidates, tests/device/norm_sweep.py).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so
OUT=${OUT:-build/device-logs}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv,noheader
rc=0
for step in ${RUN_STEPS:-norm check attn}; do
  t0=$(date +%s)
  case $step in
  norm) python3 tests/device/norm_bench.py build/dev/norm >"$OUT/norm.stdout" 2>&1 ;;
  sweep) python3 tests/device/norm_sweep.py build/dev/norm build/dev/sweep >"$OUT/sweep.stdout" 2>&1 ;;
  check) python3 tests/device/check_bench.py build/dev/h200 --no-bench --no-sanitize >"$OUT/check.stdout" 2>&1 ;;
  attn) python3 tests/device/attn_bench.py build/dev/attn --no-bench >"$OUT/attn.stdout" 2>&1 ;;
  attnb) python3 tests/device/attn_bench.py build/dev/attn build/dev/attn2 --short >"$OUT/attnb.stdout" 2>&1 ;;
  esac
  s=$?
  [ $s = 0 ] || rc=1
  echo "== $step: exit $s, $(( $(date +%s) - t0 )) s"
done
exit $rc
