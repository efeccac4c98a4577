#!/usr/bin/env python3
"""aiter_validate.py AITER_OBJ_DIR [HK_OBJ_DIR] [--hkgen PATH]: hkgen's
estimate of AITER's assembly attention kernels against the MI355X times
HipKittens published for them, a held-out check of the model (nothing here is
fitted: the constants are those compiled into hkgen, fitted on HipKittens'
points by tools/calibrate.py).

AITER_OBJ_DIR holds the objects tools/aiter_anchors.sh extracts. With
HK_OBJ_DIR (tools/hk_anchors_build.sh's objects) the Spearman rank
correlation is also given over HipKittens' 34 points and these together.
Not part of CI: it needs AITER's objects. docs/MODEL.md shows its output.

Published: avg_time_ref (AITER, aiter.flash_attn_func, ms) of HipKittens main
f09e968 analysis/attn/fwd/benchmark/mi355x_{gqa,mha}_{non_,}causal_fwd.json
and analysis/attn/bkwd/benchmark/mi355x_{gqa,mha}_bkwd_{non_,}causal.json;
the batch each ran (16, or 15 where the file's TFLOP/s say so) from the same
files. d64 has no AITER assembly forward on gfx950 (it falls back to CK), so
only d128 is here.

Launches, from AITER 066ac47 hsa/gfx950/fmha_v3_{fwd,bwd}/codegen.py:
forward  grid (ceil(N / ts_qo) / (2 if causal), H, B), 512 threads, ts_qo 256
         (fmha_fwd.csv); a causal workgroup takes two query tiles, one from
         each end, so every workgroup has the same work.
backward the dq_dk_dv kernel (bwd_hd128_bf16[_causal_br]_a32_psskddv: what
         flash_attn_func's defaults, atomic fp32 dQ and a bottom-right causal
         mask, select): grid (ceil(N / ts_kv) / (2 if causal), H, B), 256
         threads, ts_kv 256. Left out and given as an HBM floor (bytes / 8 TB/s
         plus 4.5 us a launch): zeroing the fp32 dQ accumulator, the dO.O
         pre-kernel and the dQ conversion (CK kernels at this commit, no
         AITER object), and for GQA the sum of the per-query-head dK and dV.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402  (run, spearman, the HipKittens points)

D = 128
HBM, LAUNCH = 8.0e12, 4.5e-6  # MI355X's published HBM bandwidth; the fitted launch cost
# case: heads, kv heads, causal, {N: (batch, published ms)}
FWD = [
    ("gqa", 64, 8, 0, {1024: (16, 0.53246), 4096: (16, 7.14446), 16384: (15, 102.17742)}),
    ("gqa causal", 64, 8, 1, {1024: (16, 0.38437), 4096: (16, 3.99504), 16384: (15, 52.93996)}),
    ("mha", 16, 16, 0, {1024: (16, 0.16596), 4096: (16, 1.81631), 16384: (16, 27.43184)}),
    ("mha causal", 16, 16, 1, {1024: (16, 0.12390), 4096: (16, 1.02853), 16384: (15, 13.22134)}),
]
BWD = [
    ("gqa", 64, 8, 0, {1024: (16, 4.57627), 4096: (16, 58.67455), 16384: (15, 847.27774)}),
    ("gqa causal", 64, 8, 1, {1024: (16, 4.55774), 4096: (16, 55.86960), 16384: (15, 494.05412)}),
    ("mha", 16, 16, 0, {1024: (16, 0.58267), 4096: (16, 5.20602), 16384: (16, 73.22935)}),
    ("mha causal", 16, 16, 1, {1024: (16, 0.44193), 4096: (16, 3.13510), 16384: (16, 39.66922)}),
]
# Another run of AITER's non-causal backward in the same repository
# (mi355x_{gqa,mha}_bkwd_non_causal_4warps.json, avg_time_ref, same shapes):
# GQA about twice as fast, MHA 1.2-1.4x slower than the files above.
ALT = {("bwd gqa", 1024): 2.45653, ("bwd gqa", 4096): 28.32263, ("bwd gqa", 16384): 397.49047,
       ("bwd mha", 1024): 0.68739, ("bwd mha", 4096): 7.11093, ("bwd mha", 16384): 105.10811}


def tiles(n, ts, causal):
    t = -(-n // ts)
    return -(-t // 2) if causal else t


def fwd_point(h, hkv, causal, n, b):
    flops = 4.0 * b * h * n * n * D * (0.5 if causal else 1)
    mma = flops * (1 + 256.0 / n) if causal else flops  # a query tile runs to its last key
    byt = 2.0 * b * n * D * 2 * (h + hkv) + 4.0 * b * h * n
    shape = "blocks=%d,block=512,flops=%g,mma_flops=%g,bytes=%g" % (tiles(n, 256, causal) * h * b, flops, mma, byt)
    return shape, 0.0


def bwd_point(h, hkv, causal, n, b):
    flops = 2.5 * 4.0 * b * h * n * n * D * (0.5 if causal else 1)
    mma = flops * (1 + 256.0 / n) if causal else flops  # a key tile runs from its first query
    q = 2.0 * b * n * h * D  # bytes of one bf16 (B, N, H, D) tensor
    kv = 2.0 * b * n * hkv * D
    # reads Q, dO, K, V, LSE, D; writes dK and dV per query head, dQ once as fp32
    byt = 2 * q + 2 * kv + 8.0 * b * h * n + 2 * q + 2 * q
    shape = "blocks=%d,block=256,flops=%g,mma_flops=%g,bytes=%g" % (tiles(n, 256, causal) * h * b, flops, mma, byt)
    # left out: zero dQ acc (write 2q), dO.O (read 2q, write B H N fp32), convert dQ (read 2q, write q),
    # GQA: sum dK, dV over the group (read 2q, write 2kv)
    rest = 2 * q + (2 * q + 4.0 * b * h * n) + 3 * q + (2 * q + 2 * kv if h != hkv else 0)
    launches = 3 + (2 if h != hkv else 0)
    return shape, rest / HBM + launches * LAUNCH


def points():
    """(label, object, shape, published seconds, seconds left out, useful flops, other run's seconds)"""
    out = []
    for kind, cases, obj, fn in (("fwd", FWD, "fwd_hd128_bf16%s.co", fwd_point),
                                 ("bwd", BWD, "bwd_hd128_bf16%s_a32_psskddv.co", bwd_point)):
        for name, h, hkv, causal, runs in cases:
            for n, (b, ms) in sorted(runs.items()):
                shape, rest = fn(h, hkv, causal, n, b)
                suffix = ("_causal_br" if kind == "bwd" else "_causal") if causal else ""
                flops = float(shape.split("flops=")[1].split(",")[0])
                alt = ALT.get(("%s %s" % (kind, name), n))
                out.append(("%s %s N%d B%d" % (kind, name, n, b), obj % suffix, shape, ms / 1e3, rest, flops,
                            alt / 1e3 if alt else None))
    return out


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def main():
    args = sys.argv[1:]
    hkgen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "hkgen")
    if "--hkgen" in args:
        hkgen = args[args.index("--hkgen") + 1]
        del args[args.index("--hkgen"):args.index("--hkgen") + 2]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    print("| # | AITER kernel and problem (MI355X) | published | estimate (main kernel) | + left out | error | "
          "limiter | other run: published, error |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for i, (label, obj, shape, pub, rest, flops, alt) in enumerate(points()):
        pred, lim = calibrate.run(hkgen, os.path.join(args[0], obj), "MI355X", shape)
        tot = pred + rest
        e = tot / pub - 1
        rows.append((label, e, tot, pub, flops))
        print("| %d | %s | %.4g ms (%.0f TFLOP/s) | %.4g ms (%.0f) | %s | %+.0f%% | %s | %s |" % (
            i, label, pub * 1e3, flops / pub / 1e12, pred * 1e3, flops / pred / 1e12,
            "%.3g ms" % (rest * 1e3) if rest else "-", 100 * e, lim,
            "%.4g ms, %+.0f%%" % (alt * 1e3, 100 * (tot / alt - 1)) if alt else "-"))
    print()
    for kind in ("fwd", "bwd mha", "bwd gqa", ""):
        sel = [abs(e) for l, e, _, _, _ in rows if l.startswith(kind)]
        print("%s: median |error| %.1f%%, worst %.0f%% over %d points" % (
            kind or "all", 100 * median(sel), 100 * max(sel), len(sel)))
    rho = calibrate.spearman([t for _, _, t, _, _ in rows], [p for _, _, _, p, _ in rows])
    rate = calibrate.spearman([f / t for _, _, t, _, f in rows], [f / p for _, _, _, p, f in rows])
    print("Spearman over the %d AITER points: time %.3f, TFLOP/s %.3f" % (len(rows), rho, rate))
    if len(args) == 2:
        pred, pub = [t for _, _, t, _, _ in rows], [p for _, _, _, p, _ in rows]
        for label, obj, part, shape, p, _ in calibrate.points():
            pred.append(calibrate.run(hkgen, os.path.join(args[1], obj), part, shape)[0])
            pub.append(p)
        print("Spearman over HipKittens' %d points and these %d together: %.3f" % (
            len(pub) - len(rows), len(rows), calibrate.spearman(pred, pub)))


if __name__ == "__main__":
    main()
