#!/usr/bin/env python3
"""Innermost loops holding HGMMA in `cuobjdump -sass` listings: per loop its
address range, instruction count and opcode histogram (the SASS comparison
of the kept and persistent attention kernels in docs/PERF.md).
    python3 tests/device/sass_loops.py A.sass [B.sass ...]"""
import collections
import re
import sys


def load(path):
    out = []
    for line in open(path):
        m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m:
            out.append((int(m.group(1), 16), m.group(2).strip()))
    return out


def loops(ins):
    """Innermost loops of ins ((address, text) in address order): (first,
    last) index pairs, a loop being a backward branch and its target."""
    index = {a: i for i, (a, _) in enumerate(ins)}
    found = []
    for i, (a, text) in enumerate(ins):
        m = re.search(r'\bBRA\b.*?(0x[0-9a-f]+)', text)
        if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in index:
            found.append((index[int(m.group(1), 16)], i))
    return [(s, e) for s, e in found if not any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2 in found)]


def opcode(text):
    return re.sub(r'^@!?U?P\w+\s+', '', text).split()[0].split('.')[0]



def main():
    for path in sys.argv[1:]:
        ins = load(path)
        print(path)
        for s, e in loops(ins):
            body = ins[s:e + 1]
            if any('HGMMA' in t for _, t in body):
                hist = collections.Counter(opcode(t) for _, t in body)
                print("  %#x-%#x %d instructions:" % (ins[s][0], ins[e][0], e - s + 1),
                      " ".join("%s %d" % kv for kv in hist.most_common(14)),
                      "| BSSY %d BSYNC %d" % (hist["BSSY"], hist["BSYNC"]))


if __name__ == "__main__":
    main()
