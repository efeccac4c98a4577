#!/usr/bin/env python3
"""hkgen's H200 norm suite: numerics and benchmarks of the add + RMSNorm /
LayerNorm kernels of an sm_90a catalogue built from tests/device/h200_norm.yaml.

Run on the GPU machine, from the repository root:
    ./build/hkgen build tests/device/h200_norm.yaml -o build/h200norm
    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/norm_bench.py build/h200norm [--no-bench]

(a) numerics, before any timing: forward (y, s, rstd, mean) and backward (dx,
    dweight, dbias through bwd + bwd_reduce) against torch in fp64 at odd and
    round shapes, fresh random inputs, outputs poisoned with NaN; relative L2 <
    1e-2, NaN never passes. Dropout: with a zero residual s = x * keep / (1 - p),
    so the mask is read off s; the backward must drop exactly those elements
    again (same seed and offset), and about p of them are dropped. The backward
    is run twice: dweight must be the same bits.
(b) benchmarks, triton.testing.do_bench medians (ms), baselines in the same run:
    torch.compile of the same fused expression (forward; backward as the
    analytic gradient, compiled), and a device copy of the same bytes.
    Forward bytes: x and residual read, y and s written (4 x rows x hidden x 2);
    backward: dy, s, ds_in read, dx written (plus the partials, not counted).
The log goes to $OUT/norm.log (else build/norm.log). Exit status non-zero on
any numerics failure.
"""
import os
import sys
import time

import torch

import hkrt

T0 = time.time()
TARGET = "sm_90a"
TOL = 1e-2

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
CAT = args[0] if args else "build/h200norm"
out_dir = os.environ.get("OUT") or "build"
LOG = open(os.path.join(out_dir, "norm.log"), "w")
failures = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def fail(what, detail):
    failures.append((what, detail))
    log("FAIL", what, detail)


dev = torch.device("cuda")
cat = hkrt.Catalog(CAT, backend="cuda")


def K(name):
    return cat.kernel(name, TARGET)


def poison(*shape, dtype=torch.bfloat16):
    return torch.full(shape, float("nan"), dtype=dtype, device=dev)


def rel(ref, got):
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return ((got - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def check(what, ref, got):
    e = rel(ref, got)
    log("  %-44s rel %.3e %s" % (what, e, "ok" if e <= TOL else "FAIL"))
    if not e <= TOL:
        fail(what, "rel %.3e" % e)


def ref_fwd(kind, s, w, b, eps):
    """fp64 y, mean, rstd of s (fp64)."""
    mean = s.mean(-1, keepdim=True) if kind == "layernorm" else torch.zeros_like(s[:, :1])
    var = ((s - mean) ** 2).mean(-1, keepdim=True)
    rstd = 1 / torch.sqrt(var + eps)
    y = (s - mean) * rstd * w + (b if kind == "layernorm" else 0)
    return y, mean[:, 0], rstd[:, 0]


def ref_bwd(kind, s, w, dy, ds_in, eps):
    """fp64 gradients of sum(y * dy) + sum(s * ds_in) through autograd."""
    s = s.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    b = torch.zeros_like(w, requires_grad=True)
    y, _, _ = ref_fwd(kind, s, w, b, eps)
    ((y * dy).sum() + (s * ds_in).sum()).backward()
    return s.grad, w.grad, b.grad


def run_fwd(name, kind, x, res, w, b, seed=0, offset=0, dropout=False):
    R, H = x.shape
    y, s_out = poison(R, H), poison(R, H)
    rstd, mean = poison(R, dtype=torch.float32), poison(R, dtype=torch.float32)
    a = dict(x=x, residual=res, weight=w, y=y, s_out=s_out, rstd=rstd, rows=R)
    if "hidden" in [x["name"] for x in K(name).entry["kernarg"]["args"]]:
        a["hidden"] = H
    if kind == "layernorm":
        a.update(bias=b, mean=mean)
    if dropout:
        a.update(seed=seed, offset=offset)
    K(name)(**a)
    torch.cuda.synchronize()
    return y, s_out, rstd, mean, a


def run_bwd(name, kind, s, w, rstd, mean, dy, ds_in, seed=0, offset=0, dropout=False):
    R, H = s.shape
    bwd_name = name.replace("_fwd", "_bwd")
    parts = min(R, int(K(bwd_name).entry["tunables"]["parts"]))  # the backward's partial rows
    dx, dres = poison(R, H), poison(R, H)
    dwp, dbp = poison(parts, H, dtype=torch.float32), poison(parts, H, dtype=torch.float32)
    dw, db = poison(H, dtype=torch.float32), poison(H, dtype=torch.float32)
    a = dict(dy=dy, s=s, weight=w, rstd=rstd, ds_in=ds_in, dx=dx, dw_part=dwp, rows=R)
    if "hidden" in [x["name"] for x in K(name).entry["kernarg"]["args"]]:
        a["hidden"] = H
    if kind == "layernorm":
        a.update(mean=mean, db_part=dbp)
    if dropout:
        a.update(seed=seed, offset=offset, dres=dres)
    red = dict(dw_part=dwp, dweight=dw, rows=R, hidden=H)
    if kind == "layernorm":
        red.update(db_part=dbp, dbias=db)
    K(bwd_name)(**a)
    K("norm_%s_bwd_reduce" % kind)(**red)
    torch.cuda.synchronize()
    return dx, dres, dw, db, (bwd_name, a, red)


def numerics(kind, name, R, H, eps=1e-5):
    x = torch.randn(R, H, device=dev).bfloat16()
    res = torch.randn(R, H, device=dev).bfloat16()
    w = (1 + 0.5 * torch.rand(H, device=dev)).bfloat16()
    b = (0.5 * torch.randn(H, device=dev)).bfloat16()
    y, s_out, rstd, mean, _ = run_fwd(name, kind, x, res, w, b)
    s_ref = (x.double() + res.double()).bfloat16().double()  # s is bf16 by definition
    yr, mr, rr = ref_fwd(kind, s_ref, w.double(), b.double(), eps)
    log(" %s rows %d hidden %d" % (name, R, H))
    check(name + " y", yr, y)
    check(name + " s", s_ref, s_out)
    check(name + " rstd", rr, rstd)
    if kind == "layernorm":
        check(name + " mean", mr, mean)
    dy = torch.randn(R, H, device=dev).bfloat16()
    ds_in = (0.5 * torch.randn(R, H, device=dev)).bfloat16()
    dx, _, dw, db, (bn, a, red) = run_bwd(name, kind, s_out, w, rstd, mean, dy, ds_in)
    gs, gw, gb = ref_bwd(kind, s_ref, w.double(), dy.double(), ds_in.double(), eps)
    check(name + " dx", gs, dx)
    check(name + " dweight", gw, dw)
    if kind == "layernorm":
        check(name + " dbias", gb, db)
    dw1 = dw.clone()
    K(bn)(**a)
    K("norm_%s_bwd_reduce" % kind)(**red)
    torch.cuda.synchronize()
    if not torch.equal(dw1, dw):
        fail(name + " dweight", "not the same bits on a second run")


def numerics_dropout(kind, R, H, p=0.1):
    name = "norm_dp_%s_fwd" % kind
    x = (torch.rand(R, H, device=dev) + 0.5).bfloat16()  # never 0: a 0 in s is a dropped element
    zero = torch.zeros(R, H, device=dev).bfloat16()
    w = (1 + 0.5 * torch.rand(H, device=dev)).bfloat16()
    b = torch.zeros(H, device=dev).bfloat16()
    seed, offset = 0x1234_5678_9ABC, 77
    y, s_out, rstd, mean, _ = run_fwd(name, kind, x, zero, w, b, seed, offset, True)
    keep = s_out.double() != 0
    frac = 1 - keep.double().mean().item()
    log(" %s rows %d hidden %d: dropped %.4f (p %.2f)" % (name, R, H, frac, p))
    if abs(frac - p) > 0.01:
        fail(name, "dropped fraction %.4f, p %.2f" % (frac, p))
    s_ref = (x.double() * keep * float(torch.tensor(1 / (1 - p), dtype=torch.float32))).bfloat16().double()
    check(name + " s", s_ref, s_out)
    yr, _, _ = ref_fwd(kind, s_ref, w.double(), b.double(), 1e-5)
    check(name + " y", yr, y)
    dy = torch.randn(R, H, device=dev).bfloat16()
    ds_in = (0.5 * torch.randn(R, H, device=dev)).bfloat16()
    dx, dres, dw, db, _ = run_bwd(name, kind, s_out, w, rstd, mean, dy, ds_in, seed, offset, True)
    gs, gw, _ = ref_bwd(kind, s_ref, w.double(), dy.double(), ds_in.double(), 1e-5)
    check(name + " d_residual", gs, dres)
    check(name + " dx (mask again)", gs * keep / (1 - p), dx)


log("== (a) numerics against torch fp64")
for kind in ("rmsnorm", "layernorm"):
    for R, H in ((7, 1000), (3, 4097), (600, 136), (64, 4096), (16, 8192), (2, 12288)):
        numerics(kind, "norm_%s_fwd" % kind, R, H)
    for H in (4096, 8192):
        numerics(kind, "norm_h_%s_fwd_h%d" % (kind, H), 33, H)
    numerics_dropout(kind, 257, 4096)

if "--no-bench" not in flags and not failures:
    import triton.testing
    import torch._dynamo

    # one compiled graph per shape, never a fallback to eager after the
    # default recompile limit (8) is spent across the 12 shapes of a kind
    torch._dynamo.config.recompile_limit = 256
    torch._dynamo.config.cache_size_limit = 256

    def med(fn):
        return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median")

    def torch_fwd(kind):
        def f(x, r, w, b):
            s = x + r
            sf = s.float()
            if kind == "layernorm":
                y = torch.nn.functional.layer_norm(sf, (sf.shape[-1],), w.float(), b.float(), 1e-5)
            else:
                y = sf * torch.rsqrt(sf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()
            return y.bfloat16(), s
        return torch.compile(f, dynamic=False)

    def torch_bwd(kind):
        def f(s, w, dy, ds_in):
            sf, g = s.float(), dy.float() * w.float()
            mean = sf.mean(-1, keepdim=True) if kind == "layernorm" else 0.0
            rstd = torch.rsqrt(((sf - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
            xh = (sf - mean) * rstd
            ma = g.mean(-1, keepdim=True) if kind == "layernorm" else 0.0
            ds = rstd * (g - ma - xh * (g * xh).mean(-1, keepdim=True)) + ds_in.float()
            return ds.bfloat16(), (dy.float() * xh).sum(0), dy.float().sum(0)
        return torch.compile(f, dynamic=False)

    log("\n== (b) benchmarks: do_bench medians (ms); TB/s over x, residual read + y, s written; bound launches")
    # decode batches (1, 16, 64), a prefill chunk (256), 1K tokens, 16K tokens; NORM_BENCH_BUDGET
    # seconds (default 70) from the start stops the timings in time
    shapes = ((4096, 1), (4096, 16), (4096, 64), (4096, 256), (4096, 1024), (4096, 16384), (8192, 64), (8192, 16384))
    budget = float(os.environ.get("NORM_BENCH_BUDGET", "70"))
    table = []
    for kind in ("rmsnorm", "layernorm"):
        tf, tb = torch_fwd(kind), torch_bwd(kind)
        for H, R in shapes:
            if time.time() - T0 > budget:
                log("skipped (budget %.0f s): %s H %d rows %d" % (budget, kind, H, R))
                continue
            x, r = torch.randn(R, H, device=dev).bfloat16(), torch.randn(R, H, device=dev).bfloat16()
            w, b = torch.ones(H, device=dev).bfloat16(), torch.zeros(H, device=dev).bfloat16()
            name = "norm_h_%s_fwd_h%d" % (kind, H)
            _, s_out, rstd, mean, a = run_fwd(name, kind, x, r, w, b)
            k = K(name).bind(**a)
            t_ours = med(lambda: k())
            t_tc = med(lambda: tf(x, r, w, b))
            src = torch.empty(2 * R * H, device=dev, dtype=torch.bfloat16)
            dst = torch.empty_like(src)
            t_copy = med(lambda: dst.copy_(src))
            nbytes = 4 * R * H * 2
            dy, ds_in = torch.randn_like(x), torch.randn_like(x)
            _, _, _, _, (bn, ba, red) = run_bwd(name, kind, s_out, w, rstd, mean, dy, ds_in)
            kb, kr = K(bn).bind(**ba), K("norm_%s_bwd_reduce" % kind).bind(**red)
            t_bwd = med(lambda: (kb(), kr()))
            t_tcb = med(lambda: tb(s_out, w, dy, ds_in))
            row = (kind, H, R, t_ours, t_tc, t_copy, nbytes / t_ours / 1e9, t_tc / t_ours, t_copy / t_ours,
                   t_bwd, t_tcb, t_tcb / t_bwd)
            table.append(row)
            log("%-9s H %5d rows %5d fwd %.4f (tc %.4f, copy %.4f) %.2f TB/s  x%.2f tc  %.2f of copy | "
                "bwd %.4f (tc %.4f) x%.2f" % row)
    log("\nkind      hidden  rows   fwd ms   TB/s  vs tc  of copy   bwd ms  vs tc")
    for t in table:
        log("%-9s %6d %5d %8.4f %6.2f %6.2f %7.2f %8.4f %6.2f" % (t[0], t[1], t[2], t[3], t[6], t[7], t[8], t[9],
                                                                  t[11]))

log("\n%d failure(s)" % len(failures))
for f in failures:
    log("FAIL", *f)
sys.exit(1 if failures else 0)
