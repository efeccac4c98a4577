#!/bin/sh
# aiter_anchors.sh AITER_GIT OUT_DIR [COMMIT]: extracts from a clone (bare or
# not) of ROCm/aiter the gfx950 assembly attention code objects whose MI355X
# times HipKittens published beside its own (the "AITER" columns of
# ../shared/anchors/amd-published.md), for tools/aiter_validate.py. Nothing
# is compiled: AITER ships these objects. COMMIT defaults to 066ac47 (9 Nov
# 2025), the last one before HipKittens' paper (arXiv 2511.08083, 11 Nov
# 2025), whose AITER runs these are; the exact version HipKittens ran is not
# recorded. Not part of CI: it needs AITER. Never commit the objects.
set -eu
git=$1 out=$2 rev=${3:-066ac47a546f0f4721c789cf0a315c5b73b62b78}
mkdir -p "$out"
git -C "$git" cat-file -e "$rev^{commit}" || { echo "aiter_anchors: no commit $rev in $git" >&2; exit 2; }
for f in fmha_v3_fwd/fwd_hd128_bf16.co fmha_v3_fwd/fwd_hd128_bf16_causal.co \
  fmha_v3_bwd/bwd_hd128_bf16_a32_psskddv.co fmha_v3_bwd/bwd_hd128_bf16_causal_br_a32_psskddv.co; do
  git -C "$git" show "$rev:hsa/gfx950/$f" >"$out/$(basename "$f")"
  echo "extracted $(basename "$f")"
done
git -C "$git" rev-parse "$rev" >"$out/COMMIT"
