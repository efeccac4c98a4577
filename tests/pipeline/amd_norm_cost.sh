#!/bin/sh
# amd_norm_cost (CTest): the AMD norm kernels' manifest "cost" (the estimate as
# a formula, its hot loop's trips scaled by the compulsory bytes: no matrix
# work). RMSNorm / LayerNorm forward, backward and the backward's reduction at
# run-time sizes, a 512-thread forward and baked hidden 4096 at 256 and 512
# threads, on gfx942 and gfx950; amd_norm_cost.py checks every cost against
# `hkgen inspect --estimate` at 1 - 65536 rows and hidden 1000 - 8192, and that
# the cheapest RMSNorm forward by cost is the estimate's fastest.
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
run_hk "$T/b" build -q -j 1 "$T/norm.yaml" -o "$T/cat"
expect_rc 0 "hkgen build norm.yaml"
python3 "$TESTS_DIR/pipeline/amd_norm_cost.py" "$HKGEN" "$T/cat" >"$T/out.txt" 2>&1 ||
  { cat "$T/out.txt" >&2; fail "AMD norm costs against the estimate"; }
tail -1 "$T/out.txt"
