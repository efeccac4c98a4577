#!/usr/bin/env bash
# Builds the fp8 GEMM device bundle HERE into build/devbundle/ (the H200 has no
# m4 or libyaml): libhkrt.so, hkrt.py, the sm_90a catalogue of
# tests/device/h200_fp8.yaml, fp8_bench.py, COMMIT and run.sh. On the GPU
# machine, from the bundle's folder: OUT=<dir> timeout 60 bash run.sh
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
make build/hkgen build/libhkrt.so >/dev/null
b=build/devbundle
rm -rf "$b" && mkdir -p "$b"
./build/hkgen build -q --target sm_90a tests/device/h200_fp8.yaml -o "$b/cat"
cp build/libhkrt.so runtime/python/hkrt.py tests/device/fp8_bench.py "$b/"
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo "+dirty" || true)
echo "$(git rev-parse --short HEAD)$dirty" >"$b/COMMIT"
cat >"$b/run.sh" <<'EOR'
#!/usr/bin/env bash
# fp8 GEMM on the H200: numerics, then benchmarks (tests/device/fp8_bench.py)
cd "$(dirname "$0")"
export PYTHONPATH=. HKRT_LIB=./libhkrt.so PYTHONUNBUFFERED=1
OUT=${OUT:-.}
mkdir -p "$OUT"
nvidia-smi -L
timeout 55 python3 fp8_bench.py cat 2>&1 | tail -60
EOR
du -sh "$b"
