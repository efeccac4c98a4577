#!/usr/bin/env bash
# tune_run.sh, the run.sh of tests/device/tune_bundle.sh: hkgen bench and hkgen tune --catalog on the
# H200, then hkrt_select on the tuned catalogue. hkgen runs here without
# building anything: it needs libyaml's shared object only (carried in
# lib/), no m4, no nvcc; cat/ was built with
# `hkgen build tests/device/bench.yaml` (sm_90a) on the build machine.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OUT="${OUT:-out}"; mkdir -p "$OUT"
TUNED=$(mktemp -d); trap 'rm -rf "$TUNED"' EXIT
P1=layout=nt,M=2048,N=2048,K=2048; P2=layout=nt,M=4096,N=4096,K=4096
P3=layout=nt,M=8192,N=8192,K=8192; P4=layout=nt,M=256,N=8192,K=4096; P5=layout=nt,M=1024,N=1024,K=1024
{
echo "tune bundle, commit $(cat commit.txt), $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null)"
echo "== hkgen bench cat (default problems; packed layouts)"
timeout 60 ./hkgen bench cat -n 20; echo "rc=$?"
echo "== hkgen bench cat, gemm at 2048, 8192 and 256x8192x4096"
timeout 60 ./hkgen bench cat --shape M=2048,N=2048,K=2048 --shape M=8192,N=8192,K=8192 --shape M=256,N=8192,K=4096 -n 20; echo "rc=$?"
echo "== hkgen tune --catalog (a copy of cat)"
cp -r cat "$TUNED/cat"
timeout 90 ./hkgen tune --catalog "$TUNED/cat" -n 20 --shape $P1 --shape $P2 --shape $P3 --shape $P4; echo "rc=$?"
python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1])).get('tuned'), open(sys.argv[2],'w'), indent=1)" \
  "$TUNED/cat/manifest.json" "$OUT/tuned.json"; echo "tuned list rc=$?"
echo "== hkrt_select (CUDA) before and after tuning; the last problem has no tuned entry"
python3 tune_select.py lib/libhkrt.so cat 3 - $P1 $P2 $P3 $P4 $P5 | sed 's/^/before: /'
python3 tune_select.py lib/libhkrt.so "$TUNED/cat" 3 - $P1 $P2 $P3 $P4 $P5 | sed 's/^/after:  /'
echo "== baselines (same run)"
timeout 60 python3 tune_baseline.py; echo "rc=$?"
echo "== hkgen bench cat, attention at 8K (batch 1)"
timeout 60 ./hkgen bench cat --shape batch=1,seqlen_q=8192,seqlen_k=8192,heads_q=32,heads_k=8 -n 20; echo "rc=$?"
echo "== hkgen bench cat again (run-to-run spread)"
timeout 60 ./hkgen bench cat --kernel bn_gemm_tm128_tn256 --shape M=4096,N=4096,K=4096 -n 50; echo "rc=$?"
echo "== json"
timeout 60 ./hkgen bench cat --json --kernel bn_gemm_tm128_tn256 -n 10 > "$OUT/bench.json"; echo "json rc=$?"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('json ok:', d['results'][0]['kernel'], d['results'][0]['median_us'])" "$OUT/bench.json"
} 2>&1 | tee "$OUT/bench.txt"
