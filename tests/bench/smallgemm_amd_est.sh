#!/bin/sh
# smallgemm_amd_est.sh [DIR]: `hkgen inspect --estimate` of the AMD GEMM
# variants for small, skinny and short-K shapes (the H200 benchmark's, see
# tests/device/smallgemm_bench.py): per shape and part (MI355X: gfx950,
# MI300X: gfx942, the parts a build's costs are for by default) the default
# kernel (256 x 256 tiles), the fastest estimated variant (64- and 128-row
# tiles, split_k 2 to 8) and hkrt_select's pick (the lowest manifest
# "cost"; tests/pipeline/amd_select.sh checks hkrt_select ranks so), then
# per M the geometric mean of default / pick over the eight projections.
# Builds the catalogue into DIR (default build/smallgemm_amd) with build/hkgen.
set -e
dir=${1:-build/smallgemm_amd}
spec=$(mktemp)
cat >"$spec" <<'SPEC'
hkgen: 1
kernels:
  - op: gemm
    name: dflt
    target: [gfx942, gfx950]
  - op: gemm
    name: t64
    target: [gfx942, gfx950]
    tile_m: 64
    tile_n: [64, 128]
  - op: gemm
    name: sk64
    target: [gfx942, gfx950]
    tile_m: 64
    tile_n: [64, 128]
    split_k: [2, 4, 8]
  - op: gemm
    name: sk128
    target: [gfx942, gfx950]
    tile_m: 128
    tile_n: 128
    split_k: [2, 4]
  - op: gemm
    name: sk256
    target: [gfx942, gfx950]
    split_k: [2, 4]
SPEC
./build/hkgen build -q "$spec" -o "$dir" -j 2
rm -f "$spec"
python3 - "$dir" <<'PY'
import json, math, re, subprocess, sys
d = sys.argv[1]
ks = json.load(open(d + "/manifest.json"))["kernels"]
parts = {"MI355X": ("gfx950", 256), "MI300X": ("gfx942", 304)}  # CUs: device_units
proj = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]
shapes = [(1024, 1024, 1024), (8192, 8192, 1024)] + [(M, N, K) for M in (1, 16, 64, 256) for N, K in proj]
def cdiv(a, b): return -(-a // b)
def ev(f, **v): return eval(f.replace("/", "//"), {"cdiv": cdiv, "min": min, "max": max}, v)
print("| shape (M x N x K) | part | default 256x256 us | fastest variant | its us | hkrt_select's pick | speed-up |")
print("|---|---|---|---|---|---|---|")
gm, off = {}, 0
for M, N, K in shapes:
    for part, (target, units) in parts.items():
        out = subprocess.run(["./build/hkgen", "inspect", d, "--estimate", part, "--shape", "M=%d,N=%d,K=%d" % (M, N, K)],
                             capture_output=True, text=True, check=True).stdout
        us = {f[0]: float(f[5]) * (1000 if f[6] == "ms" else 1) for f in (l.split() for l in out.splitlines()[1:])}
        mine = [k for k in ks if k["target"] == target]
        pick = min(mine, key=lambda k: ev(k["cost"], M=M, N=N, K=K, device_units=units))["name"]
        best = min(us, key=us.get)
        off += us[pick] != us[best]
        print("| %dx%dx%d | %s | %.1f | %s | %.1f | %s | %.2f |" % (M, N, K, part, us["dflt"], best, us[best], pick,
                                                                 us["dflt"] / us[pick]))
        gm.setdefault((part, M if (N, K) in proj else "%dx%dx%d" % (M, N, K)), []).append(us["dflt"] / us[pick])
print("\n| default / pick, geomean | " + " | ".join(parts) + " |\n|---|" + "---|" * len(parts))
for key in dict.fromkeys(k[1] for k in gm):
    print("| %s | %s |" % ("M = %s (8 projections)" % key if isinstance(key, int) else key,
                           " | ".join("%.2fx" % math.exp(sum(map(math.log, gm[(p, key)])) / len(gm[(p, key)])) for p in parts)))
print("\npicks slower than the fastest variant: %d" % off)
PY
