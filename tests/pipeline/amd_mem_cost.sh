#!/bin/sh
# amd_mem_cost (CTest): the manifest "cost" of AMD kernels without matrix work
# (the estimate as a formula, its hot loop's trips scaled by the compulsory
# bytes). RMSNorm / LayerNorm forward, backward and the backward's reduction at
# run-time sizes, a 512-thread forward, baked hidden 4096 at 256 and 512
# threads, and rope with and without its table, on gfx942 and gfx950;
# amd_mem_cost.py checks every cost against `hkgen inspect --estimate` (norm at
# 1 - 65536 rows and hidden 1000 - 8192, rope at decode and prefill shapes) and
# that the cheapest RMSNorm forward by cost is the estimate's fastest.
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
run_hk "$T/b2" build -q -j 1 "$T/rope.yaml" -o "$T/rope"
expect_rc 0 "hkgen build rope.yaml"
python3 "$TESTS_DIR/pipeline/amd_mem_cost.py" "$HKGEN" "$T/norm" "$T/rope" >"$T/out.txt" 2>&1 ||
  { cat "$T/out.txt" >&2; fail "AMD norm and rope costs against the estimate"; }
tail -1 "$T/out.txt"
