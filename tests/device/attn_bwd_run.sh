#!/bin/bash
# The H200 round of the sm_90a attention backward (tests/device/attn_bwd_bench.py),
# run from a bundle directory that holds libhkrt.so, hkrt.py, attn_bwd_bench.py,
# COMMIT and the catalogues cat* (built here with hkgen; nothing builds there):
#   OUT=<dir> timeout SECONDS bash run.sh
# Logs: $OUT/bwd.log, $OUT/bwd_one.log (compute-sanitizer), $OUT/sanitizer.log.
cd "$(dirname "$0")" || exit 2
export PYTHONPATH=$PWD HKRT_LIB=$PWD/libhkrt.so PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
budget=${BWD_BUDGET_S:-135}
start=$(date +%s)
echo "attn_bwd sm_90a round: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u), commit $(cat COMMIT)"
# cat0: the kernels under test (numerics, bench against cuDNN and FLASH); cat1_*,
# cat2_*, ...: variants, each in a process of its own (a hang there costs only
# its own time); *_probe: timing only (a variant that leaves dQ out, say)
nvar=$(ls -d cat[1-9]* 2>/dev/null | wc -l)
BWD_BUDGET_S=$((budget - 8 - 20 * nvar)) python3 attn_bwd_bench.py cat0
rc=$?
for c in $(ls -d cat[1-9]* 2>/dev/null | sort); do
  case $c in *_probe) f="--variant --no-numerics" ;; *) f=--variant ;; esac
  BWD_BUDGET_S=18 timeout 24 python3 attn_bwd_bench.py $f "$c" || echo "variant $c: exit $?"
done
left=$((budget - ($(date +%s) - start)))
san=/usr/local/cuda/bin/compute-sanitizer
[ -x "$san" ] || san=$(command -v compute-sanitizer)
if ! grep -q "numerics failures" "$OUT/bwd.log" 2>/dev/null; then
  echo "compute-sanitizer: skipped, the suite did not finish (a hang or a crash: see above)"
elif [ -z "$san" ]; then
  echo "compute-sanitizer: not found on this machine, memcheck skipped"
elif [ "$left" -lt 30 ]; then
  echo "compute-sanitizer: skipped, $left s left of the budget"
else
  timeout $((left - 5)) "$san" --tool memcheck --log-file "$OUT/sanitizer.log" python3 attn_bwd_bench.py --one cat0
  echo "compute-sanitizer memcheck exit $?: $(grep -c 'Invalid\|ERROR SUMMARY' "$OUT/sanitizer.log" 2>/dev/null) lines; $(grep 'ERROR SUMMARY' "$OUT/sanitizer.log" | head -2)"
fi
exit $rc
