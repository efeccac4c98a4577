#!/bin/bash
# The H200 round of the sm_90a attention backward (tests/device/attn_bwd_bench.py),
# run from a bundle directory that holds libhkrt.so, hkrt.py, attn_bwd_bench.py,
# train_block.py, COMMIT and the catalogues (built here with hkgen; nothing builds there):
#   OUT=<dir> timeout SECONDS bash run.sh
# cat1: the kernels under test: full numerics; then the bench against cuDNN and
# FLASH (torch SDPA backward) in one process with cat0_timing (a reference, e.g.
# main's kernels) and every other cat*_timing (BWD_HK=1: HipKittens' shapes too),
# their outputs checked against cat1's bits; the variants (below); the training
# test (train_block.py, hkrt.attention from cat1, TRAIN_SEEDS) after the first
# variant; compute-sanitizer memcheck on cat1 with what time is left.
# The budget: $BWD_BUDGET_S, else the bundle's BUDGET file, else 100 s.  Each in a
# process of its own, so that a hang costs only its own time (BWD_HANG_S per launch).
# Logs: $OUT/bwd.log, $OUT/bwd_one.log, $OUT/sanitizer.log, $OUT/train.log.
cd "$(dirname "$0")" || exit 2
# the round's settings (T_NUM, T_BENCH, T_TRAIN, T_SAN, TRAIN_SEEDS, BWD_HK, ...), if the bundle has them
[ -f env.sh ] && . ./env.sh
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
  echo "== $(date -u +%T) attn_bwd_bench.py $* (limit $t s)"
  BWD_BUDGET_S=$((t - 7)) timeout "$t" python3 attn_bwd_bench.py "$@"
  rc=$?
  [ $rc = 0 ] || echo "exit $rc: $*"
  return $rc
}
t_num=${T_NUM:-40} t_bench=${T_BENCH:-60} t_train=${T_TRAIN:-32} t_san=${T_SAN:-40}
timing=$(ls -d cat*_timing 2>/dev/null)
if run $t_num --no-bench cat1; then
  run $t_bench --no-numerics ${BWD_HK:+--hk} cat1 $timing
else                                   # cat1 failed or hung: time the others without it
  run $t_bench --no-numerics ${BWD_HK:+--hk} $timing
fi
# the variants in name order: catN_NAME_timing.ONLY timed beside cat1 on the shapes ONLY names
# (bits checked); catN_NAME_bits: numerics subset, then timed beside cat1 (bits checked);
# catN_NAME: numerics subset, timing.  Training after the first of them (TRAIN_AFTER), memcheck last.
train() {
  t=$t_train
  [ "$(left)" -gt "$t" ] || t=$(($(left) - 3))
  echo "== $(date -u +%T) train_block.py seeds ${TRAIN_SEEDS:-0 1} (limit $t s)"
  if [ "$t" -ge 20 ]; then
    HK_COMMIT=$(head -1 COMMIT) TRAIN_SEEDS=${TRAIN_SEEDS:-0 1} HKRT_POISON=0 HANG_S=$((t - 3)) timeout "$t" \
      python3 train_block.py cat1 sdpa sdpa_cudnn sdpa_efficient hkgen >"$OUT/train_stdout.log" 2>&1
    echo "train_block exit $?"
    grep -E "^(ok|FAIL)|seed .* vs sdpa|noise|train_block:|steps in" "$OUT/train.log" | head -60
  else
    echo "skipped (time)"
  fi
}
n=0
for c in $(ls -d cat[2-9]* 2>/dev/null | grep -v '_timing$' | sort); do
  case $c in
  *_timing.*) run 20 --variant --no-numerics --only="${c##*.}" cat1 "$c" ;;
  *_bits) run 36 --variant --subset --numerics-first "$c" cat1 ;;
  *) run 26 --variant --subset "$c" ;;
  esac
  n=$((n + 1))
  [ "$n" = "${TRAIN_AFTER:-1}" ] && [ -f train_block.py ] && train
done
[ "$n" -lt "${TRAIN_AFTER:-1}" ] && [ -f train_block.py ] && train
san=/usr/local/cuda/bin/compute-sanitizer
[ -x "$san" ] || san=$(command -v compute-sanitizer)
if [ -z "$san" ]; then
  echo "compute-sanitizer: not found on this machine (/usr/local/cuda/bin, PATH), memcheck skipped"
elif [ "$(left)" -lt 25 ]; then
  echo "compute-sanitizer: skipped, $(left) s left of the budget"
else
  t=$t_san
  [ "$(left)" -gt "$t" ] || t=$(($(left) - 3))
  echo "== $(date -u +%T) compute-sanitizer memcheck cat1 --one (limit $t s)"
  BWD_HANG_S=$((t - 5)) timeout "$t" "$san" --tool memcheck --log-file "$OUT/sanitizer.log" python3 attn_bwd_bench.py --one cat1
  echo "compute-sanitizer memcheck (cat1) exit $?: $(grep 'ERROR SUMMARY' "$OUT/sanitizer.log" | head -2)"
fi
grep -c "^BAD\|^FAIL" "$OUT/bwd.log" | sed 's/^/numerics failures in bwd.log: /'
echo "done $(date -u +%T), $(left) s of $budget left"
