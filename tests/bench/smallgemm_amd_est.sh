#!/bin/sh
# smallgemm_amd_est.sh [DIR]: `hkgen inspect --estimate` of the AMD GEMM
# variants for small, skinny and short-K shapes (the H200 benchmark's, see
# tests/device/smallgemm_bench.py): per shape and part (MI355X: gfx950,
# MI325X: gfx942) the default kernel (256 x 256 tiles) and the fastest
# estimated variant (64- and 128-row tiles, split_k 2 to 8). Builds the
# catalogue into DIR (default build/smallgemm_amd) with build/hkgen.
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
printf '| shape (M x N x K) | part | default 256x256 us | best variant | its us | speed-up |\n|---|---|---|---|---|---|\n'
for shape in 1024,1024,1024 8192,8192,1024 \
  1,6144,4096 1,4096,4096 1,28672,4096 1,4096,14336 1,10240,8192 1,8192,8192 1,57344,8192 1,8192,28672 \
  16,6144,4096 16,4096,4096 16,28672,4096 16,4096,14336 16,10240,8192 16,8192,8192 16,57344,8192 16,8192,28672 \
  64,6144,4096 64,4096,4096 64,28672,4096 64,4096,14336 64,10240,8192 64,8192,8192 64,57344,8192 64,8192,28672 \
  256,6144,4096 256,4096,4096 256,28672,4096 256,4096,14336 256,10240,8192 256,8192,8192 256,57344,8192 256,8192,28672; do
  IFS=, read -r M N K <<EOS
$shape
EOS
  for part in MI355X MI325X; do
    ./build/hkgen inspect "$dir" --estimate $part --shape "M=$M,N=$N,K=$K" | awk -v s="${M}x${N}x${K}" -v p=$part '
      NR > 1 { t = $6; u = $7; us = (u == "ms") ? t * 1000 : t; if ($1 == "dflt") d = us;
               if (best == "" || us < bt) { best = $1; bt = us } }
      END { printf "| %s | %s | %.1f | %s | %.1f | %.2f |\n", s, p, d, best, bt, d / bt }'
  done
done
