#!/bin/sh
# build_gemm_sched: the sm_90a GEMM's work-unit kernels (split_k, persistent)
# compile with nvcc (no GPU needed) without spills or serialised wgmma; the
# manifest has their 1-D grids, the workspace and counter arguments only
# where split_k > 1, launch rules that hold at exactly the sizes the kernel
# uses and fail one short (naming the argument), a cost model on every
# sm_90a GEMM whose ranking picks split-K for decode shapes, the 128 x 256
# tile for a large square and 128 x 256 stream-K (registers moved to its
# consumers) at 448 such tiles; the kernels without the features
# (one block per tile, which 128-row tiles are only when the spec says
# persistent: false) are the same cubins as a catalogue of them alone.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # nvcc dominates; ASan adds nothing here
cat >"$T/sched.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: sm_90a
kernels:
  - op: gemm
    name: plain
    tile_m: [64, 128]
    persistent: false
  - op: gemm
    name: sk
    tile_m: 64
    tile_n: 128
    split_k: 4
  - op: gemm
    name: sk_nn
    layout: nn
    tile_m: 128
    tile_n: 256
    split_k: 3
  - op: gemm
    name: ps
    persistent: true
  - op: gemm
    name: ps_sk
    tile_m: 64
    tile_n: 256
    split_k: 2
    persistent: true
  - op: gemm
    name: sx
    tile_m: 64
    tile_n: 128
    stream_k: true
  - op: gemm
    name: sx_big
    tile_m: 128
    tile_n: 256
    stream_k: true
SPEC
run_hk "$T/out" build -q "$T/sched.yaml" -o "$T/cat"
expect_rc 0 "hkgen build sched.yaml"
printf 'hkgen: 1\nkernels:\n  - op: gemm\n    name: plain\n    tile_m: [64, 128]\n    persistent: false\n    target: sm_90a\n' >"$T/plain.yaml"
run_hk "$T/out2" build -q "$T/plain.yaml" -o "$T/plain"
expect_rc 0 "hkgen build plain.yaml"
for f in "$T"/plain/sm_90a/*.cubin; do
  cmp -s "$f" "$T/cat/sm_90a/$(basename "$f")" || fail "$(basename "$f") differs next to the work-unit kernels"
done
python3 - "$T/cat/manifest.json" <<'PY' || fail "work-unit kernels' manifest (see $T/cat/manifest.json)"
import json, re, sys
ks = {k["name"]: k for k in json.load(open(sys.argv[1]))["kernels"]}
assert sorted(ks) == ["plain_tm128", "plain_tm64", "ps", "ps_sk", "sk", "sk_nn", "sx", "sx_big"], sorted(ks)
split = {"sk": 4, "sk_nn": 3, "ps_sk": 2, "sx": 0, "sx_big": 0}  # 0: stream-K

def cdiv(a, b):
    return -(-a // b)

def ev(f, **v):  # the formulas' grammar is Python's, but for / (non-negative integers)
    return eval(re.sub(r"&&", " and ", f.replace("/", "//")), {"cdiv": cdiv, "min": min, "max": max}, v)

for n, k in ks.items():
    r = k["resources"]
    assert r["vgpr_spill"] == 0 and r["sgpr_spill"] == 0, (n, r)
    names = [a["name"] for a in k["kernarg"]["args"]]
    s = split.get(n, 1)
    extra = ["workspace", "workspace_bytes", "counters", "counters_len"]
    ws = s != 1
    assert all(x in names for x in extra) == ws and any(x in names for x in extra) == ws, (n, names)
    assert "cost" in k and "device_units" in k["cost"], n
    tm, tn = int(k["params"]["tile_m"]), int(k["params"]["tile_n"])
    if n.startswith("plain"):
        assert k["grid"] == ["cdiv(N,%d)" % tn, "cdiv(M,%d)" % tm, "1"] and "split_k" not in k["tunables"], n
        continue
    ps = n.startswith("ps")
    assert k["tunables"]["split_k"] == max(s, 1) and k["tunables"]["persistent"] == ps, (n, k["tunables"])
    assert k["tunables"]["stream_k"] == (s == 0), (n, k["tunables"])
    # 128 x 256 stream-K alone moves registers to its consumers (setmaxnreg)
    assert k["tunables"]["move_regs"] == (n == "sx_big"), (n, k["tunables"])
    units = "cdiv(M,%d)*cdiv(N,%d)*%s" % (tm, tn, "cdiv(K,64)" if s == 0 else s)
    assert k["grid"] == ["min(%s,device_units)" % units if ps or s == 0 else units, "1", "1"], (n, k["grid"])
    if s == 1:
        continue
    rules = {c["rule"].split()[0]: c for c in k["checks"] if c["rule"].split()[0] in ("workspace_bytes", "counters_len")}
    assert sorted(rules) == ["counters_len", "workspace_bytes"], (n, k["checks"])
    for M, N, K in ((1, 1, 1), (17, 300, 64), (1000, 777, 5000)):
        tiles = cdiv(M, tm) * cdiv(N, tn)
        # stream-K: two partial tiles for each of the grid's blocks (132 SMs)
        ws = min(tiles * cdiv(K, 64), 132) * 2 * tm * tn * 4 if s == 0 else tiles * s * tm * tn * 4
        need = {"workspace_bytes": ws, "counters_len": tiles}
        for arg, v in need.items():
            assert ev(rules[arg]["rule"], M=M, N=N, K=K, device_units=132, **{arg: v}), (n, arg, M, N)
            assert not ev(rules[arg]["rule"], M=M, N=N, K=K, device_units=132, **{arg: v - 1}), (n, arg, M, N)

# the cost model's choice (device_units = 132, an H200)
def pick(M, N, K):
    return min(ks, key=lambda n: (ev(ks[n]["cost"], M=M, N=N, K=K, device_units=132), n))

print({s: pick(*s) for s in ((16, 4096, 4096), (1, 8192, 28672), (8192, 8192, 8192), (256, 57344, 8192))})
assert pick(16, 4096, 4096) in ("sk", "sx"), pick(16, 4096, 4096)
assert pick(1, 8192, 28672) in ("sk", "sx"), pick(1, 8192, 28672)
assert pick(8192, 8192, 8192) in ("ps", "plain_tm128"), pick(8192, 8192, 8192)
# 448 tiles of 128 x 256 on 132 SMs: stream-K evens out the rounds (70B gate_up at 256 tokens,
# 1.007 of cuBLAS against 0.903 on the H200, 2026-12-04); at 8192^3 it rereads the panels
assert pick(256, 57344, 8192) == "sx_big", pick(256, 57344, 8192)
PY
echo "ok: work-unit kernels build, arguments, grids, launch rules and costs; plain kernels unchanged beside them"
