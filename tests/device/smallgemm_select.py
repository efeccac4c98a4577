#!/usr/bin/env python3
"""smallgemm_select.py MANIFEST SMALLGEMM_JSON [DROP,...] [-v]: hkrt_select's pick
replayed offline. For each shape that smallgemm_bench.py --bench timed (its
smallgemm.json), evaluates every nt kernel's cost formula of MANIFEST (a
catalogue's manifest.json, or the sources.json of `hkgen gen`, so a changed
cost model can be tried without compiling) at device_units = 132 and looks up
the measured time of the cheapest one; kernels named in DROP are left out
(a smaller catalogue). Prints the shapes where the pick is below 0.9 of cuBLAS
(-v: all) and the pick's geomean and count >= 0.9, one launch and back to
back."""
import json
import math
import sys

args = [a for a in sys.argv[1:] if a != "-v"]
verbose = "-v" in sys.argv[1:]
data = json.load(open(args[0]))
man = data["kernels"] if isinstance(data, dict) else data
runs = [json.loads(line) for line in open(args[1])]
meas = [r for r in runs if r.get("phase") == "bench"]
drop = set(args[2].split(",")) if len(args) > 2 and args[2] else set()


def cost(f, M, N, K):  # the formulas' grammar is Python's, but for / (non-negative integers)
    return eval(f.replace("/", "//"), {"cdiv": lambda a, b: -(-a // b), "min": min, "max": max,
                                       "M": M, "N": N, "K": K, "device_units": 132})


ks = [k for k in man if k["params"]["layout"] == "nt" and k["name"] not in drop and k.get("cost")]
one, b2b = [], []
for r in meas:
    M, N, K = r["M"], r["N"], r["K"]
    pick = min(ks, key=lambda k: cost(k["cost"], M, N, K))["name"]  # ties: the first in the manifest
    if pick not in r["ours_us"]:
        print("%s %s M=%d: the pick %s was not timed" % (r["model"], r["proj"], M, pick))
        continue
    x = r["cublas_us"] / r["ours_us"][pick]
    one.append(x)
    b2b.append(r["cublas_b2b_us"] / r["ours_b2b_us"][pick])
    if x < 0.9 or verbose:
        best = min(r["ours_us"], key=r["ours_us"].get)
        print("%-8s %-8s M=%-5d pick %-20s %.3f  fastest %-20s %.3f" % (
            r["model"], r["proj"], M, pick, x, best, r["cublas_us"] / r["ours_us"][best]))
if one:
    def g(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs))
    print("pick: geomean %.3f, min %.3f, %d of %d >= 0.9; back to back geomean %.3f, %d >= 0.9"
          % (g(one), min(one), sum(x >= 0.9 for x in one), len(one), g(b2b), sum(x >= 0.9 for x in b2b)))
