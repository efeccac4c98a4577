#!/usr/bin/env python3
"""The sm_90a attention forward's serving features on the H200: soft-capping,
attention sinks and sliding windows (templates/attn_fwd.sm90.hip.m4), the
kernels of tests/device/h200_attn_feat.yaml:
    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/attn_feat.py CATALOGUE [--no-bench]

(a) numerics, each kernel against an fp64 reference computed here with torch
    (float64 on the GPU: scores, the kernel's mask and window bottom-right
    aligned, cap * tanh(s / cap), the sink in each row's denominator): d64
    and d128, causal and not, odd lengths, Sq != Sk (rows and tiles without
    keys), GQA and MQA, BSHD and BHSD with padded rows, the three copy paths
    (bulk copies; cp.async with 16-byte chunks, reached by a zero batch
    stride; element loads, by a misaligned base), a negative scale, shapes
    whose persistent blocks walk several tiles; windows at several sizes
    (run-time edges, -1 open).  O and LSE are poisoned with NaN first; rel L2
    < 1e-2 for O and LSE (finite entries; -inf where the reference has it),
    no NaN in O, nothing written outside O and LSE.
(b) timing (triton do_bench medians): the feature kernels against the plain
    one (attn_any_*) in the same run.
Sections run in an order that keeps the plain and cheap ones first; a launch
that has not finished after $FEAT_HANG_S seconds (default 5) ends the run
with tracebacks (a hung kernel); $FEAT_BUDGET_S (default 38) bounds the
whole, sections past it are reported as skipped.  Log: $OUT/feat.log."""
import ctypes
import datetime
import faulthandler
import math
import os
import sys
import time
import traceback

import torch

import hkrt

T0 = time.time()
TARGET = "sm_90a"
TOL = 1e-2
GUARD = 64
HANG_S = float(os.environ.get("FEAT_HANG_S", "5"))
BUDGET = float(os.environ.get("FEAT_BUDGET_S", "38"))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
out_dir = os.environ.get("OUT") or "build/device-logs"
os.makedirs(out_dir, exist_ok=True)
LOG = open(os.path.join(out_dir, "feat.log"), "w")
dev = "cuda"
DIMS = ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k")
failures = []
summary = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def over_budget():
    return time.time() - T0 > BUDGET


cat = hkrt.Catalog(args[0] if args else "build/h200feat", backend="cuda")
entries = {e["name"]: e for e in cat.manifest["kernels"] if e["target"] == TARGET and e["op"] == "attn_fwd"}


def launcher(k, vals):
    """A no-argument launch of k with vals, packed once (as attn_bench.py)."""
    packed, grid = k.pack(vals), k.grid(vals)
    g = (ctypes.c_uint * 3)(*grid)
    blk = (ctypes.c_uint * 3)(*k.entry["block"])
    buf = ctypes.create_string_buffer(packed, len(packed))
    fn = k._function()
    dyn = int(k.entry.get("dynamic_lds", 0))

    def go():
        cat.lib.check(cat.lib.c.hkrt_launch_ex(fn, g, blk, dyn, buf, len(packed),
                                               ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)),
                      "launch " + k.name)
    return go


def feats(e):
    """(causal, cap, sinks, window_left, window_right) of entry e; a window
    edge 'any' is None (given per case)."""
    p = e["params"]
    w = lambda n: None if p.get(n, "-1") == "any" else int(p.get(n, "-1"))
    return (p["causal"] in ("true", "1"), float(p.get("softcap", "0")), p.get("sinks", "false") in ("true", "1"),
            w("window_left"), w("window_right"))


def make(B, S, H, D, order, pad, fill, offset=0, zero_b=False):
    """A [B][S][H][D] view ('bshd' or 'bhsd' memory order, rows of D + pad)
    over a flat bf16 buffer with GUARD elements around it; zero_b: batch
    stride 0 (B = 1)."""
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
    sb = 0 if zero_b else sb
    return buf, buf.as_strided((B, S, H, D), (sb, ss, sh, 1), lead), (sb, ss, sh), lead


def reference(q, k, v, scale, causal, cap, sink, wl, wr):
    """fp64 O [B][Sq][Hq][D] and LSE [B][Hq][Sq]: key j visible to query i
    (i' = i + Sk - Sq) iff causal allows (j <= i'), j >= i' - wl (wl >= 0),
    j <= i' + wr (wr >= 0); s = scale q.k, capped to cap tanh(s / cap); the
    sink (per query head) joins each row's denominator with no value."""
    B, Sq, Hq, D = q.shape
    Sk, Hk = k.shape[1], k.shape[2]
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(Hq // Hk, dim=1)
    vd = v.double().transpose(1, 2).repeat_interleave(Hq // Hk, dim=1)
    ip = torch.arange(Sq, device=dev)[:, None] + (Sk - Sq)
    j = torch.arange(Sk, device=dev)[None, :]
    vis = torch.ones(Sq, Sk, dtype=torch.bool, device=dev)
    if causal:
        vis &= j <= ip
    if wl is not None and wl >= 0:
        vis &= j >= ip - wl
    if wr is not None and wr >= 0:
        vis &= j <= ip + wr
    s = (qd @ kd.transpose(-1, -2)) * scale
    if cap > 0:
        s = cap * torch.tanh(s / cap)
    s = s.masked_fill(~vis, float("-inf"))
    if sink is not None:
        sk = sink.double()[None, :, None, None].expand(B, Hq, Sq, 1)
        lse = torch.logsumexp(torch.cat([s, sk], dim=-1), dim=-1)
    else:
        lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None].clamp(min=-1e300))
    p = torch.where(torch.isfinite(lse)[..., None], p, torch.zeros_like(p))
    return (p @ vd).transpose(1, 2), lse


def run_case(name, e, shape, order="bshd", pads=(0, 0, 0, 0), offset=0, scale=None, zero_b=False, wl=None,
             wr=None):
    B, Sq, Sk, Hq, Hk = shape
    D = int(e["params"]["head_dim"])
    causal, cap, has_sink, bwl, bwr = feats(e)
    wl = bwl if bwl is not None else wl
    wr = bwr if bwr is not None else wr
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    _, q, qs, _ = make(B, Sq, Hq, D, order, pads[0], "rand", offset, zero_b)
    _, kk, ks, _ = make(B, Sk, Hk, D, order, pads[1], "rand", offset, zero_b)
    _, v, vs, _ = make(B, Sk, Hk, D, "bhsd" if order == "bshd" else "bshd", pads[2], "rand", offset, zero_b)
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
    sink = None
    if has_sink:
        sink = (torch.rand(Hq, device=dev, dtype=torch.float32) * 6.0 - 1.0)
        vals["sinks"] = sink
    if "window_left" in e["runtime_params"]:
        vals["window_left"] = wl
    if "window_right" in e["runtime_params"]:
        vals["window_right"] = wr
    k = cat.kernel(name, TARGET)
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        launcher(k, vals)()
        torch.cuda.synchronize()
    finally:
        faulthandler.cancel_dump_traceback_later()
    oref, lref = reference(q, kk, v, scale, causal, cap, sink, wl, wr)
    got = o.double()
    bad = bool((~torch.isfinite(got)).any().item())
    on = oref.norm().item()
    eo = ((got - oref).norm() / on).item() if on > 0 else got.norm().item()
    fin = torch.isfinite(lref)
    lm = bool(torch.equal(fin, torch.isfinite(lse)) and bool((lse[~fin] == float("-inf")).all().item()))
    lr, lg = lref[fin], lse[fin].double()
    el = ((lg - lr).norm() / max(lr.norm().item(), 1e-30)).item() if lr.numel() else 0.0
    mask = torch.zeros(obuf.numel(), dtype=torch.bool, device=dev)
    mask.as_strided(o.shape, o.stride(), olead).fill_(True)
    outside = int((~torch.isnan(obuf[~mask])).sum().item()) + int((~torch.isnan(lbuf[B * Hq * Sq:])).sum().item())
    ok = not bad and eo < TOL and el < TOL and lm and outside == 0
    what = "B,Sq,Sk,Hq,Hk=%s %s pads=%s off=%d zero_b=%d scale=%.3g wl=%s wr=%s" % (
        shape, order, pads, offset, zero_b, scale, wl, wr)
    if not ok:
        failures.append("%s %s" % (name, what))
        log("FAIL %s %s: rel O %.3e rel LSE %.3e nonfinite O %s LSE -inf pattern %s written outside %d"
            % (name, what, eo, el, bad, lm, outside))
    return ok, eo, el


SHAPES = [(1, 1, 1, 1, 1), (1, 37, 37, 12, 12), (2, 65, 129, 12, 4), (1, 130, 97, 7, 1), (1, 200, 77, 12, 4),
          (1, 255, 1000, 7, 1), (1, 1000, 255, 40, 8), (2, 1100, 1100, 8, 2), (1, 2048, 4097, 4, 4)]
# run-time window edges (left, right) cycled over the shapes and paths
WINDOWS = [(64, 0), (300, -1), (-1, 40), (0, 0), (100, 100), (5, 3), (1000, 17), (129, 130), (-1, -1), (700, 0)]


def cases_of(e):
    """(shape, kwargs) of entry e: every shape with layouts and pads varied,
    then the cp.async (zero batch stride), element-load (misaligned) and
    negative-scale paths at a few shapes."""
    out = []
    for i, s in enumerate(SHAPES):
        order = "bshd" if i % 2 == 0 else "bhsd"
        pads = (0, 0, 0, 0) if i % 3 == 0 else (8, 0, 16, 8)
        out.append((s, dict(order=order, pads=pads)))
    for s in ((1, 200, 77, 12, 4), (1, 1000, 255, 40, 8), (1, 2048, 4097, 4, 4)):
        out.append((s, dict(zero_b=True)))
    for s in ((1, 130, 97, 7, 1), (2, 1100, 1100, 8, 2)):
        out.append((s, dict(order="bhsd", offset=1)))
    out.append(((2, 65, 129, 12, 4), dict(scale=-0.07)))
    win = "window_left" in e["runtime_params"] or "window_right" in e["runtime_params"]
    if win:
        out = [(s, dict(kw, wl=WINDOWS[i % len(WINDOWS)][0], wr=WINDOWS[i % len(WINDOWS)][1]))
               for i, (s, kw) in enumerate(out)]
        # more windows at the long shapes: every size through the three copy paths
        for i, (wl, wr) in enumerate(WINDOWS):
            out.append(((1, 2048, 4097, 4, 4) if i % 2 else (2, 1100, 1100, 8, 2),
                        dict(wl=wl, wr=wr, zero_b=i % 3 == 1, offset=1 if i % 3 == 2 else 0)))
    return out


def numerics(names, label):
    if over_budget():
        log("SKIPPED numerics of %s (time budget)" % label)
        summary.append("%s: numerics skipped (time)" % label)
        return
    nbad = ncases = 0
    for name in names:
        if name not in entries:
            log("MISSING kernel %s" % name)
            failures.append("missing " + name)
            continue
        e = entries[name]
        worst_o = worst_l = 0.0
        n = nfail = 0
        for s, kw in cases_of(e):
            try:
                ok, eo, el = run_case(name, e, s, **kw)
            except Exception as ex:
                ok, eo, el = False, float("nan"), float("nan")
                failures.append("%s %s exception %s" % (name, s, ex))
                log("FAIL %s %s %s: exception %s" % (name, s, kw, ex))
                traceback.print_exc()
                if "CUDA" in str(ex):
                    raise
            n += 1
            nfail += not ok
            worst_o, worst_l = max(worst_o, eo), max(worst_l, el)
        log("%-22s %2d cases %2d failed  worst rel L2: O %.3e  LSE %.3e" % (name, n, nfail, worst_o, worst_l))
        nbad += nfail
        ncases += n
    summary.append("%s: %d cases, %d failed" % (label, ncases, nbad))


def bench_case(name, B, S, H, D, wl=None, wr=None):
    import triton.testing
    e = entries[name]
    k = cat.kernel(name, TARGET)
    q = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    kk, v = torch.randn_like(q), torch.randn_like(q)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device=dev, dtype=torch.float32)
    vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=1.0 / math.sqrt(D))
    for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
        vals["%s_stride_b" % t], vals["%s_stride_h" % t], vals["%s_stride_s" % t] = x.stride(0), x.stride(1), x.stride(2)
    for d, x in zip(DIMS, (B, S, S, H, H)):
        if d in e["runtime_params"]:
            vals[d] = x
    if "sinks" in e["params"] and e["params"]["sinks"] in ("true", "1"):
        vals["sinks"] = torch.rand(H, device=dev, dtype=torch.float32)
    if "window_left" in e["runtime_params"]:
        vals["window_left"] = wl
    if "window_right" in e["runtime_params"]:
        vals["window_right"] = wr
    go = launcher(k, vals)
    faulthandler.dump_traceback_later(HANG_S * 4, exit=True)
    try:
        go()
        torch.cuda.synchronize()
        return triton.testing.do_bench(go, warmup=10, rep=40, return_mode="median")
    finally:
        faulthandler.cancel_dump_traceback_later()


def bench(rows, label):
    """rows: (label, kernel, B, S, H, D, wl, wr, baseline label or None)."""
    if "--no-bench" in flags or over_budget():
        log("SKIPPED timing %s" % label)
        summary.append("%s: timing skipped" % label)
        return
    log("\n== timing %s: do_bench medians (warm-up 10 ms, rep 40 ms), [B][H][S][D] bf16, heads q = k" % label)
    got = {}
    for (lab, name, B, S, H, D, wl, wr, base) in rows:
        if over_budget():
            log("SKIPPED %s (time budget)" % lab)
            continue
        try:
            ms = bench_case(name, B, S, H, D, wl, wr)
        except Exception as ex:
            log("FAIL timing %s: %s" % (lab, ex))
            failures.append("timing %s: %s" % (lab, ex))
            if "CUDA" in str(ex):
                raise
            continue
        got[lab] = ms
        rel = " (%.3fx the time of %s)" % (ms / got[base], base) if base in got else ""
        log("%-34s %-22s B=%d S=%d H=%d D=%d wl=%s wr=%s: %.3f ms%s" % (lab, name, B, S, H, D, wl, wr, ms, rel))
        summary.append("%s %.3f ms%s" % (lab, ms, rel))


def main():
    commit = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "COMMIT")).read().strip() \
        if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "COMMIT")) else "?"
    log("attn_feat: %s, %s UTC, commit %s, torch %s" % (torch.cuda.get_device_name(0),
                                                         datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                                                         commit, torch.__version__))
    log("\n== numerics: fp64 reference, O and LSE poisoned, rel L2 < %g" % TOL)
    numerics(["sc_d64_c1", "sc_d64_c0", "sc_d128_c1", "sc_d128_c0"], "softcap")
    numerics(["snk_d64_c1", "snk_d64_c0", "snk_d128_c1", "snk_d128_c0"], "sinks")
    numerics(["attn_any_d64_c1", "attn_any_d64_c0", "attn_any_d128_c1", "attn_any_d128_c0"], "plain")
    bench([("d128 causal 8K plain", "attn_any_d128_c1", 2, 8192, 16, 128, None, None, None),
           ("d128 causal 8K softcap", "sc_d128_c1", 2, 8192, 16, 128, None, None, "d128 causal 8K plain"),
           ("d128 causal 8K sinks", "snk_d128_c1", 2, 8192, 16, 128, None, None, "d128 causal 8K plain"),
           ("d64 causal 8K plain", "attn_any_d64_c1", 2, 8192, 16, 64, None, None, None),
           ("d64 causal 8K softcap", "sc_d64_c1", 2, 8192, 16, 64, None, None, "d64 causal 8K plain"),
           ("d64 causal 8K sinks", "snk_d64_c1", 2, 8192, 16, 64, None, None, "d64 causal 8K plain"),
           ("d128 noncausal 8K plain", "attn_any_d128_c0", 2, 8192, 16, 128, None, None, None),
           ("d128 noncausal 8K softcap", "sc_d128_c0", 2, 8192, 16, 128, None, None, "d128 noncausal 8K plain")],
          "softcap, sinks")
    numerics(["win_d64_c1", "win_d64_c0", "win_d128_c1", "win_d128_c0", "gptoss_d64", "gptoss_d128"],
             "windows")
    bench([("d128 causal 32K plain", "attn_any_d128_c1", 1, 32768, 16, 128, None, None, None),
           ("d128 causal 32K window 4K", "win_d128_c1", 1, 32768, 16, 128, 4095, 0, "d128 causal 32K plain"),
           ("d128 causal 32K window off", "win_d128_c1", 1, 32768, 16, 128, -1, -1, "d128 causal 32K plain"),
           ("d64 causal 32K plain", "attn_any_d64_c1", 1, 32768, 16, 64, None, None, None),
           ("d64 causal 32K window 4K", "win_d64_c1", 1, 32768, 16, 64, 4095, 0, "d64 causal 32K plain"),
           ("d64 causal 32K gpt-oss 128+sinks", "gptoss_d64", 1, 32768, 16, 64, 127, 0, "d64 causal 32K plain")],
          "windows")
    log("\n== summary (%.1f s)" % (time.time() - T0))
    for s in summary:
        log("  " + s)
    log("attn_feat: %s" % ("PASS" if not failures else "FAIL (%d): %s" % (len(failures), "; ".join(failures[:12]))))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
