#!/usr/bin/env python3
"""Where a kernel's warps spend their time, from Nsight Compute's per-
instruction stall samples (`ncu -i R --page source --print-source sass
--csv`): the share of samples inside the innermost loops that hold HGMMA
(the K/V loops) against the rest (set-up, first and last blocks of a tile,
epilogue), and the instructions outside those loops with the most samples.
    python3 tests/device/pc_regions.py SOURCE.csv [TOP]"""
import csv
import re
import sys


def rows(path):
    with open(path, newline="") as f:
        lines = f.readlines()
    head = next(i for i, l in enumerate(lines) if l.startswith('"Address"'))
    rd = csv.DictReader(lines[head:])
    for r in rd:
        yield r


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25
    ins = []
    keys = None
    for r in rows(path):
        if keys is None:
            keys = list(r.keys())
            addr_k = next(k for k in keys if k.strip().lower() == "address")
            src_k = next(k for k in keys if k.strip().lower() == "source")
            samp_k = next(k for k in keys if "Warp Stall Sampling (All" in k)
        try:
            a = int(r[addr_k], 16) if r[addr_k].startswith("0x") else int(r[addr_k])
            n = int(float(r[samp_k] or 0))
        except ValueError:
            continue
        ins.append((a, r[src_k].strip(), n))
    ins.sort()
    index = {a: i for i, (a, _, _) in enumerate(ins)}
    loops = []
    for i, (a, t, _) in enumerate(ins):
        m = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", t)
        if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in index:
            loops.append((index[int(m.group(1), 16)], i))
    loops = [(s, e) for s, e in loops
             if not any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2 in loops)]
    hot = [(s, e) for s, e in loops if any("HGMMA" in ins[k][1] for k in range(s, e + 1))]
    inside = set(k for s, e in hot for k in range(s, e + 1))
    total = sum(n for _, _, n in ins) or 1
    print("%s: %d instructions, %d samples; HGMMA loops %s" % (path, len(ins), total,
          " ".join("%#x-%#x" % (ins[s][0], ins[e][0]) for s, e in hot)))
    for s, e in hot:
        n = sum(ins[k][2] for k in range(s, e + 1))
        print("  loop %#x-%#x: %d samples (%.1f%%)" % (ins[s][0], ins[e][0], n, 100.0 * n / total))
    out = [(n, a, t) for k, (a, t, n) in enumerate(ins) if k not in inside]
    n_out = sum(n for n, _, _ in out)
    print("  outside the loops: %d samples (%.1f%%)" % (n_out, 100.0 * n_out / total))
    for n, a, t in sorted(out, reverse=True)[:top]:
        print("    %#07x %7d %5.2f%%  %s" % (a, n, 100.0 * n / total, t[:90]))


main()
