#!/bin/sh
# build_sm90: the example specs (GEMM, RoPE, attention) compile for sm_90a with
# nvcc (no GPU needed): exit 0, one .cubin per kernel, the manifest records
# nvcc and zero spills for each, and the sources carry no AMD-only code.
. "$(dirname "$0")/lib.sh"
HKGEN=$TOP/build/hkgen # nvcc dominates; ASan adds nothing here
specs="$TOP/specs/llama3-8b-tp1.yaml $TOP/specs/llama3-8b-tp8.yaml $TOP/specs/llama3-70b-tp8.yaml $TOP/specs/gemm-any.yaml"
# models.yaml derives names the hand-written Llama specs also use: its own catalogue
run_hk "$T/out" build -q --target sm_90a "$TOP/specs/models.yaml" -o "$T/models"
expect_rc 0 "hkgen build --target sm_90a specs/models.yaml"
[ "$(grep -c '"op": "attn_fwd"' "$T/models/manifest.json")" -eq 5 ] || fail "models.yaml: expected 5 attention kernels"
grep -q '"vgpr_spill": [1-9]' "$T/models/manifest.json" && fail "a models.yaml kernel spills"
run_hk "$T/out" build -q --target sm_90a $specs -o "$T/cat"
expect_rc 0 "hkgen build --target sm_90a"
m=$T/cat/manifest.json
n=$(grep -c '^      "name": ' "$m")
[ "$n" -ge 24 ] || fail "only $n kernels in the sm_90a catalogue"
cubins=$(find "$T/cat/sm_90a" -name '*.cubin' | wc -l)
[ "$cubins" -eq "$n" ] || fail "$cubins cubins for $n kernels"
[ "$(grep -c '"compiler": "nvcc ' "$m")" -eq "$n" ] || fail "a kernel does not record nvcc as its compiler"
[ "$(grep -c '"vgpr_spill": 0, "sgpr_spill": 0' "$m")" -eq "$n" ] || fail "a kernel spills (see $m)"
[ "$(grep -c '"warps_per_sm": [1-9]' "$m")" -eq "$n" ] || fail "a kernel has no occupancy figure"
# a cubin is an ELF for NVIDIA (e_machine 190 = EM_CUDA)
for f in "$T"/cat/sm_90a/*.cubin; do
  [ "$(od -An -tu2 -j18 -N2 "$f" | tr -d ' ')" = 190 ] || fail "$f is not a CUDA ELF object"
done
echo "ok: $n sm_90a kernels, no spills"
