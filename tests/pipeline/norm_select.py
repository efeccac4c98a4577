#!/usr/bin/env python3
"""norm_select.py SOURCES_JSON: for each norm forward group (kind, hidden baked or
run-time) of `hkgen gen`'s sources.json, the kernel whose cost formula is lowest
at rows R (integer arithmetic, as hkrt_select evaluates it) must be the 512-thread
one for R <= 256 and the 256-thread one for R >= 1024. Exits 1 on a wrong pick."""
import json
import sys

ks = json.load(open(sys.argv[1]))
ks = ks["kernels"] if isinstance(ks, dict) else ks
groups = {}
for k in ks:
    p = k["params"]
    if k["op"] != "norm" or p.get("phase") != "fwd":
        continue
    if not k.get("cost"):
        print("FAIL: %s has no cost formula" % k["name"])
        sys.exit(1)
    groups.setdefault((p["kind"], p.get("hidden", "any")), []).append(k)


def cost(f, rows, hidden):
    return eval(f.replace("/", "//"), {"rows": rows, "hidden": hidden, "min": min, "max": max})


bad = 0
for (kind, hidden), g in sorted(groups.items()):
    if len(g) != 2:
        print("FAIL: %s hidden %s: %d kernels, not 2" % (kind, hidden, len(g)))
        sys.exit(1)
    for H in ([int(hidden)] if hidden != "any" else [4096, 8192]):
        for rows, want in ((1, "512"), (32, "512"), (256, "512"), (1024, "256"), (4096, "256"), (16384, "256")):
            pick = min(g, key=lambda k: cost(k["cost"], rows, H))
            ok = pick["params"]["threads"] == want
            bad += not ok
            got = pick["params"]["threads"]
            print("%s %s hidden %d rows %d: %s (%s threads)%s" % ("ok" if ok else "FAIL", kind, H, rows, pick["name"],
                                                                got, "" if ok else ", want " + want))
sys.exit(1 if bad else 0)
