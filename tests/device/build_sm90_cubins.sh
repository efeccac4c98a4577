#!/usr/bin/env bash
# Build the sm_90a GEMM cubins dev_gemm_sm90.py loads: every layout x tile
# combination with run-time M, N, K, from templates/dev/gemm_nt_128x128_any.m4
# retargeted by templates/dev/check_sm90.sh.  Output: $1 (default .sm90cubins/).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/.sm90cubins}
mkdir -p "$out/pro"
for lay in nt nn; do for tm in 64 128; do for tn in 64 128; do
    n=gemm_${lay}_${tm}x${tn}_any
    sed -e "s/gemm_nt_128x128_any/$n/g" -e "s/hkm_p_layout\], \[\[nt\]\]/hkm_p_layout], [[$lay]]/" \
        -e "s/hkm_p_tile_m\], \[\[128\]\]/hkm_p_tile_m], [[$tm]]/" -e "s/hkm_p_tile_n\], \[\[128\]\]/hkm_p_tile_n], [[$tn]]/" \
        -e "s/layout    = nt/layout    = $lay/" \
        "$top/templates/dev/gemm_nt_128x128_any.m4" > "$out/pro/$n.m4"
done; done; done
HK_CHECK_OUT="$out" "$top/templates/dev/check_sm90.sh" "$out"/pro/*.m4
