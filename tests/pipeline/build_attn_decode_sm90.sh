#!/bin/sh
# build_attn_decode_sm90: attn_decode kernels for sm_90a (head_dim 64 and
# 128, run-time shapes; a run-time window with sinks, a soft cap and
# check_tables; an fp8 cache with a window and sinks; 4 tokens x GQA 8
# baked, which takes two 16-row m-tiles per warp) compile with nvcc: no
# spills, no local memory at all, one block of 8 warps (256 threads) per
# multiprocessor within the 227 KiB a block may have.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # nvcc dominates; ASan adds nothing here
cat >"$T/dec.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_decode
    name: any
    head_dim: [64, 128]
    target: sm_90a
  - op: attn_decode
    name: feat
    head_dim: 128
    block_size: 32
    window_left: any
    sinks: true
    softcap: 30
    check_tables: true
    target: sm_90a
  - op: attn_decode
    name: fp8
    kv_dtype: fp8_e4m3
    head_dim: 128
    block_size: 64
    window_left: any
    sinks: true
    target: sm_90a
  - op: attn_decode
    name: q4g8
    head_dim: 128
    q_tokens: 4
    heads_q: 8
    heads_k: 1
    target: sm_90a
SPEC
run_hk "$T/out" build -q "$T/dec.yaml" -o "$T/cat"
expect_rc 0 "hkgen build (attn_decode for sm_90a)"
python3 - "$T/cat/manifest.json" <<'PY' || fail "attn_decode sm_90a resources (see $T/cat/manifest.json)"
import json, sys
ks = json.load(open(sys.argv[1]))["kernels"]
assert len(ks) == 5, [k["name"] for k in ks]
for k in ks:
    r = k["resources"]
    assert k["compiler"].startswith("nvcc "), (k["name"], k["compiler"])
    assert r["vgpr_spill"] == 0 and r["sgpr_spill"] == 0 and r["scratch"] == 0, (k["name"], r)
    assert k["block"] == [256, 1, 1] and r["warps_per_sm"] == 8, (k["name"], k["block"], r)
    assert 0 < k["dynamic_lds"] <= 232448, (k["name"], k["dynamic_lds"])
    assert "device_units" in k["grid"][0], (k["name"], k["grid"])
# the baked 32 rows fit one row group (two m-tiles), the run-time shapes 16 per group
q4 = [k for k in ks if k["name"] == "q4g8"][0]
assert q4["grid"][1] == "1*cdiv(4*(8/1),32)", q4["grid"]
assert all(k["grid"][1].endswith(",16)") for k in ks if k["name"] != "q4g8"), [k["grid"] for k in ks]
PY
[ "$(find "$T/cat/sm_90a" -name '*.cubin' | wc -l)" -eq 5 ] || fail "expected 5 cubins"
echo "ok: 5 attn_decode kernels for sm_90a, no spills, no local memory, 8 warps per SM"
