#!/bin/bash
# run_feat.sh: the H200 round of the sm_90a attention features, from a bundle
# made by tests/device/bundle_feat.sh: cd BUNDLE && OUT=DIR bash run.sh.
# Writes $OUT/feat.log (attn_feat.py's log) and $OUT/stdout.txt; prints the
# summary.  Bounded by 40 s (the python run) so that the summary always prints.
cd "$(dirname "$0")" || exit 2
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD HKRT_LIB=$PWD/libhkrt.so OUT
echo "bundle commit $(cat COMMIT), $(date -u '+%Y-%m-%d %H:%M UTC')"
FEAT_BUDGET_S=${FEAT_BUDGET_S:-33} timeout -k 2 40 python3 attn_feat.py cat >"$OUT/stdout.txt" 2>&1
rc=$?
echo "attn_feat.py exit status $rc"
grep -E "^FAIL|cases .* failed|^  |^attn_feat|SKIPPED|MISSING|Traceback|Error|error" "$OUT/stdout.txt" | head -80
exit $rc
