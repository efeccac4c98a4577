#!/usr/bin/env bash
# Builds the fp8 GEMM device bundle HERE into build/devbundle/ (the H200 has no
# m4 or libyaml): libhkrt.so, hkrt.py, the sm_90a catalogue of
# tests/device/h200_fp8.yaml (as cat_<commit>), fp8_bench.py, COMMIT and run.sh.
# Extra catalogue folders given as arguments (built earlier from other
# commits, named for them) are copied in beside it and benchmarked in the
# same run. On the GPU machine, from the bundle's folder:
#   OUT=<dir> timeout 120 bash run.sh     (LIMIT: 120 seconds)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
make build/hkgen build/libhkrt.so >/dev/null
b=build/devbundle
rm -rf "$b" && mkdir -p "$b"
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo "+dirty" || true)
commit=$(git rev-parse --short HEAD)$dirty
echo "$commit" >"$b/COMMIT"
./build/hkgen build -q --target sm_90a tests/device/h200_fp8.yaml -o "$b/cat_$commit"
cp build/libhkrt.so runtime/python/hkrt.py tests/device/fp8_bench.py "$b/"
extra=""
for c in "$@"; do
  cp -r "$c" "$b/$(basename "$c")"
  extra="$extra $(basename "$c")"
done
cat >"$b/run.sh" <<'EOR'
#!/usr/bin/env bash
# fp8 GEMM on the H200: numerics, then benchmarks (tests/device/fp8_bench.py)
cd "$(dirname "$0")"
export PYTHONPATH=. HKRT_LIB=./libhkrt.so PYTHONUNBUFFERED=1
OUT=${OUT:-.}
mkdir -p "$OUT"
nvidia-smi -L
q() { nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
echo "before: $(q)"
cat=$(ls -d cat_* | head -1)
if [ -z "EXTRA" ]; then
  # numerics, then the benchmarks, in one process
  timeout ${FP8_TIMEOUT:-42} python3 fp8_bench.py "$cat" 2>&1 | tail -60
else
  # numerics first, on their own (a hung kernel costs only this part), then the
  # benchmarks (kernels whose numerics failed left out; 5 passes)
  timeout 30 python3 fp8_bench.py "$cat" --no-bench 2>&1 | tail -40
  FP8_ROUNDS=5 timeout 80 python3 fp8_bench.py "$cat" EXTRA --no-numerics 2>&1 | tail -100
fi
echo "after: $(q)"
EOR
sed -i "s|EXTRA|${extra# }|" "$b/run.sh"
echo 120 >"$b/LIMIT"
du -sh "$b"
