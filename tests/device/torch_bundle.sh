#!/usr/bin/env bash
# torch_bundle.sh: builds HERE (nvcc, libyaml, m4) the bundle that runs hkrt.py's
# torch ops on the H200 (where nothing is built): build/devbundle/ with
# libhkrt.so, python/hkrt.py, the sm_90a catalogue of tests/device/torch_ops.yaml
# (cat/), tests/device/torch_ops.py, train_block.py, bind_bench.py and run.sh.
# On the GPU machine:  cd BUNDLE && OUT=<dir> bash run.sh
# (logs: $OUT/torch_ops.log, $OUT/train.log, $OUT/bind.log; a summary on stdout).
#   TORCH_ARMS   the training arms (default: sdpa sdpa_cudnn sdpa_efficient hkgen when the
#                catalogue has attn_bwd, else the SDPA backends only)
#   --short      a run of at most 50 s: the backward checks and the training test only
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
b=build/devbundle
make -s build/hkgen build/libhkrt.so
rm -rf "$b" && mkdir -p "$b/python"
./build/hkgen build --target sm_90a tests/device/torch_ops.yaml -o "$b/cat"
rm -f "$b"/cat/*/*.hip  # sources stay here; the manifest's sha256 covers the code objects
cp build/libhkrt.so "$b/"
cp runtime/python/hkrt.py "$b/python/"
cp tests/device/torch_ops.py tests/device/train_block.py tests/device/bind_bench.py "$b/"
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo "+dirty" || true)
echo "$(git rev-parse --short HEAD)$dirty" >"$b/COMMIT"
if grep -q '"op": "attn_bwd"' "$b/cat/manifest.json"; then arms=${TORCH_ARMS:-sdpa sdpa_cudnn sdpa_efficient hkgen}
else arms=${TORCH_ARMS:-sdpa sdpa_cudnn sdpa_efficient}; fi
if [ "${1:-}" = "--short" ]; then
    arms=${TORCH_ARMS:-sdpa sdpa_cudnn hkgen}
    fwd_cmd="echo 'skipped (--short)'" bind_cmd="echo 'skipped (--short)'"
    bwd_t=22 bwd_h=17 train_t=24 train_h=19
else
    fwd_cmd="HANG_S=19 timeout 24 python3 torch_ops.py cat fwd 2>&1 | summary"
    bind_cmd="timeout 9 python3 bind_bench.py cat >\"\$OUT/bind.log\" 2>&1; echo \"bind_bench exit \$?\"; tail -n 12 \"\$OUT/bind.log\""
    bwd_t=26 bwd_h=21 train_t=30 train_h=25
fi
cat >"$b/run.sh" <<EOR
#!/usr/bin/env bash
# hkrt.py's torch ops on the H200 (built by tests/device/torch_bundle.sh at $(cat "$b/COMMIT")).
cd "\$(dirname "\$0")"
export PYTHONUNBUFFERED=1 PYTHONPATH=python HKRT_LIB=\$PWD/libhkrt.so HK_COMMIT=\$(cat COMMIT) HKRT_POISON=1
export OUT=\${OUT:-out}
mkdir -p "\$OUT"
nvidia-smi -L
summary() {  # the verdicts and figures; a traceback whole (30 lines)
    awk '/Traceback|^Timeout/ {tb = 30} tb > 0 {print; tb--; next}
         /^(FAIL|torch_ops|train_block:|bind_bench:)|ok   (torch.compile|compiled|hkgen)|host |steps in|vs sdpa|Error/'
}
echo "== torch_ops.py fwd (\$(date -u +%T))"
$fwd_cmd
echo "== torch_ops.py bwd (\$(date -u +%T))"
HANG_S=$bwd_h timeout $bwd_t python3 torch_ops.py cat bwd 2>&1 | summary
echo "== train_block.py ($arms) (\$(date -u +%T))"
HKRT_POISON=0 HANG_S=$train_h timeout $train_t python3 train_block.py cat $arms 2>&1 | summary  # unpoisoned: its ms/step are figures
echo "== bind_bench.py (\$(date -u +%T))"
$bind_cmd
EOR
du -sh "$b"
echo "bundle $b ready to mark: echo PURPOSE > $b/READY"
