#!/bin/sh
# amd_mem_cost (CTest): the manifest "cost" (the estimate as a formula) of the
# memory-bound AMD ops: norm and rope, whose hot loops' trips scale with the
# compulsory bytes (no matrix work), and attn_decode. RMSNorm / LayerNorm
# forward, backward and the backward's reduction at run-time sizes, a
# 512-thread forward, baked hidden 4096 at 256 and 512 threads; rope with and
# without its table; paged decode d64 / d128 and an fp8 cache; on gfx942 and
# gfx950. amd_mem_cost.py checks every cost against `hkgen inspect --estimate`
# (norm at 1 - 65536 rows and hidden 1000 - 8192, rope at decode and prefill
# shapes, decode at batch 1 / 32, 1 / 4 query tokens, 32:8 / 8:1 heads, 1K /
# 8K pages' keys) and that the cheapest RMSNorm forward by cost is the
# estimate's fastest; hkrt_select on the emulated norm catalogue picks the
# cheapest of the most specialised fits (libhkrt evaluating the formulas).
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the sanitised build reads disassembly some 50x slower
cat >"$T/norm.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: [gfx942, gfx950]
kernels:
  - op: norm
    name: rt
    kind: [rmsnorm, layernorm]
    phase: [fwd, bwd, bwd_reduce]
  - op: norm
    name: t512
    kind: rmsnorm
    threads: 512
  - op: norm
    name: h4k
    kind: [rmsnorm, layernorm]
    hidden: 4096
    threads: [256, 512]
SPEC
printf 'hkgen: 1\ndefaults:\n  target: [gfx942, gfx950]\nkernels:\n  - op: rope\n    name: rope\n    table: [true, false]\n' >"$T/rope.yaml"
run_hk "$T/b" build -q -j 1 "$T/norm.yaml" -o "$T/norm"
expect_rc 0 "hkgen build norm.yaml"
run_hk "$T/be" build -q -j 1 --emulate "$T/norm.yaml" -o "$T/norm_emu"
expect_rc 0 "hkgen build --emulate norm.yaml"
run_hk "$T/b2" build -q -j 1 "$T/rope.yaml" -o "$T/rope"
expect_rc 0 "hkgen build rope.yaml"
cat >"$T/dec.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: [gfx942, gfx950]
kernels:
  - op: attn_decode
    name: dec
    head_dim: [64, 128]
    block_size: 16
  - op: attn_decode
    name: dec_fp8
    target: gfx950
    kv_dtype: fp8_e4m3
    head_dim: 128
    block_size: 32
SPEC
run_hk "$T/b3" build -q -j 1 "$T/dec.yaml" -o "$T/dec"
expect_rc 0 "hkgen build dec.yaml"
python3 "$TESTS_DIR/pipeline/amd_mem_cost.py" "$HKGEN" "$TOP/build/libhkrt.so" "$T/norm" "$T/norm_emu" "$T/rope" "$T/dec" >"$T/out.txt" 2>&1 ||
  { cat "$T/out.txt" >&2; fail "AMD norm, rope and decode costs against the estimate"; }
tail -1 "$T/out.txt"
