#!/bin/bash
# The H200 round of the sm_90a attention backward (tests/device/attn_bwd_bench.py),
# run from a bundle directory that holds libhkrt.so, hkrt.py, attn_bwd_bench.py,
# COMMIT and the catalogues (built here with hkgen; nothing builds there):
#   OUT=<dir> timeout SECONDS bash run.sh
# cat0: a reference catalogue, timed against cuDNN and FLASH (torch SDPA
# backward), no numerics (checked in earlier rounds); cat1: the kernels under test, full
# numerics and timing; cat2_*...: variants (numerics subset, timing; the highest number first); then
# compute-sanitizer memcheck on cat1 if time is left.  cat*_timing: timed
# beside cat1 in its process, their outputs checked against cat1's bits.
# The budget: $BWD_BUDGET_S, else the bundle's BUDGET file, else 100 s.  Each in a process of
# its own, so that a hang costs only its own time (BWD_HANG_S per launch).
# Logs: $OUT/bwd.log, $OUT/bwd_one.log, $OUT/sanitizer.log.
cd "$(dirname "$0")" || exit 2
export PYTHONPATH=$PWD HKRT_LIB=$PWD/libhkrt.so PYTHONUNBUFFERED=1 BWD_HANG_S=${BWD_HANG_S:-10}
OUT=${OUT:-$PWD/out}
export OUT
mkdir -p "$OUT"
budget=${BWD_BUDGET_S:-$(cat BUDGET 2>/dev/null || echo 100)}
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
echo "attn_bwd sm_90a round: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u), commit $(head -1 COMMIT)"
# one process: a time limit (its own BWD_BUDGET_S a little under it), flags, catalogue
run() {
  t=$1
  shift
  [ "$(left)" -gt "$t" ] || t=$(($(left) - 3))
  if [ "$t" -lt 12 ]; then
    echo "skipped (time): $*"
    return
  fi
  BWD_BUDGET_S=$((t - 7)) timeout "$t" python3 attn_bwd_bench.py "$@" || echo "exit $?: $*"
}
timing=$(ls -d cat*_timing 2>/dev/null)
if [ -d cat0 ]; then
  run 30 --no-numerics --hk cat0
  [ -d cat1 ] && run 33 --variant --hk cat1 $timing
else                                   # no reference: cat1 takes the baselines
  [ -d cat1 ] && run $(($(left) - 2)) --hk cat1 $timing
fi
for c in $(ls -d cat[2-9]* 2>/dev/null | grep -v _timing | sort -r); do run 17 --variant --subset "$c"; done
san=/usr/local/cuda/bin/compute-sanitizer
[ -x "$san" ] || san=$(command -v compute-sanitizer)
sc=cat1
[ -d cat1 ] || sc=cat0
if [ -z "$san" ]; then
  echo "compute-sanitizer: not found on this machine, memcheck skipped"
elif [ "$(left)" -lt 20 ]; then
  echo "compute-sanitizer: skipped, $(left) s left of the budget"
else
  timeout $(($(left) - 2)) "$san" --tool memcheck --log-file "$OUT/sanitizer.log" python3 attn_bwd_bench.py --one $sc
  echo "compute-sanitizer memcheck ($sc) exit $?: $(grep 'ERROR SUMMARY' "$OUT/sanitizer.log" | head -2)"
fi
grep -c "^BAD\|^FAIL" "$OUT/bwd.log" | sed 's/^/numerics failures in bwd.log: /'
