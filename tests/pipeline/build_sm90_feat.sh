#!/bin/sh
# build_sm90_feat: the sm_90a attention forward's serving features compile
# with nvcc (no GPU needed) without spills: windows with both edges at run
# time, sinks and soft-capping together on d64 and d128 (a block per tile,
# 256 threads: the persistent producer/consumer kernel spilled with
# windows), and sinks with soft-capping on the persistent d128 kernel (384
# threads); the features' arguments come after the dimensions, before the
# tensor maps.  varlen (packed sequences) with them: a block per tile with
# windows (d64, d128), the persistent d128 kernel with sinks and a cap;
# cu_seqlens_q/_k and total_q/_k first among the features, 3-D tensor maps
# over the packed tensors' rows (total_q, total_k).  (The H200 numerics:
# tests/device/attn_feat.py, attn_varlen90.py.)
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # nvcc dominates; ASan adds nothing here
cat >"$T/feat.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_fwd
    name: feat
    head_dim: [64, 128]
    causal: true
    window_left: any
    window_right: any
    sinks: true
    softcap: 30
    target: sm_90a
  - op: attn_fwd
    name: capsink
    head_dim: 128
    sinks: true
    softcap: 50
    target: sm_90a
  - op: attn_fwd
    name: vlwin
    head_dim: [64, 128]
    causal: true
    varlen: true
    window_left: any
    sinks: true
    target: sm_90a
  - op: attn_fwd
    name: vlcap
    head_dim: 128
    causal: true
    varlen: true
    sinks: true
    softcap: 50
    target: sm_90a
SPEC
run_hk "$T/out" build -q "$T/feat.yaml" -o "$T/cat"
expect_rc 0 "hkgen build (sm_90a attention features)"
m=$T/cat/manifest.json
[ "$(jsonq -c "$m" 'kernels.*')" -eq 6 ] || fail "expected 6 kernels in $m"
[ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq 6 ] || fail "a feature kernel spills (see $m)"
[ "$(find "$T/cat/sm_90a" -name '*.cubin' | wc -l)" -eq 6 ] || fail "not one cubin per kernel"
python3 - "$m" <<'PY' || fail "feature kernels' plan or arguments wrong (see $m)"
import json, sys
ks = {k["name"]: k for k in json.load(open(sys.argv[1]))["kernels"]}
assert sorted(ks) == ["capsink", "feat_d128", "feat_d64", "vlcap", "vlwin_d128", "vlwin_d64"], sorted(ks)
for name, block, warps in (("feat_d64", 256, 16), ("feat_d128", 256, 8), ("capsink", 384, 12)):
    k = ks[name]
    assert k["block"] == [block, 1, 1], (name, k["block"])
    assert k["resources"]["warps_per_sm"] == warps, (name, k["resources"])
    args = [a["name"] for a in k["kernarg"]["args"]]
    maps = [a for a in args if a.startswith("tmap_")]
    feats = ["sinks", "window_left", "window_right"] if name.startswith("feat") else ["sinks"]
    assert args[len(args) - len(maps) - len(feats):len(args) - len(maps)] == feats, (name, args)
    assert maps == (["tmap_q", "tmap_k", "tmap_v"] if name == "capsink" else ["tmap_k", "tmap_v"]), (name, maps)
vl = ["cu_seqlens_q", "cu_seqlens_k", "total_q", "total_k"]
for name, block, warps, feats in (("vlwin_d64", 256, 16, ["sinks", "window_left"]),
                                  ("vlwin_d128", 256, 8, ["sinks", "window_left"]), ("vlcap", 384, 12, ["sinks"])):
    k = ks[name]
    assert k["block"] == [block, 1, 1], (name, k["block"])
    assert k["resources"]["warps_per_sm"] == warps, (name, k["resources"])
    args = [a["name"] for a in k["kernarg"]["args"]]
    assert not [a for a in args if a.endswith("_stride_b")], (name, args)
    maps = [a for a in k["kernarg"]["args"] if "tmap" in a]
    assert [a["name"] for a in maps] == (["tmap_q", "tmap_k", "tmap_v"] if name == "vlcap" else ["tmap_k", "tmap_v"]), name
    n = len(maps)
    assert args[len(args) - n - len(feats) - 4:len(args) - n] == vl + feats, (name, args)
    for a in maps:
        t = a["tmap"]
        rows = "total_q" if t["tensor"] == "Q" else "total_k"
        assert t["dims"] == ["head_dim", rows, "heads_q" if t["tensor"] == "Q" else "heads_k"], (name, t)
        assert t["strides"] == [t["tensor"].lower() + "_stride_s", t["tensor"].lower() + "_stride_h"], (name, t)
    assert any(c["rule"] == "total_q >= 0 && total_k >= 0" for c in k["checks"]), (name, k["checks"])
assert ks["vlwin_d128"]["grid"] == ["cdiv(seqlen_q,128)", "heads_q", "batch"], ks["vlwin_d128"]["grid"]
assert ks["vlcap"]["grid"][0] == "min(cdiv(cdiv(seqlen_q,128),2)*heads_q*batch,device_units)", ks["vlcap"]["grid"]
# windows: a block per query tile; the persistent kernel: at most device_units blocks
assert ks["feat_d128"]["grid"] == ["cdiv(seqlen_q,128)", "heads_q", "batch"], ks["feat_d128"]["grid"]
assert ks["capsink"]["grid"][0].endswith(",device_units)"), ks["capsink"]["grid"]
PY
echo "ok: sm_90a attention features (windows, sinks, soft-cap, varlen) compile without spills"
