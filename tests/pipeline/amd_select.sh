#!/bin/sh
# amd_select (CTest): run-time selection of AMD GEMMs by the estimate.
# hkgen build writes each AMD kernel's estimate (docs/MODEL.md) as its
# manifest "cost", a formula of the problem, on the target's default part
# (--part names another); hkrt_select ranks fitting kernels by it. A small
# catalogue of gfx942 and gfx950 bf16 GEMM variants (256 x 256, 128 x 128,
# 64 x 128, split_k 2-8) and fp8 tiles is built twice, for the GPU and
# emulated (the same costs); for M = 1, 16, 64, 256 at Llama-3-8B
# projections and at 8192^3, amd_select.py checks hkrt_select's pick on the
# emulator against `hkgen inspect --estimate`'s fastest, computed there, and
# every cost against its estimate. Bad --part values are refused (2).
. "$(dirname "$0")/../lib/lib.sh"
# the big catalogue and the inspect runs with the plain build (the sanitised
# one reads disassembly some 50x slower); the small builds below sanitised
FAST=$TOP/build/hkgen
cat >"$T/sel.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: [gfx942, gfx950]
kernels:
  - op: gemm
    name: dflt
  - op: gemm
    name: t128
    tile_m: 128
    tile_n: 128
  - op: gemm
    name: t64
    tile_m: 64
    tile_n: 128
  - op: gemm
    name: sk64
    tile_m: 64
    tile_n: 128
    split_k: [2, 4, 8]
  - op: gemm
    name: sk128
    tile_m: 128
    tile_n: 128
    split_k: [2, 4]
  - op: gemm
    name: f8
    target: gfx950
    dtype: fp8_e4m3
    scale: tensor
    tile_m: [64, 128, 256]
  - op: gemm
    name: f8
    target: gfx942
    dtype: fp8_e4m3_fnuz
    scale: tensor
    tile_m: [64, 128, 256]
SPEC
SANITISED=$HKGEN
HKGEN=$FAST
run_hk "$T/b1" build -q -j 1 "$T/sel.yaml" -o "$T/gpu"
expect_rc 0 "hkgen build sel.yaml"
run_hk "$T/b2" build -q -j 1 --emulate "$T/sel.yaml" -o "$T/emu"
expect_rc 0 "hkgen build --emulate sel.yaml"
HKGEN=$SANITISED
python3 "$TESTS_DIR/pipeline/amd_select.py" "$FAST" "$TOP/build/libhkrt.so" "$T/gpu" "$T/emu" >"$T/sel.txt" 2>&1 ||
  { cat "$T/sel.txt" >&2; fail "hkrt_select against the estimate"; }
tail -1 "$T/sel.txt"

# --part: the costs are for the part named (gfx942 on MI325X: its 6.0 TB/s), the other target's stay;
# sanitised, GPU and emulated (the emulated costs from the GPU objects, here from the cache)
printf 'hkgen: 1\nkernels:\n  - op: gemm\n    name: one\n    target: [gfx942, gfx950]\n' >"$T/one.yaml"
run_hk "$T/b3" build -q --part MI325X "$T/one.yaml" -o "$T/p325"
expect_rc 0 "hkgen build --part MI325X"
run_hk "$T/b3e" build -q --emulate --part MI325X "$T/one.yaml" -o "$T/p325e"
expect_rc 0 "hkgen build --emulate --part MI325X"
[ "$(jsonq "$T/p325e/manifest.json" 'kernels.*.cost')" = "$(jsonq "$T/p325/manifest.json" 'kernels.*.cost')" ] ||
  fail "--emulate --part MI325X: other costs than the GPU build's"
[ "$(jsonq "$T/p325/manifest.json" 'kernels[target=gfx942].cost_part')" = MI325X ] || fail "--part MI325X: cost_part"
[ "$(jsonq "$T/p325/manifest.json" 'kernels[target=gfx950].cost_part')" = MI355X ] || fail "--part MI325X changed gfx950's part"
[ "$(jsonq "$T/p325/manifest.json" 'kernels[target=gfx942].cost')" != "$(jsonq "$T/gpu/manifest.json" 'kernels[name=dflt][target=gfx942].cost')" ] ||
  fail "--part MI325X: the same cost as on MI300X"
run_hk "$T/b4" build -q --part MI999X "$T/one.yaml" -o "$T/bad"
expect_rc 2 "--part MI999X"
grep -q "'MI999X' is not an AMD part the estimate models; allowed: MI210 (gfx90a), MI250X (gfx90a), MI300X (gfx942), MI325X (gfx942), MI350X (gfx950), MI355X (gfx950)" "$T/b4" ||
  { cat "$T/b4" >&2; fail "--part MI999X: no clear message"; }
run_hk "$T/b5" build -q --part MI300X,MI325X "$T/one.yaml" -o "$T/bad"
expect_rc 2 "--part MI300X,MI325X"
grep -q "two parts of gfx942" "$T/b5" || { cat "$T/b5" >&2; fail "two parts of one target: no clear message"; }
echo "ok: AMD costs in both catalogues, hkrt_select follows the estimate, --part"
