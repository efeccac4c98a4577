#!/usr/bin/env python3
"""Where a kernel's warps spend their time, from Nsight Compute's per-
instruction stall samples (`ncu -i R --page source --print-source sass
--csv`): the share of samples inside the innermost loops that hold HGMMA
(the K/V loops) against the rest (set-up, first and last blocks of a tile,
epilogue), and the instructions outside those loops with the most samples.
The samples outside the loops are split into those before the busiest loop
(the block's set-up, Q, the first block) and after it (the last P V, the
epilogue, and the producer warp's code, which the compiler places last: its
wait loop is usually the top instruction listed).
    python3 tests/device/pc_regions.py SOURCE.csv[.gz] [TOP]"""
import csv
import gzip
import sys

from sass_loops import loops   # the same loop finder as the SASS listings'


def rows(path):
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
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
    hot = [(s, e) for s, e in loops([(a, t) for a, t, _ in ins])
           if any("HGMMA" in ins[k][1] for k in range(s, e + 1))]
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
    if hot:
        first, last = max(hot, key=lambda r: sum(ins[k][2] for k in range(r[0], r[1] + 1)))
        n_pre = sum(ins[k][2] for k in range(first) if k not in inside)
        n_post = sum(ins[k][2] for k in range(last + 1, len(ins)) if k not in inside)
        print("    before the busiest loop: %.1f%%; after it: %.1f%%" % (100.0 * n_pre / total, 100.0 * n_post / total))
    for n, a, t in sorted(out, reverse=True)[:top]:
        print("    %#07x %7d %5.2f%%  %s" % (a, n, 100.0 * n / total, t[:90]))


if __name__ == "__main__":
    main()
