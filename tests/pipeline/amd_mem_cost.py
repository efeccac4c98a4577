#!/usr/bin/env python3
"""amd_mem_cost.py HKGEN LIBHKRT NORM_CAT NORM_EMU ROPE_CAT DECODE_CAT: the cost formulas of the
memory-bound AMD ops, norm and rope (no matrix work: trips by the bytes) and
attn_decode (tests/pipeline/amd_mem_cost.sh). Every kernel of the three
catalogues has a manifest "cost" on its target's default part; evaluated here (integer
arithmetic, as hkrt_select does) at several problems it must be the time of
`hkgen inspect CAT --estimate PART`, and among the RMSNorm forward kernels
that serve a problem the cheapest cost must be the estimate's fastest (a tie
at inspect's printed precision is a tie). hkrt_select on NORM_EMU (the norm
catalogue emulated: libhkrt evaluating the same formulas) must pick the
cheapest of the most specialised fits (baked hidden before run-time)."""
import ctypes
import json
import re
import subprocess
import sys

HKGEN, LIB, NORM, NORM_EMU, ROPE, DEC = sys.argv[1:7]
PARTS = {"gfx942": ("MI300X", 304), "gfx950": ("MI355X", 256)}  # the default parts and their CUs
ROWS = (1, 37, 4096, 65536)
HIDDEN = (1000, 4096, 8192)
ROPE_SHAPES = [dict(batch=b, seq_len=s, heads_q=hq, heads_k=hk, head_dim=d)  # decode, prefill, Llama-3-8B / 70B TP 8
        for b, s in ((1, 1), (64, 1), (1, 4096), (4, 8192)) for hq, hk, d in ((32, 8, 128), (8, 1, 128), (16, 16, 64))]
DEC_SHAPES = [dict(batch=b, q_tokens=qt, heads_q=hq, heads_k=hk, max_blocks=mb, num_blocks=b * mb)
              for b in (1, 32) for qt in (1, 4) for hq, hk in ((32, 8), (8, 1)) for mb in (64, 512)]


def cdiv(a, b):
    return -(-a // b)


def ev(f, **v):  # the formulas' grammar is Python's but for / (non-negative integers) and &&
    return eval(re.sub(r"&&", " and ", f.replace("/", "//")), {"cdiv": cdiv, "min": min, "max": max}, v)


def estimates(cat, part, shape):
    out = subprocess.run([HKGEN, "inspect", cat, "--estimate", part, "--shape",
                          ",".join("%s=%d" % kv for kv in shape.items())], capture_output=True, text=True, check=True).stdout
    us = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) > 6 and f[1] in PARTS and f[5] != "not":
            us[(f[0], f[1])] = float(f[5]) * (1000 if f[6] == "ms" else 1)
    return us


ks = [k for c in (NORM, ROPE, DEC) for k in json.load(open(c + "/manifest.json"))["kernels"]]
bad, picks, selected, checked = [], [], [], 0
for k in ks:
    if "cost" not in k or k.get("cost_part") != PARTS[k["target"]][0]:
        bad.append("%s %s: no cost on %s (%s)" % (k["name"], k["target"], PARTS[k["target"]][0], k.get("cost_part")))
for target, (part, units) in PARTS.items():
    for H in HIDDEN:
        for R in ROWS:
            us = estimates(NORM, part, dict(rows=R, hidden=H))
            serving = []
            for k in ks:
                p = k["params"]
                if k["target"] != target or k["op"] != "norm" or "cost" not in k or p.get("hidden", "any") not in ("any", str(H)):
                    continue
                if (k["name"], target) not in us:
                    bad.append("%s %s rows=%d hidden=%d: no estimate" % (k["name"], target, R, H))
                    continue
                c = ev(k["cost"], rows=R, hidden=H, device_units=units) / 1e6
                e = us[(k["name"], target)]
                checked += 1
                if abs(c / e - 1) > 2e-3:
                    bad.append("%s %s rows=%d hidden=%d: cost %.4g us, estimate %.4g us" % (k["name"], target, R, H, c, e))
                if p["phase"] == "fwd" and p["kind"] == "rmsnorm":
                    serving.append((c, e, k["name"]))
            if serving:
                pick = min(serving)
                best = min(e for _, e, _ in serving)
                picks.append("%s rows=%d hidden=%d: %s %.4g us" % (target, R, H, pick[2], pick[1]))
                if pick[1] != best:
                    bad.append("%s rows=%d hidden=%d: the cheapest cost is %s (%.4g us), the estimate's fastest %.4g us"
                               % (target, R, H, pick[2], pick[1], best))
    for op, cat, shapes in (("rope", ROPE, ROPE_SHAPES), ("attn_decode", DEC, DEC_SHAPES)):
        for shape in shapes:
            us = estimates(cat, part, shape)
            for k in ks:
                if k["target"] != target or k["op"] != op or "cost" not in k:
                    continue
                c = ev(k["cost"], device_units=units, **shape) / 1e6
                e = us.get((k["name"], target))
                checked += 1
                if e is None or abs(c / e - 1) > 2e-3:
                    bad.append("%s %s %s: cost %.4g us, estimate %s us" % (k["name"], target, shape, c, e))
lib = ctypes.CDLL(LIB)
lib.hkrt_error.restype = ctypes.c_char_p
lib.hkrt_kernel_name.restype = ctypes.c_char_p


class Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class Problem(ctypes.Structure):
    _fields_ = [("op", ctypes.c_char_p), ("target", ctypes.c_char_p),
                ("params", ctypes.POINTER(Param)), ("nparams", ctypes.c_size_t)]


for target, (part, units) in PARTS.items():
    dev, cat = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.hkrt_device_open(1, target.encode(), ctypes.byref(dev)) == 0, lib.hkrt_error()
    assert lib.hkrt_catalog_open(dev, NORM_EMU.encode(), ctypes.byref(cat)) == 0, lib.hkrt_error()
    for H in (4096, 8192):
        for R in ROWS:
            pairs = [("kind", "rmsnorm"), ("phase", "fwd"), ("rows", R), ("hidden", H), ("weight_dtype", "bf16"),
                     ("residual", "true"), ("dropout", "0"), ("eps", "1e-5")]
            params = (Param * len(pairs))(*[Param(n.encode(), str(v).encode()) for n, v in pairs])
            k = ctypes.c_void_p()
            if lib.hkrt_select(cat, ctypes.byref(Problem(b"norm", None, params, len(pairs))), ctypes.byref(k)):
                bad.append("%s rows=%d hidden=%d: hkrt_select: %s" % (target, R, H, lib.hkrt_error().decode()))
                continue
            fits = [x for x in ks if x["target"] == target and x["op"] == "norm" and x["params"]["phase"] == "fwd"
                    and x["params"]["kind"] == "rmsnorm" and x["params"].get("hidden", "any") in ("any", str(H))]
            baked = [x for x in fits if "hidden" in x["params"]] or fits
            want = min(baked, key=lambda x: ev(x["cost"], rows=R, hidden=H, device_units=units))["name"]
            got = lib.hkrt_kernel_name(k).decode()
            selected.append("%s rows=%d hidden=%d: hkrt_select %s" % (target, R, H, got))
            if got != want:
                bad.append("%s rows=%d hidden=%d: hkrt_select picked %s, the cheapest fit is %s" % (target, R, H, got, want))
    lib.hkrt_catalog_close(cat)
    lib.hkrt_device_close(dev)
print("\n".join(picks + selected))
if len({p.split(": ")[1].split()[0] for p in picks}) < 2:
    bad.append("every problem picks the same kernel: the test shows nothing")
if bad:
    print("FAIL:\n" + "\n".join(bad), file=sys.stderr)
    sys.exit(1)
print("ok: %d norm, rope and decode costs are their estimates; %d RMSNorm forward picks by cost are the "
      "estimate's fastest; %d hkrt_select picks are the cheapest most specialised fit"
      % (checked, len(picks), len(selected)))
