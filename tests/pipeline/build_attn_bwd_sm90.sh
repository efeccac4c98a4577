#!/bin/sh
# build_attn_bwd_sm90: the sm_90a attention-backward kernels
# (templates/attn_bwd.sm90.hip.m4) compile with nvcc (no GPU needed) without
# spills (hkgen build fails on a spill or on ptxas serialising the wgmmas), one
# block of 12 warps per multiprocessor, and their manifest entries carry what
# libhkrt and callers rely on: 384 threads, the dynamic shared memory of the
# plan, a block per key block and KV head, the scratch arguments and their
# launch rules, and the five tensor-map recipes.  Run-time and baked
# dimensions, both head dims, causal and not.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # nvcc dominates; ASan adds nothing here
cat >"$T/bwd.yaml" <<'SPEC'
hkgen: 1
defaults:
  target: sm_90a
kernels:
  - op: attn_bwd
    name: any
    head_dim: [64, 128]
    causal: true
  - op: attn_bwd
    name: gqa
    head_dim: 128
    heads_q: 32
    heads_k: 8
  - op: attn_bwd
    name: baked
    head_dim: 64
    batch: 2
    seqlen_q: 333
    seqlen_k: 170
    heads_q: 12
    heads_k: 4
SPEC
run_hk "$T/out" build -q "$T/bwd.yaml" -o "$T/cat"
expect_rc 0 "hkgen build (sm_90a attn_bwd)"
m=$T/cat/manifest.json
[ "$(find "$T/cat/sm_90a" -name '*.cubin' | wc -l)" -eq 4 ] || fail "expected 4 cubins"
python3 - "$m" <<'PY' || fail "sm_90a attn_bwd manifest entries (see $m)"
import json, sys
ks = json.load(open(sys.argv[1]))["kernels"]
assert len(ks) == 4, len(ks)
for k in ks:
    d = int(k["params"]["head_dim"])
    r = k["resources"]
    assert k["compiler"].startswith("nvcc "), k["compiler"]
    assert r["vgpr_spill"] == 0 and r["sgpr_spill"] == 0 and r["scratch"] == 0, (k["name"], r)
    assert r["warps_per_sm"] == 12 and k["block"] == [384, 1, 1], (k["name"], r, k["block"])
    # K, V, the stages (d128: two of Q and dO, O in a slot of its own; d64: three of Q and dO,
    # D from the D blocks), dS^T (d128: one tile; d64: two), row terms, two dQ buffers,
    # mbarriers, alignment slack
    ring = 2 * 2 * 64 * d * 2 + 64 * d * 2 if d == 128 else 3 * 2 * 64 * d * 2
    ds, rows = (1 if d == 128 else 2) * 128 * 64 * 2, (2 if d == 128 else 3) * 512
    assert k["dynamic_lds"] == 2 * 128 * d * 2 + ring + ds + rows + 2 * 32768 + 256 + 1024, k["dynamic_lds"]
    names = [a["name"] for a in k["kernarg"]["args"]]
    want = ["Q", "K", "V", "O", "dO", "LSE", "dQ", "dK", "dV"] + \
        ["%s_stride_%s" % (t, x) for t in ("q", "k", "v", "o", "do") for x in "bsh"] + ["scale"]
    assert names[:len(want)] == want, names
    assert names[-9:] == ["workspace", "workspace_bytes", "counters", "counters_len",
                          "tmap_q", "tmap_k", "tmap_v", "tmap_o", "tmap_do"], names
    maps = {a["name"]: a for a in k["kernarg"]["args"] if a["type"] == "hk_tmap"}
    assert all(a["offset"] % 64 == 0 for a in maps.values()), k["name"]
    for t, tensor in (("q", "Q"), ("k", "K"), ("v", "V"), ("o", "O"), ("do", "dO")):
        kv = t in "kv"
        rec = maps["tmap_" + t]["tmap"]
        assert rec == {"tensor": tensor, "dims": ["head_dim", "seqlen_k" if kv else "seqlen_q",
                                                   "heads_k" if kv else "heads_q", "batch"],
                       "strides": [t + "_stride_s", t + "_stride_h", t + "_stride_b"],
                       "box": [64, 128 if kv else 64, 1, 1], "swizzle": 128}, (k["name"], rec)
    p = k["params"]
    v = lambda x: p.get(x, x)
    # the D blocks (d64 always; d128 by a rule on the problem), then a block per key block and KV head
    pre = "cdiv(%s*%s*cdiv(%s,64),48)+" % (v("batch"), v("heads_q"), v("seqlen_q"))
    if d == 128:
        pre = ("(%s>%s&&%s*%s<=64)*" % (v("heads_q"), v("heads_k"), v("batch"), v("heads_k")) if p["causal"] in ("true", "1")
               else "(%s>%s&&%s<=8192)*" % (v("heads_q"), v("heads_k"), v("seqlen_k"))) + pre
    assert k["grid"] == [pre + "max(cdiv(%s,128),1)*%s*%s" % tuple(v(x) for x in
                         ("seqlen_k", "heads_k", "batch")), "1", "1"], k["grid"]
    rules = [c["rule"] for c in k["checks"]]
    sq = p.get("seqlen_q", "seqlen_q")
    hb = "%s*%s" % tuple(p.get(x, x) for x in ("batch", "heads_q"))
    # dQ's fp32 sums per 64 queries and a counter, D (from the D blocks or key block 0) and a flag
    ws, nc = "33024", "2*"
    assert "workspace_bytes >= %s*cdiv(%s,64)*%s" % (hb, sq, ws) in rules, rules
    assert "counters_len >= %s%s*cdiv(%s,64)" % (nc, hb, sq) in rules, rules
    assert "do_stride_b%8==0 && do_stride_s%8==0 && do_stride_h%8==0" in rules, rules
PY
# the scratch per problem, from hkgen explain: a formula, with its value when baked
run_hk "$T/explain" explain "$T/bwd.yaml"
expect_rc 0 "hkgen explain"
grep -q "scratch: workspace_bytes >= batch\*heads_q\*cdiv(seqlen_q,64)\*33024$" "$T/explain" || fail "explain: no run-time workspace formula: $(cat "$T/explain")"
grep -q "scratch: workspace_bytes >= 2\*12\*cdiv(333,64)\*33024 (4755456 bytes)" "$T/explain" || fail "explain: no baked workspace size: $(cat "$T/explain")"
grep -q "scratch: counters_len >= 2\*2\*12\*cdiv(333,64) (288 counters)" "$T/explain" || fail "explain: no baked counter count: $(cat "$T/explain")"
# without its blocks-per-SM bound ptxas drops the setmaxnreg hand-over
# (C7508): the build must refuse the kernel, naming the cause
cp -r "${HKGEN_TEMPLATES:-$TOP/templates}" "$T/tpl"
grep -q '^#define HK_BLOCKS_PER_SM 1$' "$T/tpl/attn_bwd.sm90.hip.m4" || fail "attn_bwd.sm90.hip.m4 sets no HK_BLOCKS_PER_SM 1"
sed -i '/^#undef HK_BLOCKS_PER_SM$/d; /^#define HK_BLOCKS_PER_SM 1$/d' "$T/tpl/attn_bwd.sm90.hip.m4"
cat >"$T/one.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_bwd
    name: any
    target: sm_90a
    head_dim: 64
SPEC
HKGEN_TEMPLATES=$T/tpl run_hk "$T/c7508" build -q --no-cache "$T/one.yaml" -o "$T/cat_c7508"
expect_rc 1 "hkgen build of a kernel whose setmaxnreg ptxas ignores"
grep -q "one.yaml:3:5: error: kernel any for sm_90a: ptxas ignores its setmaxnreg (C7508" "$T/c7508" ||
  fail "no C7508 error naming the kernel: $(head -3 "$T/c7508")"
[ ! -e "$T/cat_c7508/manifest.json" ] || fail "a refused build left a manifest"
echo "ok: 4 sm_90a attn_bwd kernels, no spills, 12 warps per SM, manifest plan, scratch rules and tensor maps; an ignored setmaxnreg refused"
