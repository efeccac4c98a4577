#!/usr/bin/env python3
"""hkgen's fp8 GEMM on the H200: numerics and benchmarks of an sm_90a catalogue
built from tests/device/h200_fp8.yaml (tests/device/fp8_bundle.sh makes the
bundle; nothing is built on the GPU machine).

    PYTHONPATH=. HKRT_LIB=./libhkrt.so python3 fp8_bench.py CATALOG... [--no-bench | --no-numerics]

(a) numerics: every kernel at small and odd shapes (tails in M, N and K,
    padded and unaligned leading dimensions, a misaligned base: the copy
    engine and the producer's copy paths), fresh random fp8 inputs and
    scales, outputs poisoned with NaN first, against an fp64 product of the
    dequantised inputs; relative L2 < 1e-2, NaN never passes, C outside its
    M x N stays poisoned. Launch errors: a scale tensor of the wrong shape,
    block scales on a K that is not a multiple of 128, must be refused.
    Persistent kernels also run with $HKRT_UNITS 3 and 7 (a few blocks that
    walk many tiles).
(b) benchmarks at 4096^3 and 8192^3 of the kernels of every CATALOG (labelled
    by its folder's name): $FP8_ROUNDS (3) passes over baselines and kernels in
    turn, each a triton.testing.do_bench median, the median of the passes
    reported with their spread; in the same run:
    torch._scaled_mm (cuBLASLt; per tensor with and without fast accumulation,
    per row, and block-wise where this torch has it), and the block-scaled
    baselines we could find; the first CATALOG's persistent kernels at the
    default tiles also at other grid sizes ($HKRT_UNITS 128, and 10^6: one
    unit per block).
Numerics use the first CATALOG and list each kernel's outcome in
$OUT/numerics_<catalog>.txt; the benchmark run (--no-numerics, another
process) times only that catalogue's kernels listed there as passed. Log:
$OUT/fp8_<mode>.log; the summary is printed last. Exit status 1 on any failure.
"""
import datetime
import math
import os
import random
import statistics
import sys
import time
import traceback

import torch

import hkrt

TARGET = "sm_90a"
TOL = 1e-2
ROUNDS = int(os.environ.get("FP8_ROUNDS", "3"))  # timing passes (benchmarks)
args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
CATS = args or ["cat"]
OUT = os.environ.get("OUT") or "."
os.makedirs(OUT, exist_ok=True)
MODE = "bench" if "--no-numerics" in flags else "numerics" if "--no-bench" in flags else "all"
LOG = open(os.path.join(OUT, "fp8_%s.log" % MODE), "w")
HERE = os.path.dirname(os.path.abspath(__file__))
COMMIT = os.environ.get("HK_COMMIT") or (open(os.path.join(HERE, "COMMIT")).read().strip()
                                         if os.path.exists(os.path.join(HERE, "COMMIT")) else "?")
failures = []
summary = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def fail(what, detail):
    failures.append((what, detail))
    log("FAIL", what, detail)


dev = torch.device("cuda")
torch.zeros(1, device=dev)
random.seed(int(os.environ.get("HK_SEED", "0")) or None)
log("device %s, %s UTC, hkgen commit %s, torch %s" % (torch.cuda.get_device_name(0),
                                                     datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                                                     COMMIT, torch.__version__))
cats = {os.path.basename(os.path.normpath(c)): hkrt.Catalog(c, backend="cuda") for c in CATS}
cat = cats[os.path.basename(os.path.normpath(CATS[0]))]
entries = [e for e in cat.manifest["kernels"] if e["target"] == TARGET]
FP8 = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}
LEAD, TAIL = 16, 64


def fp8_buf(n, dt, off):
    """A flat fp8 buffer of off + n + TAIL codes (random normal values) and the n at off."""
    buf = torch.randn(off + n + TAIL, device=dev).to(dt)
    return buf, buf[off:off + n]


def scales(mode, M, N, K):
    """(scale_a, scale_b, the shape arguments) of a mode; scales 2^-3 .. 2^3."""
    def r(*shape):
        return torch.exp2(torch.rand(*shape, device=dev) * 6 - 3).float()
    if mode == "tensor":
        return r(1), r(1), {}
    if mode == "row":
        return r(M), r(N), dict(scale_a_rows=M, scale_a_cols=1, scale_b_rows=N, scale_b_cols=1)
    kb, nb = K // 128, (N + 127) // 128
    return r(kb, M), r(nb, kb), dict(scale_a_rows=kb, scale_a_cols=M, scale_b_rows=nb, scale_b_cols=kb)


def dequant(X, s, mode, rows, K, is_a):
    """X (rows x K codes) as fp64 times its scales."""
    x = X[:rows, :K].double()
    if mode == "tensor":
        return x * s.double()[0]
    if mode == "row":
        return x * s.double()[:rows, None]
    if is_a:  # s: K/128 x M
        return x * s.double().t().repeat_interleave(128, dim=1)[:rows, :K]
    # B: s is cdiv(N,128) x K/128
    return x * s.double().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:rows, :K]


def rel_l2(got, ref):
    got = got.double()
    if bool(torch.isnan(got).any()) or bool(torch.isinf(got).any()):
        return float("inf"), True
    den = ref.norm().item()
    e = (got - ref).norm().item() / (den if den > 0 else 1.0)
    return (float("inf"), True) if math.isnan(e) else (e, False)


def run_case(e, M, N, K, lda, ldb, ldc, off):
    p = e["params"]
    dt, mode = FP8[p["dtype"]], p["scale"]
    odt = torch.float32 if p["out"] == "f32" else torch.bfloat16
    Abuf, Af = fp8_buf(M * lda, dt, off)
    Bbuf, Bf = fp8_buf(N * ldb, dt, off)
    A, B = Af.view(M, lda), Bf.view(N, ldb)
    sa, sb, shp = scales(mode, M, N, K)
    Cbuf = torch.full((LEAD + off + M * ldc + TAIL,), float("nan"), device=dev, dtype=odt)
    C = Cbuf[LEAD + off:LEAD + off + M * ldc].view(M, ldc)
    vals = dict(A=A, B=B, C=C, lda=lda, ldb=ldb, ldc=ldc, scale_a=sa, scale_b=sb, **shp)
    for d, v in (("M", M), ("N", N), ("K", K)):
        if d in e["runtime_params"]:
            vals[d] = v
    cat.kernel(e["name"], TARGET)(**vals)
    torch.cuda.synchronize()
    ref = dequant(A, sa, mode, M, K, True) @ dequant(B, sb, mode, N, K, False).t()
    err, nan = rel_l2(C[:, :N], ref)
    mask = torch.zeros(Cbuf.numel(), dtype=torch.bool, device=dev)
    mask[LEAD + off:LEAD + off + M * ldc].view(M, ldc)[:, :N] = True
    outside = int((~torch.isnan(Cbuf[~mask])).sum().item())
    return err, nan, outside


def shapes(mode):
    if mode == "block":
        base = [(1, 1, 128), (17, 9, 128), (100, 77, 256), (130, 257, 384), (513, 257, 1024), (1000, 777, 640),
                (1024, 1024, 4096)]
    else:
        base = [(1, 1, 1), (17, 9, 5), (100, 77, 93), (128, 128, 128), (130, 257, 200), (513, 257, 1031),
                (1000, 777, 333), (1024, 1024, 4096)]
    cases = []
    for i, (M, N, K) in enumerate(base):
        pad = i > 0
        cases.append((M, N, K, K + (random.choice((0, 16, 3)) if pad else 0),
                      K + (random.choice((0, 16, 5)) if pad else 0), N + (random.choice((0, 5, 8)) if pad else 0), 0))
    cases.append((129, 130, 256, 256 + 16, 256, 133, 1))  # misaligned bases: the producer copies
    cases.append((255, 383, 384, 400, 384, 390, 0))
    return cases


def check_errors(e):
    """Launch errors of the scale tensors' shapes and of K (block)."""
    p = e["params"]
    if p["scale"] == "tensor":
        return 0
    dt = FP8[p["dtype"]]
    M, N, K = 64, 64, 256
    A = torch.zeros(M, K, device=dev).to(dt)
    B = torch.zeros(N, K, device=dev).to(dt)
    C = torch.zeros(M, N, device=dev, dtype=torch.float32 if p["out"] == "f32" else torch.bfloat16)
    sa, sb, shp = scales(p["scale"], M, N, K)
    bad = dict(shp)
    bad["scale_a_rows"] += 1
    tried = [("scale_a shape", dict(M=M, N=N, K=K, **bad), "scale_a")]
    if p["scale"] == "block":
        tried.append(("K % 128", dict(M=M, N=N, K=200, **scales("block", M, N, 128)[2]), "multiple of 128"))
    n = 0
    for what, v, want in tried:
        try:
            cat.kernel(e["name"], TARGET)(A=A, B=B, C=C, lda=K, ldb=K, ldc=N, scale_a=sa, scale_b=sb, **v)
            fail(e["name"], "launch with a bad %s was not refused" % what)
        except hkrt.HkrtError as ex:
            if want not in str(ex):
                fail(e["name"], "bad %s: message lacks %r: %s" % (what, want, ex))
            n += 1
    return n


def numerics():
    global PASSED
    PASSED = open(os.path.join(OUT, "numerics_" + os.path.basename(os.path.normpath(CATS[0])) + ".txt"), "w")
    log("\n== (a) numerics of %s: fp64 of the dequantised inputs, rel L2 < %g" % (CATS[0], TOL))
    t0 = time.time()
    for e in entries:
        worst, runs = 0.0, 0
        persistent = "device_units" in e["grid"][0]
        try:
            for units in ((None, "3", "7") if persistent else (None,)):
                if units:
                    os.environ["HKRT_UNITS"] = units
                for (M, N, K, lda, ldb, ldc, off) in shapes(e["params"]["scale"]):
                    err, nan, outside = run_case(e, M, N, K, lda, ldb, ldc, off)
                    runs += 1
                    worst = max(worst, err)
                    if nan or not err < TOL or outside:
                        fail(e["name"], "M=%d N=%d K=%d lda=%d ldb=%d ldc=%d off=%d units %s: rel %.3e nan %s "
                             "outside %d" % (M, N, K, lda, ldb, ldc, off, units, err, nan, outside))
                os.environ.pop("HKRT_UNITS", None)
            nerr = check_errors(e)
        except Exception as ex:
            os.environ.pop("HKRT_UNITS", None)
            fail(e["name"], "exception: %s" % traceback.format_exc(limit=3))
            if "illegal" in str(ex) or "CUDA error" in str(ex):
                break
            nerr = 0
        log("%-40s %2d runs  worst rel L2 %.3e  launch errors refused %d" % (e["name"], runs, worst, nerr))
        # the benchmark run (another process) times the kernels passed here,
        # kernel by kernel (a hang later costs only the kernels after it)
        PASSED.write("%s %s\n" % ("fail" if any(w == e["name"] for w, _ in failures) else "ok", e["name"]))
        PASSED.flush()
    log("numerics: %d kernels, %d failures, %.1f s" % (len(entries), len(failures), time.time() - t0))


if MODE != "bench":
    numerics()


# ---------------------------------------------------------------- (b) benchmarks
def bench():
    import triton.testing

    def med(fn):
        return triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median")

    def tf(S, ms):
        return 2.0 * S ** 3 / ms / 1e9

    for S in (4096, 8192):
        log("\n-- %d^3, e4m3, bf16 out" % S)
        dt = torch.float8_e4m3fn
        a = torch.randn(S, S, device=dev).to(dt)
        b = torch.randn(S, S, device=dev).to(dt)  # N x K
        c = torch.empty(S, S, device=dev, dtype=torch.bfloat16)
        one = torch.ones(1, device=dev)
        base = {}
        avail = {}  # baselines that run, timed below with the kernels

        def base_time(name, fn):
            try:
                fn()
                torch.cuda.synchronize()
                avail[name] = fn
            except Exception as ex:
                log("  %-44s unavailable: %s" % (name, str(ex).splitlines()[0][:160]))

        base_time("torch._scaled_mm tensor", lambda: torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.bfloat16))
        base_time("torch._scaled_mm tensor fast_accum",
                  lambda: torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True))
        ra, rb = torch.ones(S, 1, device=dev), torch.ones(1, S, device=dev)
        base_time("torch._scaled_mm row", lambda: torch._scaled_mm(a, b.t(), ra, rb, out_dtype=torch.bfloat16))
        kb = S // 128
        sa_blk = torch.exp2(torch.rand(kb, S, device=dev) - 0.5)  # K/128 x M (M contiguous)
        sb_blk = torch.exp2(torch.rand(S // 128, kb, device=dev) - 0.5)
        # torch's block-wise forms: scale_a M x K/128 with stride (1, M) (1x128), scale_b K/128 x N/128 of b (K x N)
        # the stride forms torch's checks may want, first that runs is kept
        for sa_v, sb_v in ((sa_blk.t(), sb_blk.t()), (sa_blk.t(), sb_blk.t().contiguous()),
                           (sa_blk.t().contiguous(), sb_blk.t().contiguous()), (sa_blk.t(), sb_blk)):
            if "torch._scaled_mm block 1x128/128x128" in avail:
                break
            base_time("torch._scaled_mm block 1x128/128x128",
                      lambda sa_v=sa_v, sb_v=sb_v: torch._scaled_mm(a, b.t(), sa_v, sb_v, out_dtype=torch.bfloat16))
        try:
            import torch.nn.functional as F
            ST = F.ScalingType
            SW = F.SwizzleType
            base_time("F.scaled_mm BlockWise1x128/128x128",
                      lambda: F.scaled_mm(a, b.t(), sa_blk.t(), ST.BlockWise1x128, sb_blk.t(), ST.BlockWise128x128,
                                          swizzle_a=SW.NO_SWIZZLE, swizzle_b=SW.NO_SWIZZLE, output_dtype=torch.bfloat16))
        except Exception as ex:
            log("  F.scaled_mm: unavailable: %s" % str(ex).splitlines()[0][:160])
        abf, bbf = a.to(torch.bfloat16), b.to(torch.bfloat16)
        base_time("torch.matmul bf16 (cuBLAS)", lambda: torch.matmul(abf, bbf.t()))
        if "--dequant" in flags:  # far behind _scaled_mm's block-wise form (2026-12-02: 0.25-0.38 of it)
            sa_x = sa_blk.t().repeat_interleave(128, dim=1)
            sb_x = sb_blk.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)

            def deq():
                return torch.matmul((a.to(torch.bfloat16) * sa_x).to(torch.bfloat16),
                                    (b.to(torch.bfloat16) * sb_x).to(torch.bfloat16).t())
            base_time("dequantise to bf16 + torch.matmul", deq)
            del sa_x, sb_x
        runs = []
        main = list(cats)[0]
        # the other catalogues first; the first only once its numerics passed (fp8_bench.py --no-bench)
        flag = os.path.join(OUT, "numerics_" + main + ".txt")
        passed = {l.split()[1] for l in open(flag) if l.startswith("ok ")} if os.path.exists(flag) else set()
        order = list(cats)[1:] + ([main] if MODE == "all" or passed else [])
        if main not in order and S == 4096:
            log("  (%s not timed: its numerics did not pass)" % main)
        untimed = sorted({w for w, _ in failures} if MODE == "all" else
                         {e["name"] for e in cats[main].manifest["kernels"]} - passed)
        if untimed and S == 4096:
            log("  (not timed: %s; their numerics failed or did not run)" % ", ".join(untimed))
        for label in order:
            ct = cats[label]
            for e in sorted(ct.manifest["kernels"], key=lambda e: e["name"]):
                if e["params"]["dtype"] != "fp8_e4m3" or e["params"]["out"] != "bf16":
                    continue
                if label == main and e["name"] in untimed:
                    continue
                persistent = "device_units" in e["grid"][0]
                sweep = persistent and label == main and e["name"].startswith("f8_")
                for units in ((None, "128", "1000000") if sweep else (None,)):
                    runs.append((label, ct, e, units))
        kern = []  # (name, bound kernel, params, mode, rel err of its output)
        for label, ct, e, units in runs:
            name = "%s:%s%s" % (label, e["name"], "" if units is None else " u=" + units)
            p = e["params"]
            mode = p["scale"]
            if mode == "tensor":
                sa, sb, shp = one, one, {}
            elif mode == "row":
                sa, sb, shp = ra.view(-1), rb.view(-1), dict(scale_a_rows=S, scale_a_cols=1, scale_b_rows=S,
                                                             scale_b_cols=1)
            else:
                sa, sb, shp = sa_blk, sb_blk, dict(scale_a_rows=kb, scale_a_cols=S, scale_b_rows=S // 128,
                                                   scale_b_cols=kb)
            try:
                c.fill_(float("nan"))
                if units:
                    os.environ["HKRT_UNITS"] = units
                try:
                    k = ct.kernel(e["name"], TARGET).bind(A=a, B=b, C=c, lda=S, ldb=S, ldc=S, M=S, N=S, K=S,
                                                         scale_a=sa, scale_b=sb, **shp)
                finally:
                    os.environ.pop("HKRT_UNITS", None)
                k()
                torch.cuda.synchronize()
                rows = 256
                ref = dequant(a, sa, mode, rows, S, True) @ dequant(b, sb, mode, S, S, False).t()
                err, nan = rel_l2(c[:rows], ref)
                if nan or not err < TOL:
                    fail(name, "benchmark output at %d^3: rel %.3e nan %s" % (S, err, nan))
                kern.append((name, k, p, mode, err))
            except Exception:
                fail(name, "benchmark: %s" % traceback.format_exc(limit=3))
        # ROUNDS passes over the baselines and kernels in turn (the card's clock
        # drifts with its power draw), each pass a do_bench median; the median
        # of the passes is reported, with their spread
        times = {n: [] for n in list(avail) + [x[0] for x in kern]}
        for _ in range(ROUNDS):
            for n, fn in avail.items():
                try:
                    times[n].append(med(fn))
                except Exception as ex:
                    log("  %-44s failed: %s" % (n, str(ex).splitlines()[0][:160]))
            for n, k, _p, _m, _e in kern:
                try:
                    times[n].append(med(k))
                except Exception:
                    fail(n, "benchmark: %s" % traceback.format_exc(limit=3))

        def spread(n):
            v = times[n]
            return "%.3f" % ((max(v) - min(v)) / statistics.median(v)) if v else "-"
        for n in avail:
            if not times[n]:
                continue
            t = statistics.median(times[n])
            base[n] = tf(S, t)
            log("  %-44s %.3f ms  %7.1f TFLOP/s  (spread %s; passes %s)"
                % (n, t, base[n], spread(n), " ".join("%.1f" % tf(S, x) for x in times[n])))
        for name, k, p, mode, err in kern:
            if not times[name]:
                continue
            t = statistics.median(times[name])
            f = tf(S, t)
            want = {"tensor": "torch._scaled_mm tensor", "row": "torch._scaled_mm row",
                    "block": "torch._scaled_mm block 1x128/128x128"}[mode]
            ref_t = base.get(want) or (base.get("dequantise to bf16 + torch.matmul") if mode == "block" else None)
            ratio = f / ref_t if ref_t else float("nan")
            fx = base.get("F.scaled_mm BlockWise1x128/128x128") if mode == "block" else None
            log("  %-44s %.3f ms  %7.1f TFLOP/s  x%.3f of %s%s  (tile %sx%s, rel err %.2e, spread %s; passes %s)"
                % (name, t, f, ratio, want if base.get(want) else "dequant+matmul",
                   " (x%.3f of F.scaled_mm)" % (f / fx) if fx else "", p["tile_m"], p["tile_n"], err, spread(name),
                   " ".join("%.1f" % tf(S, x) for x in times[name])))
            summary.append("%d^3 %-40s %7.1f TFLOP/s  x%.3f" % (S, name, f, ratio))
        del a, b, c
        torch.cuda.empty_cache()


if MODE != "numerics" and not any("illegal" in d for _, d in failures):
    try:
        bench()
    except Exception:
        fail("benchmarks", traceback.format_exc(limit=4))

log("\n== summary (%s, commit %s)" % (torch.cuda.get_device_name(0), COMMIT))
for s in summary:
    log(s)
log("%d failures" % len(failures))
for w, d in failures[:20]:
    log("  FAIL %s: %s" % (w, d[:300]))
sys.exit(1 if failures else 0)
