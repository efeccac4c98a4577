#!/bin/sh
# build_sm90: the example specs (GEMM, RoPE, attention) compile for sm_90a with
# nvcc (no GPU needed): exit 0, one .cubin per kernel, the manifest records
# nvcc and zero spills for each, and the sources carry no AMD-only code.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # nvcc dominates; ASan adds nothing here
specs="$TOP/specs/llama3-8b-tp1.yaml $TOP/specs/llama3-8b-tp8.yaml $TOP/specs/llama3-70b-tp8.yaml $TOP/specs/gemm-any.yaml"
# models.yaml derives names the hand-written Llama specs also use: its own catalogue
run_hk "$T/out" build -q --target sm_90a "$TOP/specs/models.yaml" -o "$T/models"
expect_rc 0 "hkgen build --target sm_90a specs/models.yaml"
[ "$(jsonq -c "$T/models/manifest.json" 'kernels[op=attn_fwd]')" -eq 5 ] || fail "models.yaml: expected 5 attention kernels"
[ "$(jsonq -c "$T/models/manifest.json" 'kernels[resources.vgpr_spill!=0]')" -eq 0 ] || fail "a models.yaml kernel spills"
run_hk "$T/out" build -q --target sm_90a $specs -o "$T/cat"
expect_rc 0 "hkgen build --target sm_90a"
m=$T/cat/manifest.json
n=$(jsonq -c "$m" 'kernels.*')
[ "$n" -ge 24 ] || fail "only $n kernels in the sm_90a catalogue"
cubins=$(find "$T/cat/sm_90a" -name '*.cubin' | wc -l)
[ "$cubins" -eq "$n" ] || fail "$cubins cubins for $n kernels"
[ "$(jsonq -c "$m" 'kernels[compiler^=nvcc ]')" -eq "$n" ] || fail "a kernel does not record nvcc as its compiler"
[ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq "$n" ] || fail "a kernel spills (see $m)"
[ "$(jsonq -c "$m" 'kernels[resources.warps_per_sm>=1]')" -eq "$n" ] || fail "a kernel has no occupancy figure"
# a cubin is an ELF for NVIDIA (e_machine 190 = EM_CUDA)
for f in "$T"/cat/sm_90a/*.cubin; do
  [ "$(od -An -tu2 -j18 -N2 "$f" | tr -d ' ')" = 190 ] || fail "$f is not a CUDA ELF object"
done
# sm_90a GEMMs take tensor maps (a recipe each in the manifest: A, B and, C by bulk
# tensor stores being the default, C), a producer plus one consumer warpgroup per 64
# rows, and tile_n 256 when the spec leaves tile_n out;
# the same spec for gfx942 gets its own default, 256 x 256 (8 waves)
cat >"$T/tiles.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: gemm
    layout: [nt, nn]
    target: [sm_90a, gfx942]
  - op: gemm
    name: fixed_tile
    tile_n: 64
    target: sm_90a
SPEC
run_hk "$T/out" build -q "$T/tiles.yaml" -o "$T/tiles"
expect_rc 0 "hkgen build tiles.yaml"
python3 - "$T/tiles/manifest.json" "$T/models/manifest.json" <<'PY' || fail "tile defaults or tensor maps wrong in $T/tiles/manifest.json or $T/models/manifest.json"
import json, sys
ks = json.load(open(sys.argv[1]))["kernels"]
want = {("sm_90a", "nt"): ("128", "256"), ("sm_90a", "nn"): ("128", "256"), ("gfx942", "nt"): ("256", "256"),
        ("gfx942", "nn"): ("256", "256")}
got = {(k["target"], k["params"]["layout"]): (k["params"]["tile_m"], k["params"]["tile_n"]) for k in ks
       if k["name"] != "fixed_tile"}
assert got == want, got
fixed = [k for k in ks if k["name"] == "fixed_tile"][0]
assert fixed["params"]["tile_n"] == "64" and fixed["block"] == [384, 1, 1], fixed
assert all(k["block"] == [512, 1, 1] for k in ks if k["target"] == "gfx942"), "gfx942 GEMM blocks are 8 waves"
for k in ks:
    maps = [a for a in k["kernarg"]["args"] if a["type"] == "hk_tmap"]
    if k["target"] != "sm_90a":
        assert not maps, k["name"]
        continue
    # C by bulk tensor stores unless the spec says otherwise: a map of C too
    assert k["params"]["epilogue"] == "tma", k["name"]
    # and 128-row tiles persistent: at most a block per multiprocessor
    tm128 = k["params"]["tile_m"] == "128"
    assert k["params"]["persistent"] == ("true" if tm128 else "false"), k["name"]
    assert ("device_units" in k["grid"][0]) == tm128, (k["name"], k["grid"])
    assert [a["name"] for a in maps] == ["tmap_a", "tmap_b", "tmap_c"], k["name"]
    assert all(a["offset"] % 64 == 0 for a in maps), k["name"]
    a, b, c = maps[0]["tmap"], maps[1]["tmap"], maps[2]["tmap"]
    assert (c["dims"], c["strides"], c["box"]) == (["N", "M"], ["ldc"], [64, 64]), c
    assert (a["dims"], a["strides"], a["box"][0]) == (["K", "M"], ["lda"], 64), a
    nn = k["params"]["layout"] == "nn"
    assert (b["dims"], b["strides"], b["box"][0]) == ((["N", "K"] if nn else ["K", "N"]), ["ldb"], 64), b
# sm_90a attention: 4-D maps of K and V ([batch][heads_k][seqlen_k][head_dim] by
# strides), boxes of 64 columns x the kernel's key block of one head; d128
# (every models.yaml kernel) is persistent: a map of Q too (128 queries of one
# head) and at most device_units blocks walking the tiles (causal: pairs)
for k in json.load(open(sys.argv[2]))["kernels"]:
    if k["op"] != "attn_fwd":
        continue
    d128 = k["params"]["head_dim"] == "128"
    maps = {a["name"]: a for a in k["kernarg"]["args"] if a["type"] == "hk_tmap"}
    want = ["tmap_k", "tmap_q", "tmap_v"] if d128 else ["tmap_k", "tmap_v"]
    assert sorted(maps) == want and all(a["offset"] % 64 == 0 for a in maps.values()), k["name"]
    bn = 128 if d128 else 64
    for t in "kv":
        r = maps["tmap_" + t]["tmap"]
        assert r == {"tensor": t.upper(), "dims": ["head_dim", "seqlen_k", "heads_k", "batch"],
                     "strides": [t + "_stride_s", t + "_stride_h", t + "_stride_b"],
                     "box": [64, bn, 1, 1], "swizzle": 128}, (k["name"], r)
    if d128:
        r = maps["tmap_q"]["tmap"]
        assert r == {"tensor": "Q", "dims": ["head_dim", "seqlen_q", "heads_q", "batch"],
                     "strides": ["q_stride_s", "q_stride_h", "q_stride_b"],
                     "box": [64, 128, 1, 1], "swizzle": 128}, (k["name"], r)
        pairs = "cdiv(cdiv(" if k["params"]["causal"] == "true" else "cdiv("
        assert k["grid"][0].startswith("min(" + pairs) and k["grid"][0].endswith(",device_units)"), k["grid"]
        assert k["grid"][1:] == ["1", "1"], k["grid"]
    else:
        assert k["grid"][0].startswith("cdiv(") and "device_units" not in k["grid"][0], k["grid"]
PY
# hkgen inspect reads the cubins themselves: registers and static shared memory
# as ptxas reported them into the manifest
run_hk "$T/inspect" inspect "$T/cat"
expect_rc 0 "hkgen inspect on the sm_90a catalogue"
python3 - "$m" "$T/inspect" <<'PY' || fail "hkgen inspect disagrees with the manifest (see $T/inspect)"
import json, sys
man = {k["name"]: k["resources"] for k in json.load(open(sys.argv[1]))["kernels"]}
rows = [l.split() for l in open(sys.argv[2]) if l.split() and l.split()[0] in man]
assert len(rows) == len(man), (len(rows), len(man))
for r in rows:
    assert r[1] == "sm_90a" and int(r[2]) == man[r[0]]["vgpr"] and int(r[5]) == man[r[0]]["lds"], r
PY
# Attention blocks: d128 two consumer warpgroups and a producer (384
# threads), one block of 12 warps per multiprocessor; d64 256 threads and
# two blocks (16 warps), so at most 128 registers, which nothing else
# enforces (one more halves its occupancy).  d128 kernels: models.yaml's.
cat >"$T/d64.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_fwd
    name: a
    head_dim: 64
    causal: [true, false]
    target: sm_90a
  - op: attn_fwd
    name: baked
    head_dim: 64
    causal: true
    batch: 2
    seqlen_q: 77
    seqlen_k: 200
    heads_q: 12
    heads_k: 4
    target: sm_90a
SPEC
run_hk "$T/d64.out" build -q "$T/d64.yaml" -o "$T/d64"
expect_rc 0 "hkgen build (attention occupancy spec)"
python3 - "$T/d64/manifest.json" "$T/models/manifest.json" <<'PY' || fail "attention blocks and occupancy (see $T/d64, $T/models)"
import json, sys
ks = [k for f in sys.argv[1:] for k in json.load(open(f))["kernels"] if k["op"] == "attn_fwd"]
assert sum(k["params"]["head_dim"] == "64" for k in ks) == 3, len(ks)
assert sum(k["params"]["head_dim"] == "128" for k in ks) == 5, len(ks)
for k in ks:
    d128 = k["params"]["head_dim"] == "128"
    assert k["block"] == [384 if d128 else 256, 1, 1], (k["name"], k["block"])
    assert k["resources"]["warps_per_sm"] == (12 if d128 else 16), (k["name"], k["resources"])
PY
# ptxas's note that it serialised the wgmma instructions (C7520) fails the
# build: nvcc wrapped to add the note to its report (a new compiler identity,
# so nothing comes from the cache)
real_nvcc=${HKGEN_NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$real_nvcc" ] || real_nvcc=$(command -v nvcc)
cat >"$T/nvcc" <<WRAP
#!/bin/sh
if [ "\$1" = --version ]; then "$real_nvcc" --version | sed 's/^Build /Build c7520-note-/'; exit; fi
"$real_nvcc" "\$@" || exit
echo "ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized (test)" >&2
WRAP
chmod +x "$T/nvcc"
cat >"$T/one.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_fwd
    head_dim: 128
    target: sm_90a
SPEC
HKGEN_NVCC="$T/nvcc" run_hk "$T/c7520.out" build -q "$T/one.yaml" -o "$T/c7520"
[ "$rc" != 0 ] || fail "a C7520 note did not fail the build"
grep -q "ptxas serialises its wgmma instructions (C7520" "$T/c7520.out" || fail "no C7520 message: $(cat "$T/c7520.out")"
[ ! -e "$T/c7520/manifest.json" ] || fail "a failed build left a manifest"
echo "ok: $n sm_90a kernels, no spills; tile and tensor-map checks; inspect agrees; attention occupancy; C7520 fails a build"
