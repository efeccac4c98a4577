#!/bin/sh
# norm_select (CTest): the sm_90a norm forward's cost model (gen/op_norm.c,
# norm_plan_cost) ranks a row's kernel at 256 and 512 threads as the H200
# measured them (docs/PERF.md): 512 threads up to a few hundred rows, 256
# from 1024 rows on. `hkgen gen` (no compiler) writes the costs into
# sources.json; norm_select.py evaluates them as hkrt_select does (integer
# arithmetic) at rows 1 ... 16384 and hidden 4096 / 8192. Also: vec: only on
# a hidden that is not a multiple of 8, or in the backward, is a spec error.
. "$(dirname "$0")/../lib/lib.sh"
cat >"$T/sel.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: sm_90a
kernels:
  - op: norm
    name: n
    kind: [rmsnorm, layernorm]
    hidden: [4096, 8192]
    threads: [256, 512]
  - op: norm
    name: n_rt
    kind: rmsnorm
    threads: [256, 512]
SPEC
run_hk "$T/g" gen "$T/sel.yaml" -o "$T/src"
expect_rc 0 "hkgen gen sel.yaml"
python3 "$TESTS_DIR/pipeline/norm_select.py" "$T/src/sources.json" || fail "norm forward's pick by rows"

printf 'hkgen: 1\nkernels:\n  - op: norm\n    name: b\n    target: sm_90a\n    hidden: 4100\n    vec: only\n' >"$T/bad.yaml"
run_hk "$T/b1" gen "$T/bad.yaml" -o "$T/bad"
expect_rc 2 "vec: only at hidden 4100"
grep -q "bad.yaml:[0-9]*:[0-9]*: error: .*vec: only .*a baked hidden that is a multiple of 8 (allowed otherwise: vec: both)" "$T/b1" ||
  { cat "$T/b1" >&2; fail "vec: only at hidden 4100: no clear message"; }
printf 'hkgen: 1\nkernels:\n  - op: norm\n    name: b\n    target: gfx950\n    phase: bwd\n    hidden: 4096\n    vec: only\n' >"$T/bad2.yaml"
run_hk "$T/b2" gen "$T/bad2.yaml" -o "$T/bad2"
expect_rc 2 "vec: only in the backward"
grep -q "needs phase fwd" "$T/b2" || { cat "$T/b2" >&2; fail "vec: only in the backward: no clear message"; }
echo "ok: norm forward picked by rows (256 / 512 threads), vec: only refused where it cannot serve"
