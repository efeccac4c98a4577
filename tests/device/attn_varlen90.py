#!/usr/bin/env python3
"""The sm_90a varlen attention forward (packed sequences, templates/attn_fwd.sm90.hip.m4)
on the H200, the kernels of tests/device/h200_attn_varlen.yaml:
    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/attn_varlen90.py CATALOGUE [--no-bench]

(a) numerics, each kernel against an fp64 reference per sequence (torch
    float64 on the GPU; causal and windows bottom-right aligned per sequence,
    cap * tanh(s / cap), the sink in each row's denominator): lengths 0, 1,
    shorter than a tile, at and across tile edges, mixed long and short,
    Sq != Sk per sequence (rows without keys), GQA 32:8, 12:4, 7:1, the three
    copy paths (bulk copies; cp.async with 16-byte chunks, reached by a zero
    K/V head stride with one KV head; element loads, by a misaligned base),
    padded rows, and the persistent kernels' walk under HKRT_UNITS=1 and 5
    (every block walks many tiles over many sequences).  O and LSE are
    poisoned with NaN, with guards: rel L2 < 1e-2 for O and LSE (finite
    entries; -inf where the reference has it), no NaN in O, nothing written
    outside O and LSE.
(c) 64-bit offsets: Q and O of more than 2^31 elements (546578 tokens of
    32 x 128, d64: 64 x 64), the first and the last sequences against fp64,
    no NaN left in O or LSE.
(b) timing (triton do_bench medians; hkgen and padded cuDNN: median of 3): the varlen kernel against cuDNN (torch
    SDPA CUDNN_ATTENTION) on the same sequences padded into a batch (the
    padding's share of its tokens and of its causal work reported), and
    against torch's own varlen attention (torch.nn.attention.varlen, and
    FlashAttention-2's varlen forward) where torch has them; varlen against
    the plain kernel on 8 sequences of 2048 tokens (the same tokens as a
    batch).
A launch that has not finished after $VL_HANG_S seconds (default 5) ends the
run with tracebacks; $VL_BUDGET_S (default 100) bounds the whole.  Log:
$OUT/varlen.log."""
import ctypes
import faulthandler
import math
import os
import random
import sys
import time
import traceback

import torch

import hkrt

T0 = time.time()
TARGET = "sm_90a"
TOL = 1e-2
GUARD = 64
HANG_S = float(os.environ.get("VL_HANG_S", "5"))
BUDGET = float(os.environ.get("VL_BUDGET_S", "100"))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
out_dir = os.environ.get("OUT") or "build/device-logs"
os.makedirs(out_dir, exist_ok=True)
LOG = open(os.path.join(out_dir, "varlen.log"), "w")
dev = "cuda"
failures = []
summary = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def over_budget(margin=0.0):
    return time.time() - T0 > BUDGET - margin


cat = hkrt.Catalog(args[0] if args else "build/h200varlen", backend="cuda")
entries = {e["name"]: e for e in cat.manifest["kernels"] if e["target"] == TARGET and e["op"] == "attn_fwd"}
# an optional second catalogue of variants timed beside the first (its kernel
# vl_c1 / vl_c0 for vl_d128_c1 / vl_d128_c0)
cat2 = hkrt.Catalog(args[1], backend="cuda") if len(args) > 1 else None


def launcher(k, vals, c=None):
    """A no-argument launch of k with vals, packed once (grid and tensor maps
    as of now: HKRT_UNITS is read here)."""
    packed, grid = k.pack(vals), k.grid(vals)
    g = (ctypes.c_uint * 3)(*grid)
    blk = (ctypes.c_uint * 3)(*k.entry["block"])
    buf = ctypes.create_string_buffer(packed, len(packed))
    fn = k._function()
    dyn = int(k.entry.get("dynamic_lds", 0))

    def go():
        (c or cat).lib.check((c or cat).lib.c.hkrt_launch_ex(fn, g, blk, dyn, buf, len(packed),
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


def packed(total, H, D, pad, fill, offset=0, zero_h=False):
    """A [total][H][D] view (rows of D + pad) over a flat bf16 buffer with
    GUARD elements around it; zero_h: head stride 0 (H = 1)."""
    row = D + pad
    ss, sh = H * row, row
    n = max(total, 1) * ss
    lead = GUARD + offset
    if fill == "nan":
        buf = torch.full((lead + n + GUARD,), float("nan"), device=dev, dtype=torch.bfloat16)
    else:
        buf = torch.randn(lead + n + GUARD, device=dev, dtype=torch.bfloat16)
    sh = 0 if zero_h else sh
    return buf, buf.as_strided((total, H, D), (ss, sh, 1), lead), (ss, sh), lead


def reference(q, k, v, scale, causal, cap, sink, wl, wr):
    """One sequence: fp64 O [Sq][Hq][D] and LSE [Hq][Sq]; key j visible to
    query i (i' = i + Sk - Sq) iff causal allows (j <= i'), j >= i' - wl
    (wl >= 0), j <= i' + wr (wr >= 0); s = scale q.k, capped to
    cap tanh(s / cap); the sink joins each row's denominator, no value."""
    Sq, Hq, D = q.shape
    Sk, Hk = k.shape[0], k.shape[1]
    qd = q.double().transpose(0, 1)
    kd = k.double().transpose(0, 1).repeat_interleave(Hq // Hk, dim=0)
    vd = v.double().transpose(0, 1).repeat_interleave(Hq // Hk, dim=0)
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
        sk = sink.double()[:, None, None].expand(Hq, Sq, 1)
        lse = torch.logsumexp(torch.cat([s, sk], dim=-1), dim=-1)
    else:
        lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None].clamp(min=-1e300))
    p = torch.where(torch.isfinite(lse)[..., None], p, torch.zeros_like(p))
    return (p @ vd).transpose(0, 1), lse


def cu_of(lens):
    c = [0]
    for n in lens:
        c.append(c[-1] + n)
    return c


def run_case(name, e, seqs, Hq, Hk, pads=(0, 0, 0, 0), offset=0, zero_h=False, units=None, wl=None, wr=None,
             scale=None):
    """seqs: [(Sq, Sk)] per sequence."""
    D = int(e["params"]["head_dim"])
    causal, cap, has_sink, bwl, bwr = feats(e)
    wl = bwl if bwl is not None else wl
    wr = bwr if bwr is not None else wr
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    cq, ck = cu_of([a for a, _ in seqs]), cu_of([b for _, b in seqs])
    tq, tk = cq[-1], ck[-1]
    _, q, qs, _ = packed(tq, Hq, D, pads[0], "rand", offset)
    _, kk, ks, _ = packed(tk, Hk, D, pads[1], "rand", offset, zero_h)
    _, v, vs, _ = packed(tk, Hk, D, pads[2], "rand", offset, zero_h)
    obuf, o, os_, olead = packed(tq, Hq, D, pads[3], "nan")
    lbuf = torch.full((Hq * tq + GUARD,), float("nan"), device=dev, dtype=torch.float32)
    lse = lbuf[:Hq * tq].view(Hq, tq)
    cuq = torch.tensor(cq, dtype=torch.int32, device=dev)
    cuk = torch.tensor(ck, dtype=torch.int32, device=dev)
    vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=scale, cu_seqlens_q=cuq, cu_seqlens_k=cuk, total_q=tq,
                total_k=tk)
    for t, st in (("q", qs), ("k", ks), ("v", vs), ("o", os_)):
        vals["%s_stride_s" % t], vals["%s_stride_h" % t] = st
    dims = dict(batch=len(seqs), seqlen_q=max(a for a, _ in seqs), seqlen_k=max(b for _, b in seqs),
                heads_q=Hq, heads_k=Hk)
    for d, x in dims.items():
        if d in e["runtime_params"]:
            vals[d] = max(x, 1)
    sink = None
    if has_sink:
        sink = (torch.rand(Hq, device=dev, dtype=torch.float32) * 6.0 - 1.0)
        vals["sinks"] = sink
    if "window_left" in e["runtime_params"]:
        vals["window_left"] = wl
    if "window_right" in e["runtime_params"]:
        vals["window_right"] = wr
    k = cat.kernel(name, TARGET)
    if units:
        os.environ["HKRT_UNITS"] = str(units)
    try:
        go = launcher(k, vals)
    finally:
        os.environ.pop("HKRT_UNITS", None)
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        go()
        torch.cuda.synchronize()
    finally:
        faulthandler.cancel_dump_traceback_later()
    worst_o = worst_l = 0.0
    bad = False
    lm = True
    num = den = lnum = lden = 0.0
    for b, (sq, sk) in enumerate(seqs):
        if sq == 0:
            continue
        oref, lref = reference(q[cq[b]:cq[b + 1]], kk[ck[b]:ck[b + 1]], v[ck[b]:ck[b + 1]], scale, causal, cap,
                               sink, wl, wr)
        got = o[cq[b]:cq[b + 1]].double()
        bad |= bool((~torch.isfinite(got)).any().item())
        num += (got - oref).norm().item() ** 2
        den += oref.norm().item() ** 2
        lg = lse[:, cq[b]:cq[b + 1]]
        fin = torch.isfinite(lref)
        lm &= bool(torch.equal(fin, torch.isfinite(lg)) and bool((lg[~fin] == float("-inf")).all().item()))
        lnum += (lg[fin].double() - lref[fin]).norm().item() ** 2
        lden += lref[fin].norm().item() ** 2
    eo = math.sqrt(num / den) if den > 0 else math.sqrt(num)
    el = math.sqrt(lnum / lden) if lden > 0 else math.sqrt(lnum)
    mask = torch.zeros(obuf.numel(), dtype=torch.bool, device=dev)
    if tq:
        mask.as_strided(o.shape, o.stride(), olead).fill_(True)
    outside = int((~torch.isnan(obuf[~mask])).sum().item()) + int((~torch.isnan(lbuf[Hq * tq:])).sum().item())
    ok = not bad and eo < TOL and el < TOL and lm and outside == 0
    lens = seqs if len(seqs) <= 8 else "%d seqs, Sq %d..%d" % (len(seqs), min(a for a, _ in seqs),
                                                                 max(a for a, _ in seqs))
    what = "seqs=%s H=%d:%d pads=%s off=%d zero_h=%d units=%s wl=%s wr=%s" % (
        lens, Hq, Hk, pads, offset, zero_h, units, wl, wr)
    if not ok:
        failures.append("%s %s" % (name, what))
        log("FAIL %s %s: rel O %.3e rel LSE %.3e nonfinite O %s LSE -inf pattern %s written outside %d"
            % (name, what, eo, el, bad, lm, outside))
    return ok, eo, el


rng = random.Random(19)
SEQ_SETS = [
    [(1, 1)],
    [(1, 1), (5, 5), (127, 127), (128, 128), (129, 129), (300, 300)],
    [(1, 1), (3, 200), (130, 97), (257, 513), (0, 10), (10, 0), (64, 64), (200, 77)],
    [(2000, 2000), (1, 1), (50, 50), (1500, 1700), (17, 17)],
    [(n, n) for n in (rng.randint(1, 700) for _ in range(12))],
    [(a, a + rng.randint(0, 300)) for a in (rng.randint(1, 400) for _ in range(9))],
    [(300, 300)] * 3 + [(0, 0)] + [(1000, 1000)],
]
HEADS = [(32, 8), (12, 4), (7, 1)]
WINDOWS = [(64, 0), (300, -1), (-1, 40), (0, 0), (100, 100), (5, 3), (129, 130), (-1, -1)]


def cases_of(e):
    """(seqs, Hq, Hk, kwargs) of entry e: every sequence set over the head
    ratios, padded rows on some; then the cp.async (zero KV head stride, one
    KV head) and element-load (misaligned) paths; the persistent walk under
    HKRT_UNITS 1 and 5; a negative scale."""
    out = []
    for i, s in enumerate(SEQ_SETS):
        hq, hk = HEADS[i % len(HEADS)]
        pads = (0, 0, 0, 0) if i % 2 == 0 else (8, 0, 16, 8)
        out.append((s, hq, hk, dict(pads=pads)))
    for i in (2, 3, 4):
        out.append((SEQ_SETS[i], 7, 1, dict(zero_h=True)))
    for i in (2, 5):
        out.append((SEQ_SETS[i], 12, 4, dict(offset=1)))
    for i, u in ((3, 1), (4, 5), (2, 5)):
        out.append((SEQ_SETS[i], 12, 4, dict(units=u)))
    out.append((SEQ_SETS[2], 12, 4, dict(scale=-0.07)))
    if "window_left" in e["runtime_params"] or "window_right" in e["runtime_params"]:
        out = [(s, hq, hk, dict(kw, wl=WINDOWS[i % len(WINDOWS)][0], wr=WINDOWS[i % len(WINDOWS)][1]))
               for i, (s, hq, hk, kw) in enumerate(out)]
    return out


def numerics(names):
    nbad = ncases = 0
    for name in names:
        if over_budget(45):
            log("SKIPPED numerics of %s (time budget)" % name)
            summary.append("%s: numerics skipped (time)" % name)
            continue
        if name not in entries:
            log("MISSING kernel %s" % name)
            failures.append("missing " + name)
            continue
        e = entries[name]
        worst_o = worst_l = 0.0
        n = nfail = 0
        for s, hq, hk, kw in cases_of(e):
            try:
                ok, eo, el = run_case(name, e, s, hq, hk, **kw)
            except Exception as ex:
                ok, eo, el = False, float("nan"), float("nan")
                failures.append("%s exception %s" % (name, ex))
                log("FAIL %s %s %d:%d %s: exception %s" % (name, s, hq, hk, kw, ex))
                traceback.print_exc()
                if "CUDA" in str(ex):
                    raise
            n += 1
            nfail += not ok
            worst_o, worst_l = max(worst_o, eo), max(worst_l, el)
        log("%-16s %2d cases %2d failed  worst rel L2: O %.3e  LSE %.3e  (%.0f s)" % (
            name, n, nfail, worst_o, worst_l, time.time() - T0))
        nbad += nfail
        ncases += n
    summary.append("numerics: %d cases, %d failed" % (ncases, nbad))


# ---- timing ----------------------------------------------------------------------------
def lens_to(total, lo, hi, r):
    """Lengths drawn uniformly from lo..hi until they add up to total (the last one cut)."""
    out = []
    while sum(out) < total:
        out.append(min(r.randint(lo, hi), total - sum(out)))
    return out


def bench_ms(f):
    import triton.testing
    faulthandler.dump_traceback_later(HANG_S * 4, exit=True)
    try:
        f()
        torch.cuda.synchronize()
        return triton.testing.do_bench(f, warmup=10, rep=40, return_mode="median")
    finally:
        faulthandler.cancel_dump_traceback_later()


profiled = set()


def bench_one(label, name, lens, Hq, Hk, D, causal=True, reps=1):
    e = entries[name]
    k = cat.kernel(name, TARGET)
    B, L, T = len(lens), max(lens), sum(lens)
    cq = torch.tensor(cu_of(lens), dtype=torch.int32, device=dev)
    q = torch.randn(T, Hq, D, device=dev, dtype=torch.bfloat16)
    kk = torch.randn(T, Hk, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn_like(kk)
    o = torch.empty_like(q)
    lse = torch.empty(Hq, T, device=dev, dtype=torch.float32)
    vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=1.0 / math.sqrt(D), cu_seqlens_q=cq, cu_seqlens_k=cq,
                total_q=T, total_k=T)
    for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
        vals["%s_stride_s" % t], vals["%s_stride_h" % t] = x.stride(0), x.stride(1)
    for d, x in dict(batch=B, seqlen_q=L, seqlen_k=L, heads_q=Hq, heads_k=Hk).items():
        if d in e["runtime_params"]:
            vals[d] = x
    go = launcher(k, vals)
    res = {"hkgen": sorted(bench_ms(go) for _ in range(reps))[reps // 2]}
    alt = {"vl_d128_c1": "vl_c1", "vl_d128_c0": "vl_c0"}.get(name)
    if cat2 is not None and alt:
        try:
            res["hkgen_seqorder"] = bench_ms(launcher(cat2.kernel(alt, TARGET), vals, cat2))
        except Exception as ex:
            log("  variant %s: %s" % (alt, ex))
    o_ours = o.clone()
    # causal work in query-key pairs: the sequences' and the padded batch's
    work = sum(n * (n + 1) / 2 if causal else n * n for n in lens)
    pad_work = B * (L * (L + 1) / 2 if causal else L * L)
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qp = torch.randn(B, Hq, L, D, device=dev, dtype=torch.bfloat16)
    kp = torch.randn(B, Hk, L, D, device=dev, dtype=torch.bfloat16)
    vp = torch.randn_like(kp)
    try:
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            f = lambda: F.scaled_dot_product_attention(qp, kp, vp, is_causal=causal, enable_gqa=(Hq != Hk))
            res["cudnn_padded"] = sorted(bench_ms(f) for _ in range(reps))[reps // 2]
    except Exception as ex:
        log("  cudnn padded: %s" % str(ex).splitlines()[0][:160])
    del qp, kp, vp
    try:
        from torch.nn.attention import varlen as tvl
        try:
            tvl.varlen_attn(q, kk, v, cq, cq, L, L, window_size=(-1, 0) if causal else (-1, -1))
            fv = lambda: tvl.varlen_attn(q, kk, v, cq, cq, L, L, window_size=(-1, 0) if causal else (-1, -1))
        except TypeError:
            fv = lambda: tvl.varlen_attn(q, kk, v, cq, cq, L, L, is_causal=causal)
        res["torch_varlen"] = bench_ms(fv)
        if label not in profiled:  # which kernels torch's varlen runs
            profiled.add(label)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                fv()
                torch.cuda.synchronize()
            names = sorted({ev.name[:70] for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA})
            log("  torch varlen_attn runs: %s" % "; ".join(names[:4]))
    except Exception as ex:
        log("  torch.nn.attention.varlen: %s" % str(ex).splitlines()[0][:160])
    try:
        ff = lambda: torch.ops.aten._flash_attention_forward(q, kk, v, cq, cq, L, L, 0.0, causal, False,
                                                             scale=1.0 / math.sqrt(D))
        res["fa2_varlen"] = bench_ms(ff)
        # a check at scale: ours against FA2's bf16 output, same tokens
        of = ff()[0].double()
        rel = ((o_ours.double() - of).norm() / of.norm()).item()
        log("  %s %d tokens: rel L2 against FA2 varlen %.3e" % (name, T, rel))
        if not rel < 2e-2:
            failures.append("%s %s: rel L2 against FA2 %.3e" % (label, name, rel))
            log("FAIL %s %s: rel L2 against FA2 varlen %.3e" % (label, name, rel))
    except Exception as ex:
        log("  fa2 varlen: %s" % str(ex).splitlines()[0][:160])
    try:
        # cuDNN on jagged (nested) tensors, where SDPA takes them
        off = cq.long()
        nj = lambda x: torch.nested.nested_tensor_from_jagged(x, offsets=off).transpose(1, 2)
        qn, kn, vn = nj(q), nj(kk), nj(v)
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            fn = lambda: F.scaled_dot_product_attention(qn, kn, vn, is_causal=causal, enable_gqa=(Hq != Hk))
            res["cudnn_jagged"] = bench_ms(fn)
    except Exception as ex:
        log("  cudnn jagged: %s" % str(ex).splitlines()[0][:160])
    flops = 4.0 * Hq * D * work
    base = res.get("cudnn_padded")
    line = "%-22s %-12s %d seqs %d tokens (max %d; padding: %.1f%% of tokens, %.1f%% of the work) %d:%d d%d:" % (
        label, name, B, T, L, 100.0 * (1 - T / (B * L)), 100.0 * (1 - work / pad_work), Hq, Hk, D)
    for kname, ms in res.items():
        line += "  %s %.3f ms (%.0f TFLOP/s%s)" % (kname, ms, flops / ms / 1e9,
                                                  ", %.3fx cudnn_padded speed" % (base / ms) if base else "")
    log(line)
    summary.append(line)


def bench():
    if "--no-bench" in flags:
        return
    log("\n== timing: do_bench medians (warm-up 10 ms, rep 40 ms); TFLOP/s = 4 Hq D (pairs of the real sequences)"
        " / time (padded cuDNN counted on the same work)")
    r = random.Random(1)
    sets = [("16 seqs 128..4096", [r.randint(128, 4096) for _ in range(16)]),
            ("16K tokens 128..4096", lens_to(16384, 128, 4096, r)),
            ("64K tokens 128..4096", lens_to(65536, 128, 4096, r))]
    rows = []
    for lab, lens in sets:
        rows.append((lab, "vl_d128_c1", lens, 32, 8, 128, True))
        rows.append((lab, "vl_d128_c1", lens, 16, 16, 128, True))
    rows.append((sets[0][0], "vl_d128_c0", sets[0][1], 32, 8, 128, False))
    rows.append((sets[0][0], "vl_d64_c1", sets[0][1], 32, 8, 64, True))
    rows.append(("64 seqs 16..1024", "vl_d128_c1", [r.randint(16, 1024) for _ in range(64)], 32, 8, 128, True))
    equal_length(r)
    for lab, name, lens, hq, hk, d, causal in rows:
        if over_budget(3):
            log("SKIPPED timing %s %s %d:%d (time budget)" % (lab, name, hq, hk))
            continue
        if name not in entries:
            log("MISSING kernel %s" % name)
            continue
        try:
            bench_one(lab, name, lens, hq, hk, d, causal, reps=3)
        except Exception as ex:
            log("FAIL timing %s %s: %s" % (lab, name, ex))
            failures.append("timing %s: %s" % (lab, ex))
            if "CUDA" in str(ex):
                raise


def equal_length(r):
    """varlen's cost: 8 sequences of 2048 tokens (32:8, d128, causal) as varlen
    and as the plain kernel's batch [8][2048] (the same tokens, BSHD)."""
    if "plain" not in entries or over_budget(10):
        return
    B, S, Hq, Hk, D = 8, 2048, 32, 8, 128
    q = torch.randn(B * S, Hq, D, device=dev, dtype=torch.bfloat16)
    kk = torch.randn(B * S, Hk, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn_like(kk)
    o = torch.empty_like(q)
    lse = torch.empty(Hq, B * S, device=dev, dtype=torch.float32)
    cq = torch.tensor(cu_of([S] * B), dtype=torch.int32, device=dev)
    vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=1.0 / math.sqrt(D), cu_seqlens_q=cq, cu_seqlens_k=cq,
                total_q=B * S, total_k=B * S, batch=B, seqlen_q=S, seqlen_k=S, heads_q=Hq, heads_k=Hk)
    for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
        vals["%s_stride_s" % t], vals["%s_stride_h" % t] = x.stride(0), x.stride(1)
    vl = sorted(bench_ms(launcher(cat.kernel("vl_d128_c1", TARGET), vals)) for _ in range(3))[1]
    o_vl = o.clone()
    pv = dict(vals)
    for t in ("cu_seqlens_q", "cu_seqlens_k", "total_q", "total_k"):
        del pv[t]
    pv["LSE"] = torch.empty(B, Hq, S, device=dev, dtype=torch.float32)
    for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
        pv["%s_stride_b" % t] = S * x.stride(0)
    pl = sorted(bench_ms(launcher(cat.kernel("plain", TARGET), pv)) for _ in range(3))[1]
    rel = ((o.double() - o_vl.double()).norm() / o.double().norm()).item()
    line = "equal lengths [8][2048] 32:8 d128 causal: varlen %.3f ms, plain %.3f ms (varlen %.3fx the time; outputs rel L2 %.1e)" % (
        vl, pl, vl / pl, rel)
    log(line)
    summary.append(line)
    if not rel < 1e-2:
        failures.append("equal lengths: varlen and plain outputs differ, rel L2 %.3e" % rel)


def big_offsets(name, Hq, D):
    """64-bit offsets: 136 sequences of 4000 tokens and three short ones at
    the end, Hq x D elements per token so that Q and O pass 2^31 elements;
    the first and the last three sequences against fp64, no NaN left in O
    (poisoned first)."""
    if name not in entries or over_budget(20):
        log("SKIPPED big offsets %s" % name)
        return
    e = entries[name]
    Hk = 8
    lens = [4000] * 136 + [2500, 77, 1]
    seqs = [(n, n) for n in lens]
    T = sum(lens)
    q = torch.randn(T, Hq, D, device=dev, dtype=torch.bfloat16)
    kk = torch.randn(T, Hk, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn_like(kk)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((Hq, T), float("nan"), device=dev, dtype=torch.float32)
    cq = cu_of(lens)
    cu = torch.tensor(cq, dtype=torch.int32, device=dev)
    vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=1.0 / math.sqrt(D), cu_seqlens_q=cu, cu_seqlens_k=cu,
                total_q=T, total_k=T)
    for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
        vals["%s_stride_s" % t], vals["%s_stride_h" % t] = x.stride(0), x.stride(1)
    for d, x in dict(batch=len(lens), seqlen_q=4000, seqlen_k=4000, heads_q=Hq, heads_k=Hk).items():
        if d in e["runtime_params"]:
            vals[d] = x
    go = launcher(cat.kernel(name, TARGET), vals)
    faulthandler.dump_traceback_later(HANG_S * 4, exit=True)
    try:
        go()
        torch.cuda.synchronize()
    finally:
        faulthandler.cancel_dump_traceback_later()
    nan = bool(torch.isnan(o).any().item()) or bool(torch.isnan(lse).any().item())
    worst = 0.0
    for b in (0, len(lens) - 3, len(lens) - 2, len(lens) - 1):
        oref, lref = reference(q[cq[b]:cq[b + 1]], kk[cq[b]:cq[b + 1]], v[cq[b]:cq[b + 1]], 1.0 / math.sqrt(D),
                               True, 0.0, None, None, None)
        got = o[cq[b]:cq[b + 1]].double()
        eo = ((got - oref).norm() / oref.norm()).item()
        el = ((lse[:, cq[b]:cq[b + 1]].double() - lref).norm() / lref.norm()).item()
        worst = max(worst, eo, el)
        del oref, lref, got
    ok = not nan and worst < TOL
    line = "big offsets %s: %d tokens x %d x %d = %.3g elements of Q (2^31 = %.3g): worst rel L2 %.3e, NaN left %s: %s" % (
        name, T, Hq, D, float(T * Hq * D), float(2 ** 31), worst, nan, "ok" if ok else "FAIL")
    log(line)
    summary.append(line)
    if not ok:
        failures.append(line)
    del q, kk, v, o, lse
    torch.cuda.empty_cache()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    commit = open(os.path.join(here, "COMMIT")).read().strip() if os.path.exists(os.path.join(here, "COMMIT")) else "?"
    log("attn_varlen90: %s, commit %s, torch %s, cudnn %s" % (torch.cuda.get_device_name(0), commit,
                                                             torch.__version__, torch.backends.cudnn.version()))
    order = ["vl_d128_c1", "vl_d64_c1", "vl_d128_c0", "vl_d64_c0", "vlsink", "vlfeat_d64", "vlfeat_d128"]
    vl = {n for n, e in entries.items() if e["params"].get("varlen") in ("true", "1")}
    names = [n for n in order if n in vl] + sorted(n for n in vl if n not in order)
    numerics(names[:2])
    bench()
    numerics(names[2:])
    big_offsets("vl_d128_c1", 32, 128)
    big_offsets("vl_d64_c1", 64, 64)
    log("\n".join(["", "== summary"] + summary))
    log("attn_varlen90: %d failures, %.0f s" % (len(failures), time.time() - T0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
