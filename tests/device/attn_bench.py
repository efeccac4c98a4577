#!/usr/bin/env python3
"""hkgen's H200 attention-forward suite: numerics and benchmarks of the sm_90a
attn_fwd kernels of tests/device/h200_attn.yaml (templates/attn_fwd.sm90.hip.m4).

Run on the GPU machine, from the repository root (nothing is built there):
    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \
        python3 tests/device/attn_bench.py build/h200attn [--no-bench | --no-numerics] [--quick] [--short | --long] [--baked]

(a) numerics: every kernel of the catalogue against torch SDPA computed in
    fp64 (inputs upcast; explicit boolean mask, bottom-right causal alignment)
    and an fp64 log-sum-exp, on a grid of shapes: odd lengths, Sq != Sk
    (causal rows with no visible key: O = 0, LSE = -inf), heads 12:12, 12:4,
    40:8, 7:1 (MQA), BSHD and BHSD layouts with padded rows, one odd-stride
    case (element-load path), a misaligned base, O rows padded by 2 (4-byte
    stores) and, where a shape has them, causal tiles that see no key with
    misaligned inputs (the cp.async path). O and LSE are poisoned with
    NaN first; rel L2 < 1e-2 for O and for LSE (finite entries; -inf must
    match), no NaN/Inf in O, O's row padding and guards untouched.
(b) benchmarks, triton.testing.do_bench medians (warm-up 25 ms, rep 100 ms,
    as /work/shared/anchors/h200_anchors.py; launches over 20 ms: the median of
    3 timed runs after one warm-up, CUDA events): hkgen vs torch SDPA with
    SDPBackend.CUDNN_ATTENTION and SDPBackend.FLASH_ATTENTION in the same run,
    bf16, d64 and d128, heads 16:16, 32:8, 12:12, 12:4, causal and not,
    seq 8K, 2K, 32K, then 128K, batch x seq = 16K tokens, [B][H][S][D]
    contiguous; TFLOP/s = 4 B H Sq Sk D / time (halved for causal).
    --quick: seq 8K only; --short: 8K and 2K; --long: 32K and 128K; --d128 / --d64: that head_dim only;
    --causal / --noncausal: those shapes only; --small: numerics at the shapes of
    up to 300K query-key pairs per head only (racecheck runs).
Under HKRT_UNITS=n (libhkrt) the persistent d128 kernels run with at most n
blocks, each walking many tiles: run the numerics with n = 1 and 3 as well.
$ATTN_ROUNDS (default 1): time every catalogue that many times, in turn, and
report the median (of two: their mean). More catalogue folders after the first (variants of the same kernels, A/B
tests in one run) get the numerics and an hkgen timing per shape too.
The log goes to $OUT/attn.log (else build/device-logs/attn.log). Exit status non-zero on
any numerics failure, and 1 with a traceback when a numerics launch has not
finished after $ATTN_HANG_S seconds (default 120: a hung kernel).
"""
import ctypes
import datetime
import faulthandler
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

import hkrt

TARGET = "sm_90a"
TOL = 1e-2
args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
CATS = args if args else ["build/h200attn"]
CAT = CATS[0]
# logs never go under tests/ (not committed): $OUT on the device machine,
# else build/device-logs/ (ignored by git)
out_dir = os.environ.get("OUT") or "build/device-logs"
os.makedirs(out_dir, exist_ok=True)
LOG = open(os.path.join(out_dir, "attn.log"), "w")
GUARD = 64
T_START = time.time()
DEADLINE = T_START + float(os.environ.get("ATTN_BUDGET_S", "1e9"))
# A numerics launch that has not finished after ATTN_HANG_S seconds (a hung
# kernel) ends the run with every thread's traceback, so that it does not use
# up the device time: faulthandler's watchdog is a C thread, which fires even
# while the main thread waits in the CUDA driver.
HANG_S = float(os.environ.get("ATTN_HANG_S", "120"))
ROUNDS = max(1, int(os.environ.get("ATTN_ROUNDS", "1")))


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


failures = []


def fail(what, detail):
    failures.append((what, detail))
    log("FAIL", what, detail)


dev = torch.device("cuda")
torch.zeros(1, device=dev)
cats = [hkrt.Catalog(CATS[0], backend="cuda")]
opened = CATS[:1]
for c in CATS[1:]:
    try:
        cats.append(hkrt.Catalog(c, backend="cuda"))
        opened.append(c)
    except Exception as ex:                       # a variant that does not open: skip it
        log("catalogue %s not opened: %s" % (c, ex))
CATS = opened
cat = cats[0]
entries = [e for e in cat.manifest["kernels"] if e["target"] == TARGET and e["op"] == "attn_fwd"]
DIMS = ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k")


def launcher(k, vals, cat=cat):
    """A no-argument launch of kernel k with vals, packed once (hkrt_launch_ex
    on torch's current stream, with the manifest's dynamic shared memory)."""
    packed, grid = k.pack(vals), k.grid(vals)
    g = (ctypes.c_uint * 3)(*grid)
    blk = (ctypes.c_uint * 3)(*k.entry["block"])
    buf = ctypes.create_string_buffer(packed, len(packed))
    fn = k._function()
    lib = cat.lib

    dyn = int(k.entry.get("dynamic_lds", 0))    # bytes of dynamic shared memory (the manifest's)

    def go():
        lib.check(lib.c.hkrt_launch_ex(fn, g, blk, dyn, buf, len(packed),
                                       ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)), "launch " + k.name)
    return go


def is_true(v):
    return v in ("true", "1")


def make(B, S, H, D, order, pad, fill, offset=0):
    """A [B][S][H][D] view (memory order 'bshd' or 'bhsd', rows of D + pad
    elements) over a flat bf16 buffer with GUARD elements after it and
    `offset' before it. Returns (buf, view, strides (b, s, h), lead)."""
    row = D + pad
    if order == "bshd":
        ss, sh = H * row, row
        sb = S * ss
    else:
        sh, ss = S * row, row
        sb = H * sh
    n = B * sb
    lead = GUARD + offset
    if fill == "nan":
        buf = torch.full((lead + n + GUARD,), float("nan"), device=dev, dtype=torch.bfloat16)
    else:
        buf = torch.randn(lead + n + GUARD, device=dev, dtype=torch.bfloat16)
    view = buf.as_strided((B, S, H, D), (sb, ss, sh, 1), lead)
    return buf, view, (sb, ss, sh), lead


def reference(q, k, v, causal, scale):
    """fp64 O [B][Sq][Hq][D] (SDPA, math on upcast inputs) and LSE [B][Hq][Sq]."""
    B, Sq, Hq, D = q.shape
    Sk, Hk = k.shape[1], k.shape[2]
    qd = q.double().transpose(1, 2)                       # B H S D
    kd = k.double().transpose(1, 2).repeat_interleave(Hq // Hk, dim=1)
    vd = v.double().transpose(1, 2).repeat_interleave(Hq // Hk, dim=1)
    i = torch.arange(Sq, device=dev)[:, None]
    j = torch.arange(Sk, device=dev)[None, :]
    vis = (j <= i + (Sk - Sq)) if causal else torch.ones(Sq, Sk, dtype=torch.bool, device=dev)
    s = (qd @ kd.transpose(-1, -2)) * scale
    s = s.masked_fill(~vis, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)                      # -inf where no key is visible
    o = F.scaled_dot_product_attention(qd, kd, vd, attn_mask=vis, scale=scale)
    o = torch.where(vis.any(-1)[None, None, :, None], o, torch.zeros_like(o))
    return o.transpose(1, 2), lse


def run_case(k, e, shape, order, pads, offset=0, scale=None, cat=cat):
    B, Sq, Sk, Hq, Hk = shape
    D = int(e["params"]["head_dim"])
    causal = is_true(e["params"]["causal"])
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    _, q, qs, _ = make(B, Sq, Hq, D, order, pads[0], "rand", offset)
    _, kk, ks, _ = make(B, Sk, Hk, D, order, pads[1], "rand", offset)
    _, v, vs, _ = make(B, Sk, Hk, D, "bhsd" if order == "bshd" else "bshd", pads[2], "rand", offset)
    obuf, o, os_, olead = make(B, Sq, Hq, D, order, pads[3], "nan")
    lbuf = torch.full((B * Hq * Sq + GUARD,), float("nan"), device=dev, dtype=torch.float32)
    lse = lbuf[:B * Hq * Sq].view(B, Hq, Sq)
    vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=scale)
    for t, st in (("q", qs), ("k", ks), ("v", vs), ("o", os_)):
        for ax, x in zip("bsh", st):
            vals["%s_stride_%s" % (t, ax)] = x
    for d, x in zip(DIMS, shape):
        if d in e["runtime_params"]:
            vals[d] = x
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        launcher(k, vals, cat)()
        torch.cuda.synchronize()
    finally:
        faulthandler.cancel_dump_traceback_later()
    oref, lref = reference(q, kk, v, causal, scale)
    got = o.double()
    bad = bool((~torch.isfinite(got)).any().item())
    eo = ((got - oref).norm() / max(oref.norm().item(), 1e-30)).item() if oref.norm().item() > 0 \
        else got.norm().item()
    fin = torch.isfinite(lref)
    lse_match = bool(torch.equal(fin, torch.isfinite(lse)) and
                     bool((lse[~fin] == float("-inf")).all().item()))
    lr, lg = lref[fin], lse[fin].double()
    el = ((lg - lr).norm() / max(lr.norm().item(), 1e-30)).item() if lr.numel() else 0.0
    # O's padding and guards: still NaN (bit pattern of the poison)
    mask = torch.zeros(obuf.numel(), dtype=torch.bool, device=dev)
    mask.as_strided(o.shape, o.stride(), olead).fill_(True)
    outside = int((~torch.isnan(obuf[~mask])).sum().item())
    lse_guard = int((~torch.isnan(lbuf[B * Hq * Sq:])).sum().item())
    return eo, el, bad, lse_match, outside + lse_guard


SHAPES = [  # batch, seqlen_q, seqlen_k, heads_q, heads_k
    (1, 1, 1, 1, 1), (1, 37, 37, 12, 12), (2, 65, 129, 12, 4), (1, 130, 97, 7, 1),
    (1, 33, 70, 40, 8), (1, 129, 129, 12, 4), (2, 77, 200, 12, 4), (1, 200, 77, 12, 4),
    (1, 255, 1000, 7, 1), (1, 1000, 255, 40, 8), (3, 383, 383, 12, 12), (1, 1024, 1024, 12, 4),
    (2, 2048, 2048, 8, 2), (1, 4096, 4031, 4, 4),
    (4, 1000, 100, 40, 8),  # many tiles of one or two K/V blocks: persistent blocks load them per tile
]


def shapes_for(e):
    p = e["params"]
    out = []
    for s in SHAPES:
        s = list(s)
        for i, d in enumerate(DIMS):
            if d in p:
                s[i] = int(p[d])
        if s[3] % s[4]:
            continue
        if "--small" in flags and s[1] * s[2] > 300000:   # sanitizer runs: the small shapes only
            continue
        if tuple(s) not in out:
            out.append(tuple(s))
    return out


def numerics():
    log("\n== (a) numerics: fp64 torch SDPA reference, outputs poisoned, rel L2 < %g for O and LSE" % TOL)
    for ci, c in enumerate(cats):
        if len(cats) > 1:
            log("catalogue", CATS[ci])
        numerics_of(c)


def numerics_of(cat):
    for e in [e for e in cat.manifest["kernels"] if e["target"] == TARGET and e["op"] == "attn_fwd"]:
        k = cat.kernel(e["name"], TARGET)
        worst_o = worst_l = 0.0
        n = 0
        cases = []
        if not shapes_for(e):                       # --small and baked long lengths
            log("%-20s no shapes (its baked lengths are over --small's limit)" % e["name"])
            continue
        for i, s in enumerate(shapes_for(e)):
            order = "bshd" if i % 2 == 0 else "bhsd"
            pads = (0, 0, 0, 0) if i % 3 == 0 else (8, 0, 16, 8)
            cases.append((s, order, pads, 0, None))
        s0 = shapes_for(e)[min(6, len(shapes_for(e)) - 1)]
        cases.append((s0, "bshd", (3, 5, 1, 3), 0, None))      # odd strides: element loads/stores
        cases.append((s0, "bhsd", (0, 0, 0, 0), 1, None))      # misaligned bases
        cases.append((s0, "bshd", (0, 8, 0, 0), 0, -0.07))     # negative scale
        cases.append((s0, "bshd", (0, 0, 0, 2), 0, None))      # O rows of D + 2: its 4-byte stores
        # misaligned Q/K/V (cp.async path) with tiles that see no key
        # (causal, seqlen_q - seqlen_k >= 128), O aligned: the epilogue of a
        # tile without K/V blocks
        se = next((s for s in shapes_for(e) if s[1] - s[2] >= 128), None)
        if se:
            cases.append((se, "bhsd", (0, 0, 0, 0), 1, None))
        # element loads at the shape with the most tiles of 128 queries
        sb = max(shapes_for(e), key=lambda s: s[0] * s[3] * ((s[1] + 127) // 128))
        cases.append((sb, "bhsd", (3, 5, 1, 3), 0, None))
        for (s, order, pads, off, sc) in cases:
            try:
                eo, el, bad, lm, outside = run_case(k, e, s, order, pads, off, sc, cat)
            except Exception as ex:
                fail(e["name"], "shape %s %s: exception %s" % (s, order, ex))
                traceback.print_exc()
                if "CUDA" in str(ex):
                    raise
                continue
            n += 1
            worst_o, worst_l = max(worst_o, eo), max(worst_l, el)
            if bad or not eo < TOL or not el < TOL or not lm or outside:
                fail(e["name"], "B,Sq,Sk,Hq,Hk=%s %s pads=%s off=%d scale=%s: rel O %.3e, rel LSE %.3e, "
                     "non-finite O %s, LSE -inf pattern ok %s, written outside %d"
                     % (s, order, pads, off, sc, eo, el, bad, lm, outside))
        log("%-20s %2d cases  worst rel L2: O %.3e  LSE %.3e" % (e["name"], n, worst_o, worst_l))


def bench_vals(k, q, kk, v, o, lse):
    """Kernel k's arguments for [B][H][S][D] tensors (Sq = Sk): pointers, strides,
    scale 1/sqrt(D), and the dimensions k takes at run time."""
    B, H, S, D = q.shape
    vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=1.0 / math.sqrt(D))
    for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
        vals["%s_stride_b" % t], vals["%s_stride_h" % t], vals["%s_stride_s" % t] = x.stride(0), x.stride(1), x.stride(2)
    for d, x in zip(DIMS, (B, S, S, H, kk.shape[1])):
        if d in k.entry["runtime_params"]:
            vals[d] = x
    return vals


def bench():
    import triton.testing
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def med(f):
        f()
        torch.cuda.synchronize()
        t0 = time.time()
        f()
        torch.cuda.synchronize()
        if time.time() - t0 < 0.02:
            return triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")
        ts = []
        for _ in range(3):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            f()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        return sorted(ts)[1]

    log("\n== (b) benchmarks: bf16, [B][H][S][D] contiguous, 16K tokens per launch (batch 1 past 16K)")
    hdr = "%-18s %4s %7s %3s %5s %6s | %8s %7s | %7s %7s | %6s %6s | %s" % (
        "kernel", "D", "S", "B", "Hq:Hk", "causal", "hk ms", "TFLOP/s", "cuDNN", "FLASH", "/cuDNN", "/FLASH",
        "rel L2 vs cuDNN")
    log(hdr)
    rows = []
    configs = []
    for S in (8192, 2048, 32768, 131072):
        for D in (128, 64):
            for (Hq, Hk) in ((16, 16), (32, 8), (12, 12), (12, 4)):
                for causal in (True, False):
                    configs.append((S, D, Hq, Hk, causal))
    if "--quick" in flags:
        configs = [c for c in configs if c[0] == 8192]
    if "--short" in flags:
        configs = [c for c in configs if c[0] <= 8192]
    if "--long" in flags:
        configs = [c for c in configs if c[0] > 8192]
    if "--d128" in flags:
        configs = [c for c in configs if c[1] == 128]
    if "--d64" in flags:
        configs = [c for c in configs if c[1] == 64]
    if "--causal" in flags:
        configs = [c for c in configs if c[4]]
    if "--noncausal" in flags:
        configs = [c for c in configs if not c[4]]
    for (S, D, Hq, Hk, causal) in configs:
        if time.time() > DEADLINE:
            log("  (stopped: the run's time budget, ATTN_BUDGET_S, is spent; the remaining shapes were not measured)")
            break
        B = max(1, 16384 // S)
        q = torch.randn(B, Hq, S, D, device=dev, dtype=torch.bfloat16)
        kk = torch.randn(B, Hk, S, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn(B, Hk, S, D, device=dev, dtype=torch.bfloat16)
        o = torch.empty_like(q)
        lse = torch.empty(B, Hq, S, device=dev, dtype=torch.float32)
        name = "attn_l3_c%d" % causal if (Hq, Hk, D) == (32, 8, 128) else "attn_any_d%d_c%d" % (D, causal)
        fl = 4 * B * Hq * S * S * D / (2 if causal else 1)
        res = {}
        ref = None
        for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
            try:
                with sdpa_kernel([be]):
                    f = lambda: F.scaled_dot_product_attention(q, kk, v, is_causal=causal, enable_gqa=(Hq != Hk))
                    out = f()
                    if ref is None:
                        ref = out
                    res[be.name] = fl / med(f) / 1e9
            except Exception as ex:
                res[be.name] = None
                log("  %s S=%d %d:%d causal=%s: %s" % (be.name, S, Hq, Hk, causal, str(ex).splitlines()[0][:100]))
        cu, fa = res.get("CUDNN_ATTENTION"), res.get("FLASH_ATTENTION")
        # ATTN_ROUNDS rounds over the catalogues in turn, the median per
        # catalogue: drifts of the clock hit every variant alike
        times, errs = [[] for _ in cats], []
        for rnd in range(ROUNDS):
            for ci, c in enumerate(cats):
                k = c.kernel(name, TARGET)
                vals = bench_vals(k, q, kk, v, o, lse)
                o.fill_(float("nan"))
                times[ci].append(med(launcher(k, vals, c)))
                torch.cuda.synchronize()
                if rnd == 0:
                    errs.append(((o.float() - ref.float()).norm() / ref.float().norm()).item()
                                if ref is not None else float("nan"))
        for ci, c in enumerate(cats):
            t_hk, err = statistics.median(times[ci]), errs[ci]
            tf = fl / t_hk / 1e9
            fmt = lambda x: "%7.1f" % x if x else "    n/a"
            rat = lambda x: "%6.3f" % (tf / x) if x else "   n/a"
            tag = name if ci == 0 else "%s#%d" % (name, ci)
            log("%-18s %4d %7d %3d %5s %6s | %8.3f %7.1f | %s %s | %s %s | %.2e" % (
                tag, D, S, B, "%d:%d" % (Hq, Hk), causal, t_hk, tf, fmt(cu), fmt(fa), rat(cu), rat(fa), err))
            rows.append((ci, name, D, S, B, Hq, Hk, causal, t_hk, tf, cu, fa, err))
            if not err < 2e-2:
                fail(tag, "benchmark output differs from cuDNN's: rel L2 %.3e (D %d S %d %d:%d causal %s)"
                     % (err, D, S, Hq, Hk, causal))
        del q, kk, v, o, lse, ref
        torch.cuda.empty_cache()
    for ci in range(len(cats)):
        r = [x for x in rows if x[0] == ci]
        if not r:
            continue
        for D in (128, 64):
            rd = [x for x in r if x[2] == D]
            if rd:
                log("summary %s d%d: %d shapes, TFLOP/s %.0f-%.0f, /cuDNN %.3f-%.3f, /FLASH %.3f-%.3f" % (
                    CATS[ci], D, len(rd), min(x[9] for x in rd), max(x[9] for x in rd),
                    min(x[9] / x[10] for x in rd if x[10]), max(x[9] / x[10] for x in rd if x[10]),
                    min(x[9] / x[11] for x in rd if x[11]), max(x[9] / x[11] for x in rd if x[11])))
    return rows


def bench_baked():
    """Baked versus run-time dimensions, same shape, same run: 32:8 heads, d128,
    [B][H][S][D] contiguous; attn_any_d128 (all run-time), attn_l3 (heads and
    head_dim baked), attn_l3_2k (heads, head_dim and both lengths baked)."""
    import triton.testing
    log("\n== (c) baked vs run-time dimensions: do_bench medians (ms), the faster of two")
    for S in (2048, 8192):
        B, Hq, Hk, D = 16384 // S, 32, 8, 128
        q = torch.randn(B, Hq, S, D, device=dev, dtype=torch.bfloat16)
        kk = torch.randn(B, Hk, S, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn(B, Hk, S, D, device=dev, dtype=torch.bfloat16)
        o = torch.empty_like(q)
        lse = torch.empty(B, Hq, S, device=dev, dtype=torch.float32)
        for causal in (True, False):
            fl = 4 * B * Hq * S * S * D / (2 if causal else 1)
            names = ["attn_any_d128_c%d" % causal, "attn_l3_c%d" % causal]
            if S == 2048:
                names.append("attn_l3_2k_c%d" % causal)
            base = None
            for name in names:
                k = cat.kernel(name, TARGET)
                vals = bench_vals(k, q, kk, v, o, lse)
                go = launcher(k, vals)
                ms = min(triton.testing.do_bench(go, warmup=25, rep=100, return_mode="median") for _ in range(2))
                base = base or ms
                log("baked  %-18s S=%5d B=%d 32:8 d128 causal=%-5s run-time: %-38s %.4f ms %6.1f TFLOP/s  %.3fx attn_any"
                    % (name, S, B, causal, ",".join(k.entry["runtime_params"]) or "-", ms, fl / ms / 1e9, base / ms))
        del q, kk, v, o, lse
        torch.cuda.empty_cache()


def main():
    log("attn_bench.py", datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "commit", os.environ.get("HK_COMMIT", "?"))
    log("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
        torch.cuda.get_device_name())
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        log("nvidia-smi:", smi)
    except Exception as ex:
        log("nvidia-smi failed:", ex)
    for ci, c in enumerate(cats):
        log("catalogue", CATS[ci], ":", ", ".join("%s (%d regs, %d B smem + %d dynamic, spills %d)" % (
            e["name"], e["resources"]["vgpr"], e["resources"]["lds"], e.get("dynamic_lds", 0),
            e["resources"]["vgpr_spill"]) for e in c.manifest["kernels"]
            if e["target"] == TARGET and e["op"] == "attn_fwd"))
    if "--no-numerics" not in flags:
        t0 = time.time()
        numerics()
        log("numerics: %d failures, %.1f s" % (len(failures), time.time() - t0))
    if "--baked" in flags:
        bench_baked()
    if "--no-bench" not in flags:
        try:
            bench()
        except Exception as ex:
            fail("bench", repr(ex))
            traceback.print_exc()
    log("\nfailures: %d" % len(failures))
    for f in failures:
        log("  ", *f)
    sys.exit(1 if failures else 0)


main()
