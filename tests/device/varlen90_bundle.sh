#!/usr/bin/env bash
# varlen90_bundle.sh: builds HERE (nvcc, libyaml, m4) the bundle that runs the
# sm_90a varlen attention forward on the H200 (tests/device/attn_varlen90.py):
# build/devbundle/ with libhkrt.so, hkrt.py, the catalogue of
# tests/device/h200_attn_varlen.yaml (cat/), the script and run.sh.
# On the GPU machine:  cd BUNDLE && OUT=<dir> bash run.sh   (log: $OUT/varlen.log)
# An optional argument, a catalogue of variants (kernels vl_c1, vl_c0 built
# from a changed plan), goes along as cat2/ and is timed beside cat/.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
b=build/devbundle
make -s build/hkgen build/libhkrt.so
rm -rf "$b" && mkdir -p "$b/python"
./build/hkgen build -q -j 1 tests/device/h200_attn_varlen.yaml -o "$b/cat"
rm -f "$b"/cat/*/*.hip "$b"/cat/*/*.cu  # sources stay here; the manifest's sha256 covers the code objects
cp build/libhkrt.so "$b/"
cp runtime/python/hkrt.py "$b/python/"
cp tests/device/attn_varlen90.py "$b/"
if [ -n "${1:-}" ]; then cp -r "$1" "$b/cat2" && rm -f "$b"/cat2/*/*.hip "$b"/cat2/*/*.cu; fi
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo "+dirty" || true)
echo "$(git rev-parse --short HEAD)$dirty" >"$b/COMMIT"
cat >"$b/run.sh" <<'EOR'
#!/usr/bin/env bash
# The sm_90a varlen attention forward on the H200 (tests/device/varlen90_bundle.sh).
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1 PYTHONPATH=python HKRT_LIB=$PWD/libhkrt.so
export OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi -L
echo "bundle $(cat COMMIT), $(date -u '+%F %T UTC')"
VL_BUDGET_S=${VL_BUDGET_S:-100} timeout -k 2 110 python3 attn_varlen90.py cat $([ -d cat2 ] && echo cat2) >"$OUT/stdout.txt" 2>&1
echo "attn_varlen90.py exit status $?"
grep -E "^FAIL|cases|SKIPPED|MISSING|Traceback|Error|attn_varlen90|seqs|tokens" "$OUT/stdout.txt" | head -60
EOR
echo 115 >"$b/LIMIT"
du -sh "$b"
echo "bundle $b ready to mark: touch $b/READY"
