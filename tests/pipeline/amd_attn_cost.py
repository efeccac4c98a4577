#!/usr/bin/env python3
"""amd_attn_cost.py HKGEN LIBHKRT ATTN_CAT PAIR_EMU: the cost formulas of the AMD
attention kernels (tests/pipeline/amd_attn_cost.sh). Every kernel of ATTN_CAT
has a manifest "cost" on its target's default part; evaluated here (integer
arithmetic, as hkrt_select does; ctiles by its definition, tile by tile) at
each problem it must be the time of `hkgen inspect CAT --estimate PART`.
hkrt_select on PAIR_EMU (two forward kernels, one baked batch, one baked
heads_k: equally specialised) must pick the one the costs say is cheaper."""
import ctypes
import json
import re
import subprocess
import sys

HKGEN, LIB, ATTN, PAIR = sys.argv[1:5]
PARTS = {"gfx942": ("MI300X", 304), "gfx950": ("MI355X", 256)}  # the default parts and their CUs
SHAPES = [dict(batch=b, seqlen_q=sq, seqlen_k=sk, heads_q=hq, heads_k=hk)
          for b, sq, sk in ((1, 1000, 1000), (4, 4096, 4096), (2, 333, 170), (2, 170, 333), (1, 1, 8192),
                            (3, 129, 4097), (1, 16384, 16384))
          for hq, hk in ((32, 8), (12, 4), (16, 16))]


def cdiv(a, b):
    return -(-a // b)


def ctiles(rows, cols, R, C):  # the definition: tiles holding a pair with c <= r + cols - rows
    return sum(1 for r0 in range(0, rows, R) for c0 in range(0, cols, C)
               if c0 <= min(r0 + R, rows) - 1 + cols - rows)


def ev(f, **v):  # the formulas' grammar is Python's but for / (non-negative integers) and &&
    return eval(re.sub(r"&&", " and ", f.replace("/", "//")),
                {"cdiv": cdiv, "min": min, "max": max, "ctiles": ctiles}, v)


def estimates(cat, part, shape):
    out = subprocess.run([HKGEN, "inspect", cat, "--estimate", part, "--shape",
                          ",".join("%s=%d" % kv for kv in shape.items())], capture_output=True, text=True, check=True).stdout
    us = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) > 6 and f[1] in PARTS and f[5] != "not":
            us[(f[0], f[1])] = float(f[5]) * (1000 if f[6] == "ms" else 1)
    return us


ks = json.load(open(ATTN + "/manifest.json"))["kernels"]
bad, checked = [], 0
for k in ks:
    if "cost" not in k or k.get("cost_part") != PARTS[k["target"]][0]:
        bad.append("%s %s: no cost on %s (%s)" % (k["name"], k["target"], PARTS[k["target"]][0], k.get("cost_part")))
    elif "causal" in k["params"] and k["params"]["causal"] == "true" and "ctiles(" not in k["cost"]:
        bad.append("%s %s: a causal cost without ctiles" % (k["name"], k["target"]))
for target, (part, units) in PARTS.items():
    for shape in SHAPES:
        us = estimates(ATTN, part, shape)
        for k in ks:
            if k["target"] != target or "cost" not in k:
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


pair = json.load(open(PAIR + "/manifest.json"))["kernels"]
dev, cat = ctypes.c_void_p(), ctypes.c_void_p()
assert lib.hkrt_device_open(1, b"gfx950", ctypes.byref(dev)) == 0, lib.hkrt_error()
assert lib.hkrt_catalog_open(dev, PAIR.encode(), ctypes.byref(cat)) == 0, lib.hkrt_error()
picks, names = [], set()
for sq, sk in ((128, 128), (1000, 1000), (4096, 4096), (333, 8192), (16384, 16384)):
    shape = dict(batch=4, seqlen_q=sq, seqlen_k=sk, heads_q=32, heads_k=8)
    pairs = [("head_dim", 128), ("causal", "true")] + list(shape.items())
    params = (Param * len(pairs))(*[Param(n.encode(), str(v).encode()) for n, v in pairs])
    kp = ctypes.c_void_p()
    if lib.hkrt_select(cat, ctypes.byref(Problem(b"attn_fwd", None, params, len(pairs))), ctypes.byref(kp)):
        bad.append("%s: hkrt_select: %s" % (shape, lib.hkrt_error().decode()))
        continue
    costs = {x["name"]: ev(x["cost"], device_units=256, **shape) for x in pair}
    got = lib.hkrt_kernel_name(kp).decode()
    names.add(got)
    picks.append("sq=%d sk=%d: hkrt_select %s (costs %s)" % (sq, sk, got, costs))
    if costs[got] != min(costs.values()):
        bad.append("sq=%d sk=%d: hkrt_select picked %s, the cheaper cost is %s" % (sq, sk, got, min(costs, key=costs.get)))
lib.hkrt_catalog_close(cat)
lib.hkrt_device_close(dev)
print("\n".join(picks))
if bad:
    print("FAIL:\n" + "\n".join(bad), file=sys.stderr)
    sys.exit(1)
print("ok: %d attention costs are their estimates (ctiles for the causal ones); %d hkrt_select picks are the "
      "cheaper of two equally specialised kernels" % (checked, len(picks)))
