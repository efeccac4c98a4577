#!/bin/sh
# amd_attn_cost (CTest): the manifest "cost" (the estimate as a formula) of
# the AMD attention kernels, attn_fwd (d64 and d128) and attn_bwd (d128),
# causal and not, every dimension at run time, on gfx942 and gfx950: the
# causal ones count their blocks with ctiles (common/expr.h).
# amd_attn_cost.py checks every cost against `hkgen inspect --estimate` at
# square, ragged (seqlen_q above and below seqlen_k), decode-like and long
# problems, MHA and GQA; then hkrt_select on an emulated pair of equally
# specialised forward kernels (one bakes batch, one heads_k) picks the
# cheaper by cost (libhkrt evaluating ctiles).  A kernel with a sliding
# window gets no cost, and the build says why.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the sanitised build reads disassembly some 50x slower
cat >"$T/attn.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: [gfx942, gfx950]
kernels:
  - op: attn_fwd
    name: fwd
    head_dim: [64, 128]
    causal: [true, false]
  - op: attn_bwd
    name: bwd
    head_dim: 128
    causal: [true, false]
SPEC
run_hk "$T/b" build -q -j 1 "$T/attn.yaml" -o "$T/attn"
expect_rc 0 "hkgen build attn.yaml"
cat >"$T/pair.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: gfx950
  head_dim: 128
  causal: true
kernels:
  - op: attn_fwd
    name: fwd_b4
    batch: 4
  - op: attn_fwd
    name: fwd_hk8
    heads_k: 8
SPEC
run_hk "$T/be" build -q -j 1 --emulate "$T/pair.yaml" -o "$T/pair"
expect_rc 0 "hkgen build --emulate pair.yaml"
printf 'hkgen: 1\nkernels:\n  - op: attn_fwd\n    name: win\n    target: gfx950\n    head_dim: 128\n    window_left: 256\n' >"$T/win.yaml"
run_hk "$T/bw" build -j 1 "$T/win.yaml" -o "$T/win"
expect_rc 0 "hkgen build win.yaml"
grep -q "kernel win for gfx950 has no cost formula.*no work formula for its features" "$T/bw" ||
  fail "a windowed kernel's missing cost is not explained: $(cat "$T/bw")"
python3 - "$T/win/manifest.json" <<'PY' || fail "the windowed kernel has a cost"
import json, sys
assert all("cost" not in k for k in json.load(open(sys.argv[1]))["kernels"])
PY
python3 "$TESTS_DIR/pipeline/amd_attn_cost.py" "$HKGEN" "$TOP/build/libhkrt.so" "$T/attn" "$T/pair" >"$T/out.txt" 2>&1 ||
  { cat "$T/out.txt" >&2; fail "AMD attention costs against the estimate"; }
tail -1 "$T/out.txt"
