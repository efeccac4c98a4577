#!/bin/sh
# tune_choice.sh (CTest tune_choice), issue #16: gemm tiles left to hkgen on
# an AMD target with every dimension baked are chosen by the estimate at
# build time among the op's nine, recorded in the manifest ("choice") and
# shown by explain; a kernel that sets its tiles gets no record.
. "$(dirname "$0")/../lib/lib.sh"
cat >"$T/c.yaml" <<'Y'
kernels:
  - op: gemm
    name: cg
    target: gfx950
    M: 256
    N: 8192
    K: 1024
  - op: gemm
    name: cp
    target: gfx950
    M: 256
    N: 8192
    K: 1024
    tile_m: 256
    tile_n: 256
Y
run_hk "$T/c.txt" build "$T/c.yaml" -o "$T/ccat" -j2
expect_rc 0 "build with a tile choice"
C="$T/ccat/manifest.json"
[ "$(jsonq "$C" "kernels[name=cg].choice.by")" = estimate ] || fail "no choice recorded for cg"
[ "$(jsonq "$C" "kernels[name=cg].choice.part")" = MI355X ] || fail "choice: the part"
[ "$(jsonq -c "$C" "kernels[name=cg].choice.candidates.*")" = 9 ] || fail "choice: nine tile candidates"
python3 - "$C" <<'PY' || fail "choice: the chosen tiles are not the fastest candidate's, or not the kernel's"
import json, sys
k = [k for k in json.load(open(sys.argv[1]))["kernels"] if k["name"] == "cg"][0]
ch = k["choice"]
best = min((c for c in ch["candidates"] if "us" in c), key=lambda c: c["us"])
assert ch["chosen"] == {p: best[p] for p in ch["chosen"]} and {"tile_m", "tile_n"} <= set(ch["chosen"]), ch
assert k["params"]["tile_m"] == best["tile_m"] and k["params"]["tile_n"] == best["tile_n"], k["params"]
PY
python3 -c "import json,sys; sys.exit(any('choice' in k for k in json.load(open(sys.argv[1]))['kernels'] if k['name'] == 'cp'))" "$C" ||
  fail "a kernel that sets its tiles got a choice"

grep -q "cg (gfx950): tuning chosen by the estimate on MI355X" "$T/c.txt" || fail "build does not say what it chose"
# explain from the cache, by the binary without ASan: under ASan each of the
# nine estimates takes about 2 s (comgr and the disassembly), without it 0.2
rc=0
"$TOP/build/hkgen" explain "$T/c.yaml" >"$T/x.txt" 2>&1 || rc=$?
hk_out="$T/x.txt"
expect_rc 0 "explain"
grep -q "^  tuning chosen by the estimate on MI355X: tile_m=.* tile_n=.* .*candidates: 64x64" "$T/x.txt" ||
  fail "explain does not show the choice"
echo "PASS tune_choice"
