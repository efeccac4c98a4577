#!/usr/bin/env bash
# tune_run.sh, the run.sh of tests/device/tune_bundle.sh: on the H200,
# hkgen tune --catalog (4 GEMM problems), hkrt_select before and after,
# the tuned kernels' numerics and same-run baselines (tune_check.py), then
# hkgen bench at its default problems and one --json run. hkgen runs
# without building anything: it loads libyaml's shared object only
# (carried in lib/), never m4 or nvcc; cat/ was built from
# tests/device/bench.yaml (sm_90a) on the build machine. Every step has its
# own timeout: the whole run stays under 45 s.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python" HKRT_LIB="$PWD/lib/libhkrt.so" PYTHONUNBUFFERED=1
OUT="${OUT:-out}"; mkdir -p "$OUT"
TUNED=$(mktemp -d); trap 'rm -rf "$TUNED"' EXIT
P1=layout=nt,M=2048,N=2048,K=2048; P2=layout=nt,M=4096,N=4096,K=4096
P3=layout=nt,M=8192,N=8192,K=8192; P4=layout=nt,M=256,N=8192,K=4096; P5=layout=nt,M=1024,N=1024,K=1024
{
echo "tune bundle, commit $(cat commit.txt), $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null)"
echo "== hkgen tune --catalog (a copy of cat), 10 timed runs per candidate"
cp -r cat "$TUNED/cat"
timeout 15 ./hkgen tune --catalog "$TUNED/cat" -n 10 --shape $P1 --shape $P2 --shape $P3 --shape $P4; echo "rc=$?"
python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1])).get('tuned'), open(sys.argv[2],'w'), indent=1)" \
  "$TUNED/cat/manifest.json" "$OUT/tuned.json"; echo "tuned list rc=$?"
echo "== hkrt_select (CUDA) before and after tuning; the last problem has no tuned entry"
timeout 5 python3 tune_select.py lib/libhkrt.so cat 3 - $P1 $P2 $P3 $P4 $P5 | sed 's/^/before: /'
timeout 5 python3 tune_select.py lib/libhkrt.so "$TUNED/cat" 3 - $P1 $P2 $P3 $P4 $P5 | sed 's/^/after:  /'
echo "== numerics of the tuned kernels, baselines (same run)"
timeout 14 python3 tune_check.py cat "$TUNED/cat"; echo "rc=$?"
echo "== hkgen bench cat (default problems), 10 timed runs"
timeout 8 ./hkgen bench cat -n 10; echo "rc=$?"
echo "== json"
timeout 3 ./hkgen bench cat --json --kernel bn_gemm_tm128_tn256 -n 5 > "$OUT/bench.json"; echo "json rc=$?"
} 2>&1 | tee "$OUT/bench.txt"
