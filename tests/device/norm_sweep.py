#!/usr/bin/env python3
"""hkgen's H200 norm sweep: every norm kernel of one or more sm_90a catalogues
(tests/device/h200_norm.yaml built at main or here, tests/device/h200_norm_sweep.yaml's
candidates) checked against torch in fp64, then timed next to torch.compile of
the same fused expression and a device copy of the same bytes, all in one run.

    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/norm_sweep.py build/dev/main build/dev/sweep

A kernel name that an earlier catalogue has too is shown as DIR:name.
(a) numerics of every kernel first: forward y, s, rstd, mean (LayerNorm also
    on rows whose first element is an outlier) and backward dx, dweight, dbias
    (bwd + bwd_reduce) against fp64 at its hidden (a run-time hidden kernel at
    odd and round sizes), fresh random inputs with a mean away from 0, outputs
    poisoned with NaN, relative L2 <= 1e-2, NaN never passes; dweight the same
    bits on a second run. A kernel that fails is not timed.
(b) do_bench medians (L2 flushed, bound launches) at 16384 rows x 4096: copy,
    torch.compile forward and backward (a graph a shape), then every kernel;
    then 16384 x 8192; then decode and prefill batches, 1-4096 rows x 4096,
    forward and backward, for the keys starting with SMALL. A backward is timed
    with the bwd_reduce kernel of its catalogue with the same parts and
    red_cols, and (keys starting with "v_") with red_cols 32 and 16 ("+r16").
SWEEP_BUDGET (seconds from the start, default 80) stops timing in time; what
was skipped is logged. SWEEP_PHASES (fwd,bwd) and SWEEP_SMALL_ROWS
(1,8,32,128,256,1024,4096) narrow the timings. The log goes to $OUT/sweep.log.
"""
import os
import sys
import time

import torch

import hkrt

T0 = time.time()
BUDGET = float(os.environ.get("SWEEP_BUDGET", "80"))
TARGET = "sm_90a"
TOL = 1e-2
SMALL = ("norm_h_", "norm_h5_", "v_")  # key prefixes timed at small row counts too (fwd and bwd)
SMALL_ROWS = tuple(int(r) for r in os.environ.get("SWEEP_SMALL_ROWS", "1,8,32,128,256,1024,4096").split(","))
PHASES = os.environ.get("SWEEP_PHASES", "fwd,bwd").split(",")  # what is timed (numerics: everything)

args = [a for a in sys.argv[1:] if not a.startswith("--")]
out_dir = os.environ.get("OUT") or "build"
LOG = open(os.path.join(out_dir, "sweep.log"), "w")
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
cats = [hkrt.Catalog(a, backend="cuda") for a in args]
kernels = {}  # key -> (catalog, manifest entry): the name, "DIR:name" when an earlier catalogue has it
for d, c in zip(args, cats):
    for e in c.manifest["kernels"]:
        # dropout kernels need seed and offset: norm_bench.py checks those
        if e.get("op") == "norm" and e.get("target") == TARGET and float(e["params"].get("dropout", 0)) == 0:
            key = e["name"] if e["name"] not in kernels else os.path.basename(d.rstrip("/")) + ":" + e["name"]
            kernels[key] = (c, e)


def par(name, p):
    return str(kernels[name][1]["params"].get(p))


def K(name):
    return kernels[name][0].kernel(kernels[name][1]["name"], TARGET)


def tun(name, t):
    return int(kernels[name][1]["tunables"][t])


def reducer(name, kind, red_cols=None):
    """the bwd_reduce kernel of name's catalogue with its parts and red_cols columns (None: name's own;
    None when there is none of another count)"""
    own = red_cols is None or red_cols == tun(name, "red_cols")
    red_cols = tun(name, "red_cols") if red_cols is None else red_cols
    c = kernels[name][0]
    for n, (cc, e) in kernels.items():
        if (cc is c and e["params"].get("phase") == "bwd_reduce" and e["params"].get("kind") == kind
                and tun(n, "parts") == tun(name, "parts") and tun(n, "red_cols") == red_cols):
            return n
    if own:
        raise KeyError("no bwd_reduce kernel for %s in its catalogue" % name)
    return None


def has_hidden_arg(name):
    return "hidden" in [x["name"] for x in kernels[name][1]["kernarg"]["args"]]


def poison(*shape, dtype=torch.bfloat16):
    return torch.full(shape, float("nan"), dtype=dtype, device=dev)


def rel(ref, got):
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return ((got - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def ref_fwd(kind, s, w, b, eps=1e-5):
    mean = s.mean(-1, keepdim=True) if kind == "layernorm" else torch.zeros_like(s[:, :1])
    var = ((s - mean) ** 2).mean(-1, keepdim=True)
    rstd = 1 / torch.sqrt(var + eps)
    y = (s - mean) * rstd * w + (b if kind == "layernorm" else 0)
    return y, mean[:, 0], rstd[:, 0]


def ref_bwd(kind, s, w, dy, ds_in, eps=1e-5):
    s = s.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    b = torch.zeros_like(w, requires_grad=True)
    y, _, _ = ref_fwd(kind, s, w, b, eps)
    ((y * dy).sum() + (s * ds_in).sum()).backward()
    return s.grad, w.grad, b.grad


def fwd_args(name, kind, x, res, w, b):
    R, H = x.shape
    a = dict(x=x, residual=res, weight=w, y=poison(R, H), s_out=poison(R, H), rstd=poison(R, dtype=torch.float32),
             rows=R)
    if has_hidden_arg(name):
        a["hidden"] = H
    if kind == "layernorm":
        a.update(bias=b, mean=poison(R, dtype=torch.float32))
    return a


def bwd_args(name, kind, s, w, rstd, mean, dy, ds_in):
    R, H = s.shape
    parts = min(R, tun(name, "parts"))
    dwp, dbp = poison(parts, H, dtype=torch.float32), poison(parts, H, dtype=torch.float32)
    a = dict(dy=dy, s=s, weight=w, rstd=rstd, ds_in=ds_in, dx=poison(R, H), dw_part=dwp, rows=R)
    if has_hidden_arg(name):
        a["hidden"] = H
    red = dict(dw_part=dwp, dweight=poison(H, dtype=torch.float32), rows=R, hidden=H)
    if kind == "layernorm":
        a.update(mean=mean, db_part=dbp)
        red.update(db_part=dbp, dbias=poison(H, dtype=torch.float32))
    return a, red


def inputs(R, H):
    x = torch.randn(R, H, device=dev).bfloat16()
    res = torch.randn(R, H, device=dev).bfloat16()
    w = (1 + 0.5 * torch.rand(H, device=dev)).bfloat16()
    b = (0.5 * torch.randn(H, device=dev)).bfloat16()
    return x, res, w, b


def check(what, ref, got):
    e = rel(ref, got)
    if not e <= TOL:
        fail(what, "rel %.3e" % e)
    return e


def numerics_fwd(name, kind, R, H):
    x, res, w, b = inputs(R, H)
    x = x + 3  # a mean well away from 0: one-pass statistics must not cancel
    x = x.bfloat16()
    a = fwd_args(name, kind, x, res, w, b)
    K(name)(**a)
    torch.cuda.synchronize()
    s_ref = (x.double() + res.double()).bfloat16().double()
    yr, mr, rr = ref_fwd(kind, s_ref, w.double(), b.double())
    e = max(check("%s %dx%d y" % (name, R, H), yr, a["y"]), check("%s %dx%d s" % (name, R, H), s_ref, a["s_out"]),
            check("%s %dx%d rstd" % (name, R, H), rr, a["rstd"]))
    if kind == "layernorm":
        e = max(e, check("%s %dx%d mean" % (name, R, H), mr, a["mean"]))
        e = max(e, numerics_outlier(name, kind, R, H))
    return e


def numerics_outlier(name, kind, R, H):
    """LayerNorm of rows whose first element is an outlier (300 on unit-scale data), no
    residual: shifted statistics take their shift from it."""
    x, _, w, b = inputs(R, H)
    x[:, 0] = 300
    res = torch.zeros_like(x)
    a = fwd_args(name, kind, x, res, w, b)
    K(name)(**a)
    torch.cuda.synchronize()
    yr, mr, rr = ref_fwd(kind, x.double(), w.double(), b.double())
    return max(check("%s %dx%d outlier y" % (name, R, H), yr, a["y"]),
               check("%s %dx%d outlier rstd" % (name, R, H), rr, a["rstd"]))


def numerics_bwd(name, kind, R, H):
    s = (torch.randn(R, H, device=dev) + 1).bfloat16()
    w = (1 + 0.5 * torch.rand(H, device=dev)).bfloat16()
    _, mr, rr = ref_fwd(kind, s.double(), w.double(), None if kind == "rmsnorm" else torch.zeros_like(w).double())
    rstd, mean = rr.float().contiguous(), mr.float().contiguous()
    dy = torch.randn(R, H, device=dev).bfloat16()
    ds_in = (0.5 * torch.randn(R, H, device=dev)).bfloat16()
    a, red = bwd_args(name, kind, s, w, rstd, mean, dy, ds_in)
    kr = K(reducer(name, kind))
    K(name)(**a)
    kr(**red)
    torch.cuda.synchronize()
    gs, gw, gb = ref_bwd(kind, s.double(), w.double(), dy.double(), ds_in.double())
    e = max(check("%s %dx%d dx" % (name, R, H), gs, a["dx"]), check("%s %dx%d dweight" % (name, R, H), gw,
                                                                     red["dweight"]))
    if kind == "layernorm":
        e = max(e, check("%s %dx%d dbias" % (name, R, H), gb, red["dbias"]))
    dw1 = red["dweight"].clone()
    K(name)(**a)
    kr(**red)
    torch.cuda.synchronize()
    if not torch.equal(dw1, red["dweight"]):
        fail(name, "dweight not the same bits on a second run")
    r16 = reducer(name, kind, 16) if name.startswith("v_") and tun(name, "red_cols") != 16 else None
    if r16:  # the same partial rows through the 16-column reduction, poisoned outputs
        red["dweight"].fill_(float("nan"))
        if kind == "layernorm":
            red["dbias"].fill_(float("nan"))
        K(r16)(**red)
        torch.cuda.synchronize()
        e = max(e, check("%s %dx%d dweight r16" % (name, R, H), gw, red["dweight"]))
        if kind == "layernorm":
            e = max(e, check("%s %dx%d dbias r16" % (name, R, H), gb, red["dbias"]))
    return e


log("== norm sweep on", torch.cuda.get_device_name(), "| commit", os.environ.get("COMMIT", "?"), "|",
    time.strftime("%Y-%m-%d %H:%M:%S"), "| torch", torch.__version__, "| kernels", len(kernels))
log("== (a) numerics against torch fp64")
RT_SHAPES = ((7, 1000), (3, 4097), (64, 4096), (16, 8192), (2, 12288), (5, 24), (600, 136))
good = []
for name in sorted(kernels):
    kind, phase = par(name, "kind"), par(name, "phase")
    if phase == "bwd_reduce":
        continue
    Hk = 0 if has_hidden_arg(name) else int(par(name, "hidden"))
    shapes = RT_SHAPES if not Hk else ((37, Hk), (1, Hk), (601, Hk), (1500, Hk))
    nf = len(failures)
    worst = 0.0
    try:
        for R, H in shapes:
            worst = max(worst, (numerics_fwd if phase == "fwd" else numerics_bwd)(name, kind, R, H))
    except Exception as ex:  # one kernel's failure must not stop the others
        fail(name, "raised %r" % ex)
    ok = len(failures) == nf
    log("  %-40s %s worst rel %.2e" % (name, "ok" if ok else "FAIL", worst))
    if ok:
        good.append(name)
log("numerics: %d kernels ok, %d failure(s), %.1f s" % (len(good), len(failures), time.time() - T0))

import triton.testing  # noqa: E402
import torch._dynamo  # noqa: E402

torch._dynamo.config.recompile_limit = 256
torch._dynamo.config.cache_size_limit = 256


def med(fn):
    return triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median")


def torch_fwd(kind, dynamic=False):
    def f(x, r, w, b):
        s = x + r
        sf = s.float()
        if kind == "layernorm":
            y = torch.nn.functional.layer_norm(sf, (sf.shape[-1],), w.float(), b.float(), 1e-5)
        else:
            y = sf * torch.rsqrt(sf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()
        return y.bfloat16(), s
    return torch.compile(f, dynamic=dynamic)


def torch_bwd(kind, dynamic=False):
    def f(s, w, dy, ds_in):
        sf, g = s.float(), dy.float() * w.float()
        mean = sf.mean(-1, keepdim=True) if kind == "layernorm" else 0.0
        rstd = torch.rsqrt(((sf - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
        xh = (sf - mean) * rstd
        ma = g.mean(-1, keepdim=True) if kind == "layernorm" else 0.0
        ds = rstd * (g - ma - xh * (g * xh).mean(-1, keepdim=True)) + ds_in.float()
        return ds.bfloat16(), (dy.float() * xh).sum(0), dy.float().sum(0)
    return torch.compile(f, dynamic=dynamic)


def out_of_time():
    return time.time() - T0 > BUDGET


def matches(name, kind, phase, H):
    if par(name, "kind") != kind or par(name, "phase") != phase:
        return False
    return has_hidden_arg(name) or par(name, "hidden") == str(H)


def time_fwd(name, kind, x, r, w, b):
    a = fwd_args(name, kind, x, r, w, b)
    bd = K(name).bind(**a)
    return med(lambda: bd())


def time_bwd(name, kind, s, w, rstd, mean, dy, ds_in, red_cols=None):
    a, red = bwd_args(name, kind, s, w, rstd, mean, dy, ds_in)
    b1, b2 = K(name).bind(**a), K(reducer(name, kind, red_cols)).bind(**red)
    return med(lambda: (b1(), b2()))


def time_all(name, kind, H, nbytes, t_tc, t_tcb, t_copy, x, r, w, b, s, rstd, mean, dy, ds_in):
    if matches(name, kind, "fwd", H) and "fwd" in PHASES:
        t = time_fwd(name, kind, x, r, w, b) * 1e3
        log("  fwd %-36s %7.1f us %5.2f TB/s  x%.3f tc  %.3f of copy" % (name, t, nbytes / t / 1e6, t_tc / t,
                                                                      t_copy / t))
    elif matches(name, kind, "bwd", H) and "bwd" in PHASES:
        for rc in ((32, 16) if name.startswith("v_") else (tun(name, "red_cols"),)):
            if reducer(name, kind, rc) is None:
                continue
            t = time_bwd(name, kind, s, w, rstd, mean, dy, ds_in, rc) * 1e3
            log("  bwd %-36s %7.1f us %5.2f TB/s  x%.3f tc  %.3f of copy" % (name + ("" if rc == tun(name, "red_cols") else "+r%d" % rc), t,
                                                                          nbytes / t / 1e6, t_tcb / t, t_copy / t))


log("\n== (b) do_bench medians (us); fwd TB/s over x, residual read + y, s written; bwd over dy, s, ds_in read + "
    "dx written")
tf = {k: torch_fwd(k) for k in ("rmsnorm", "layernorm")}
tb = {k: torch_bwd(k) for k in ("rmsnorm", "layernorm")}
skipped = []


def large(H):
    for kind in ("rmsnorm", "layernorm"):
        R = 16384
        if out_of_time():
            skipped.append("%s %d large" % (kind, H))
            continue
        x, r, w, b = inputs(R, H)
        nbytes = 4 * R * H * 2
        src = torch.empty(2 * R * H, device=dev, dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        t_copy = med(lambda: dst.copy_(src)) * 1e3
        t_tc = med(lambda: tf[kind](x, r, w, b)) * 1e3 if "fwd" in PHASES else float("nan")
        s = (x.float() + r.float()).bfloat16()
        _, mr, rr = ref_fwd(kind, s.float(), w.float(), b.float())
        rstd, mean = rr.float().contiguous(), mr.float().contiguous()
        dy, ds_in = torch.randn_like(x), torch.randn_like(x)
        t_tcb = med(lambda: tb[kind](s, w, dy, ds_in)) * 1e3 if "bwd" in PHASES else float("nan")
        log("%s H %d rows %d: copy %.1f us (%.2f TB/s), torch.compile fwd %.1f (%.2f TB/s), bwd %.1f" %
            (kind, H, R, t_copy, nbytes / t_copy / 1e6, t_tc, nbytes / t_tc / 1e6, t_tcb))
        for name in good:
            if out_of_time():
                skipped.append(name + " %d" % H)
                continue
            time_all(name, kind, H, nbytes, t_tc, t_tcb, t_copy, x, r, w, b, s, rstd, mean, dy, ds_in)


large(4096)
log("")
large(8192)

log("\n== decode / prefill batches (H 4096; bound launches; torch.compile a graph a shape)")
tfs, tbs = tf, tb
for H in (4096,):
    for kind in ("rmsnorm", "layernorm"):
        for R in SMALL_ROWS:
            if out_of_time():
                skipped.append("%s %d rows %d" % (kind, H, R))
                continue
            x, r, w, b = inputs(R, H)
            nbytes = 4 * R * H * 2
            src = torch.empty(2 * R * H, device=dev, dtype=torch.bfloat16)
            dst = torch.empty_like(src)
            t_copy = med(lambda: dst.copy_(src)) * 1e3
            t_tc = med(lambda: tfs[kind](x, r, w, b)) * 1e3 if "fwd" in PHASES else float("nan")
            s = (x.float() + r.float()).bfloat16()
            _, mr, rr = ref_fwd(kind, s.float(), w.float(), b.float())
            rstd, mean = rr.float().contiguous(), mr.float().contiguous()
            dy, ds_in = torch.randn_like(x), torch.randn_like(x)
            t_tcb = med(lambda: tbs[kind](s, w, dy, ds_in)) * 1e3 if "bwd" in PHASES else float("nan")
            log("%s H %d rows %d: copy %.1f us, torch.compile fwd %.1f, bwd %.1f" % (kind, H, R, t_copy, t_tc, t_tcb))
            for name in good:
                if name.split(":")[-1].startswith(SMALL):
                    time_all(name, kind, H, nbytes, t_tc, t_tcb, t_copy, x, r, w, b, s, rstd, mean, dy, ds_in)

log("\nskipped (budget %.0f s): %s" % (BUDGET, ", ".join(skipped) if skipped else "none"))
log("%d failure(s), %.1f s" % (len(failures), time.time() - T0))
for f in failures:
    log("FAIL", *f)
sys.exit(1 if failures else 0)
