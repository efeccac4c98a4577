#!/usr/bin/env python3
"""smallgemm_table.py SMALLGEMM.JSON: the markdown tables of docs/PERF.md's
small-GEMM section from a run of tests/device/smallgemm_bench.py (its
$OUT/smallgemm.json): per projection and M, hkrt_select's pick as a fraction
of cuBLAS (graph replay after an L2 flush; back to back in parentheses),
the squares in microseconds, and the summary counts."""
import json
import math
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if '"phase": "bench"' in l]
BEST = "--best" in sys.argv  # cells: the fastest variant instead of hkrt_select's pick


def ratio(r, ours, cub):
    sel = r.get("selected")
    return r[cub] / r[ours][sel] if sel in r[ours] else None


def best(r, ours, cub):
    return r[cub] / min(r[ours].values()) if r[ours] else None


def cell(r):
    f = best if BEST else ratio
    a, b = f(r, "ours_us", "cublas_us"), f(r, "ours_b2b_us", "cublas_b2b_us")
    return "%.2f (%.2f)" % (a, b) if a and b else "-"


print("| projection (N x K) | M = 1 | M = 16 | M = 64 | M = 256 |")
print("|---|---|---|---|---|")
seen = []
for r in rows:
    key = (r["model"], r["proj"], r["N"], r["K"])
    if r["model"] in ("square", "short-K") or key in seen or ("--no-tp8" in sys.argv and "tp8" in r["model"]):
        continue
    seen.append(key)
    cells = {x["M"]: cell(x) for x in rows if (x["model"], x["proj"], x["N"], x["K"]) == key}
    print("| %s %s %dx%d | %s |" % (r["model"], r["proj"], r["N"], r["K"],
                                    " | ".join(cells.get(m, "-") for m in (1, 16, 64, 256))))
print()
sq = []
for r in rows:
    if r["model"] not in ("square", "short-K"):
        continue
    sel = r["selected"]
    b = min(r["ours_us"], key=r["ours_us"].get)
    sq.append("%dx%dx%d: cuBLAS %.1f us, hkrt_select's %s %.1f us = %.3f (back to back %.3f); fastest %s %.3f"
              % (r["M"], r["N"], r["K"], r["cublas_us"], sel, r["ours_us"][sel], r["cublas_us"] / r["ours_us"][sel],
                 ratio(r, "ours_b2b_us", "cublas_b2b_us"), b, r["cublas_us"] / r["ours_us"][b]))
print("; ".join(sq) + ".")
print()


def stats(f, ours, cub):
    xs = [x for x in (f(r, ours, cub) for r in rows) if x]
    return "%.3f (min %.3f, %d of %d >= 0.9)" % (math.exp(sum(map(math.log, xs)) / len(xs)), min(xs),
                                                  sum(x >= 0.9 for x in xs), len(xs))


print("All %d shapes (TP 8 too), geomean of the ratio: hkrt_select's pick %s, back to back %s; the fastest "
      "variant %s, back to back %s." % (len(rows), stats(ratio, "ours_us", "cublas_us"),
                                        stats(ratio, "ours_b2b_us", "cublas_b2b_us"),
                                        stats(best, "ours_us", "cublas_us"), stats(best, "ours_b2b_us", "cublas_b2b_us")))
