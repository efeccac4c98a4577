#!/usr/bin/env python3
"""torch_ops.py CATALOG (on the H200): hkrt.py's torch face over a catalogue of
tests/device/torch_ops.yaml.

(a) numerics of every op against fp64 torch (relative L2 < 1e-2, NaN fails;
    HKRT_POISON=1 fills each output with NaN before its launch):
    hkrt.attention forward (BSHD, BHSD, a packed-QKV view, GQA, MQA, Sq != Sk,
    causal rows with no visible key: O = 0 and LSE = -inf) and, where the
    catalogue has attn_bwd, its gradients through autograd; hkrt.gemm (nt,
    nn), hkrt.rms_norm and hkrt.layer_norm (with and without residual),
    hkrt.rope (tables and computed);
(b) errors: each bad dtype, device, head_dim, heads ratio and stride raises
    hkrt.ArgError naming the argument, before any launch;
(c) torch.compile(fullgraph=True) over the custom ops: no graph break, the ops
    stay in the graph as torch.ops.hkrt.*, and the compiled numbers equal
    eager's (forward; with attn_bwd also a training step's gradients);
(d) the host time of an hkrt.attention call against SDPA at a small problem.
Logs to $OUT/torch_ops.log; exit status 1 on any failure."""
import datetime
import faulthandler
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

import hkrt

CAT = sys.argv[1]
PART = sys.argv[2] if len(sys.argv) > 2 else "all"  # fwd: all but the backward; bwd: the backward only
out_dir = os.environ.get("OUT") or "build/device-logs"
os.makedirs(out_dir, exist_ok=True)
LOG = open(os.path.join(out_dir, "torch_ops.log"), "a" if PART == "bwd" else "w")
# $HANG_S seconds after the start (a hung kernel), every thread's stack to stderr and exit 1
if os.environ.get("HANG_S"):
    faulthandler.dump_traceback_later(float(os.environ["HANG_S"]), exit=True)
fails = []
dev = "cuda"


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def check(ok, what):
    if not ok:
        fails.append(what)
    log("%-4s %s" % ("ok" if ok else "FAIL", what))


def rel(got, ref):
    got, ref = got.double(), ref.double()
    if torch.isnan(got).any() or torch.isinf(got).any():
        return float("inf")
    d = ref.norm().item()
    return (got - ref).norm().item() / d if d else (got - ref).norm().item()


def section(name, fn):
    log("== %s" % name)
    t0 = time.time()
    try:
        fn()
    except Exception:
        fails.append(name + " crashed")
        log("FAIL %s crashed:\n%s" % (name, traceback.format_exc(limit=6)))
    log("   (%.1f s)" % (time.time() - t0))


cat = hkrt.set_default_catalog(CAT)
HAVE_BWD = any(e["op"] == "attn_bwd" for e in cat.manifest["kernels"])
log("torch_ops.py: %s, torch %s, %s UTC, commit %s, catalogue %s (%d kernels, attn_bwd %s)" % (
    torch.cuda.get_device_name(0), torch.__version__, datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
    os.environ.get("HK_COMMIT", "?"), CAT, len(cat.manifest["kernels"]), "yes" if HAVE_BWD else "no"))
log("HKRT_POISON=%s" % os.environ.get("HKRT_POISON", ""))


def ref_attention(q, k, v, causal, scale, layout):
    """fp64 O and LSE; bottom-right causal mask; BSHD or BHSD in and out."""
    if layout == "bshd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    q, k, v = q.double(), k.double(), v.double()
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) * scale
    Sq, Sk = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(Sq, device=q.device)[:, None]
        j = torch.arange(Sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + Sk - Sq, float("-inf"))
    with torch.no_grad():
        lse = torch.logsumexp(s, -1)  # -inf on rows with no visible key
    valid = torch.isfinite(lse)[..., None]
    p = torch.softmax(s.masked_fill(~valid, 0.0), -1) * valid  # rows with no key: 0, and gradient 0
    o = p @ v
    if layout == "bshd":
        o = o.transpose(1, 2)
    return o, lse


def make_qkv(layout, B, Sq, Sk, Hq, Hk, D, packed=False, grad=False):
    if packed:  # q, k, v as views of one [B, S, Hq + 2 Hk, D] projection (BSHD, row stride (Hq + 2 Hk) D)
        assert Sq == Sk and layout == "bshd"
        x = torch.randn(B, Sq, Hq + 2 * Hk, D, device=dev, dtype=torch.bfloat16)
        q, k, v = x[:, :, :Hq], x[:, :, Hq:Hq + Hk], x[:, :, Hq + Hk:]
    elif layout == "bshd":
        q = torch.randn(B, Sq, Hq, D, device=dev, dtype=torch.bfloat16)
        k = torch.randn(B, Sk, Hk, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn(B, Sk, Hk, D, device=dev, dtype=torch.bfloat16)
    elif layout == "bhsd_t":  # BHSD views of BSHD buffers (what x.view(B, S, H, D).transpose(1, 2) gives)
        q = torch.randn(B, Sq, Hq, D, device=dev, dtype=torch.bfloat16).transpose(1, 2)
        k = torch.randn(B, Sk, Hk, D, device=dev, dtype=torch.bfloat16).transpose(1, 2)
        v = torch.randn(B, Sk, Hk, D, device=dev, dtype=torch.bfloat16).transpose(1, 2)
    else:
        q = torch.randn(B, Hq, Sq, D, device=dev, dtype=torch.bfloat16)
        k = torch.randn(B, Hk, Sk, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn(B, Hk, Sk, D, device=dev, dtype=torch.bfloat16)
    if grad:
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    return q, k, v


ATTN_SHAPES = [  # layout, B, Sq, Sk, Hq, Hk, D, causal, packed
    ("bshd", 2, 1000, 1000, 8, 2, 128, True, False),
    ("bshd", 2, 1000, 1000, 8, 2, 128, False, False),
    ("bshd", 1, 777, 777, 12, 4, 64, True, True),
    ("bhsd", 1, 300, 1000, 8, 8, 128, True, False),
    ("bhsd", 2, 1000, 300, 7, 1, 64, True, False),    # MQA, rows with no visible key
    ("bhsd_t", 2, 513, 513, 16, 4, 128, True, False),
    ("bshd", 1, 61, 129, 4, 1, 64, False, False),
]


def attn_forward():
    for (lay, B, Sq, Sk, Hq, Hk, D, causal, packed) in ATTN_SHAPES:
        layout = "bhsd" if lay.startswith("bhsd") else "bshd"
        q, k, v = make_qkv(lay, B, Sq, Sk, Hq, Hk, D, packed)
        scale = D ** -0.5
        o, lse = hkrt.attention(q, k, v, causal=causal, layout=layout, return_lse=True)
        ro, rl = ref_attention(q, k, v, causal, scale, layout)
        fin = torch.isfinite(rl)
        eo = rel(o, ro)
        el = rel(lse[fin], rl[fin])
        inf_ok = bool((lse[~fin] == float("-inf")).all().item())
        check(eo < 1e-2 and el < 1e-2 and inf_ok and tuple(o.shape) == tuple(q.shape),
              "attention %s%s B%d Sq%d Sk%d %d:%d d%d causal %d: O %.2e, LSE %.2e, %d -inf rows %s" % (
                  lay, " packed-QKV view" if packed else "", B, Sq, Sk, Hq, Hk, D, causal, eo, el,
                  int((~fin).sum().item()), "ok" if inf_ok else "WRONG"))
        # the same shape again: the bound launch with new tensors
        q2, k2, v2 = (t.clone() * 0.5 for t in (q, k, v))
        o2 = hkrt.attention(q2, k2, v2, causal=causal, layout=layout)
        e2 = rel(o2, ref_attention(q2, k2, v2, causal, scale, layout)[0])
        check(e2 < 1e-2, "  second call, new tensors (bound launch): O %.2e" % e2)


def catalog_forms():
    """catalog= as the default, an open Catalog and a folder: the same kernels, the same bits."""
    q, k, v = make_qkv("bshd", 2, 200, 300, 8, 2, 128)
    ref = hkrt.attention(q, k, v, causal=True)
    for what, c in (("a Catalog", cat), ("a folder", CAT), ("an absolute folder", os.path.abspath(CAT))):
        o = hkrt.attention(q, k, v, causal=True, catalog=c)
        check(torch.equal(o, ref), "catalog= %s: the default's bits" % what)


def attn_backward():
    if not HAVE_BWD:
        q, k, v = make_qkv("bshd", 1, 128, 128, 4, 2, 128, grad=True)
        o = hkrt.attention(q, k, v, causal=True)
        try:
            o.sum().backward()
            check(False, "backward without attn_bwd in the catalogue: no error")
        except hkrt.ArgError as e:
            check("attn_bwd" in str(e), "backward without attn_bwd: %s" % str(e)[:300])
        return
    for (lay, B, Sq, Sk, Hq, Hk, D, causal, packed) in ATTN_SHAPES:
        layout = "bhsd" if lay.startswith("bhsd") else "bshd"
        q, k, v = make_qkv(lay, B, Sq, Sk, Hq, Hk, D, packed, grad=True)
        o = hkrt.attention(q, k, v, causal=causal, layout=layout)
        do = torch.randn_like(o)
        o.backward(do)
        q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
        ro, _ = ref_attention(q64, k64, v64, causal, D ** -0.5, layout)
        ro.backward(do.double())
        errs = [rel(a.grad, b.grad) for a, b in ((q, q64), (k, k64), (v, v64))]
        first = [t.grad.clone() for t in (q, k, v)]
        for t in (q, k, v):
            t.grad = None
        hkrt.attention(q, k, v, causal=causal, layout=layout).backward(do)
        same = all(torch.equal(a, t.grad) for a, t in zip(first, (q, k, v)))
        check(same, "  backward run twice: the same bits (deterministic)")
        if lay == "bshd" and packed:  # the custom op's own autograd formula gives the same bits
            for t in (q, k, v):
                t.grad = None
            torch.ops.hkrt.attn_fwd(q, k, v, causal, D ** -0.5, layout, "")[0].backward(do)
            same = all(torch.equal(a, t.grad) for a, t in zip(first, (q, k, v)))
            check(same, "  torch.ops.hkrt.attn_fwd's autograd (register_autograd) = hkrt.attention's, bit for bit")
        check(all(e < 1e-2 for e in errs), "attention backward %s%s B%d Sq%d Sk%d %d:%d d%d causal %d: "
              "dQ %.2e dK %.2e dV %.2e" % (lay, " packed" if packed else "", B, Sq, Sk, Hq, Hk, D, causal, *errs))


def gemm_backward():
    for layout, (M, N, K) in (("nt", (1000, 768, 512)), ("nn", (333, 1024, 264))):
        a = torch.randn(M, K, device=dev, dtype=torch.bfloat16, requires_grad=True)
        b = (torch.randn(N, K, device=dev, dtype=torch.bfloat16) if layout == "nt" else
             torch.randn(K, N, device=dev, dtype=torch.bfloat16)).requires_grad_()
        dc = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
        hkrt.gemm(a, b, layout).backward(dc)
        a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
        (a64 @ (b64.t() if layout == "nt" else b64)).backward(dc.double())
        ea, eb = rel(a.grad, a64.grad), rel(b.grad, b64.grad)
        check(max(ea, eb) < 1e-2, "gemm %s backward M%d N%d K%d: dA %.2e, dB %.2e" % (layout, M, N, K, ea, eb))


def norm_backward():
    """Gradients of x, weight, bias and residual through hkrt.rms_norm / layer_norm (the norm's bwd and
    bwd_reduce kernels) against fp64 autograd; the loss uses both y and the new residual s."""
    for kind in ("rmsnorm", "layernorm"):
        for wdt in (torch.bfloat16, torch.float32):
            for R, H, res in ((4096, 1024, True), (77, 4096, False), (600, 1000, True)):
                x = torch.randn(R, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
                r = torch.randn(R, H, device=dev, dtype=torch.bfloat16, requires_grad=True) if res else None
                w = (1 + 0.1 * torch.randn(H, device=dev)).to(wdt).requires_grad_()
                b = (0.1 * torch.randn(H, device=dev)).to(wdt).requires_grad_()
                gy = torch.randn(R, H, device=dev, dtype=torch.bfloat16)
                gs = torch.randn(R, H, device=dev, dtype=torch.bfloat16)
                if kind == "rmsnorm":
                    out = hkrt.rms_norm(x, w, residual=r)
                else:
                    out = hkrt.layer_norm(x, w, b, residual=r)
                y, s = out if res else (out, None)
                loss = (y.float() * gy.float()).sum() + ((s.float() * gs.float()).sum() if res else 0)
                loss.backward()
                x6, w6, b6 = (t.detach().double().requires_grad_() for t in (x, w, b))
                r6 = r.detach().double().requires_grad_() if res else None
                s6 = x6 + r6 if res else x6
                if kind == "rmsnorm":
                    y6 = s6 * torch.rsqrt((s6 * s6).mean(-1, keepdim=True) + 1e-5) * w6
                else:
                    y6 = F.layer_norm(s6, (H,), w6, b6, 1e-5)
                l6 = (y6 * gy.double()).sum() + ((s6 * gs.double()).sum() if res else 0)
                l6.backward()
                pairs = [("dx", x.grad, x6.grad), ("dweight", w.grad, w6.grad)]
                if kind == "layernorm":
                    pairs.append(("dbias", b.grad, b6.grad))
                if res:
                    pairs.append(("dresidual", r.grad, r6.grad))
                errs = [(n, rel(a, b_)) for n, a, b_ in pairs]
                check(all(e < 1e-2 for _, e in errs), "%s backward %dx%d weight %s residual %d: %s" % (
                    kind, R, H, str(wdt)[6:], res, ", ".join("%s %.2e" % ne for ne in errs)))


def other_ops():
    for layout, (M, N, K) in (("nt", (1000, 768, 512)), ("nn", (333, 1024, 257)), ("nt", (64, 96, 64))):
        a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(N, K, device=dev, dtype=torch.bfloat16) if layout == "nt" else \
            torch.randn(K, N, device=dev, dtype=torch.bfloat16)
        c = hkrt.gemm(a, b, layout)
        ref = a.double() @ (b.double().t() if layout == "nt" else b.double())
        e = rel(c, ref)
        check(e < 1e-2, "gemm %s M%d N%d K%d: %.2e" % (layout, M, N, K, e))
    for wdt in (torch.bfloat16, torch.float32):
        for R, H in ((4096, 1024), (77, 4096), (3, 1000)):
            x = torch.randn(R, H, device=dev, dtype=torch.bfloat16)
            r = torch.randn(R, H, device=dev, dtype=torch.bfloat16)
            w = (1 + 0.1 * torch.randn(H, device=dev)).to(wdt)
            bias = (0.1 * torch.randn(H, device=dev)).to(wdt)
            y = hkrt.rms_norm(x, w)
            xs = x.double()
            ref = xs * torch.rsqrt((xs * xs).mean(-1, keepdim=True) + 1e-5) * w.double()
            e = rel(y, ref)
            y2, s2 = hkrt.rms_norm(x, w, residual=r)
            s_ref = (x.double() + r.double())
            ref2 = s_ref * torch.rsqrt((s_ref * s_ref).mean(-1, keepdim=True) + 1e-5) * w.double()
            e2, es = rel(y2, ref2), rel(s2, s_ref)
            y3 = hkrt.layer_norm(x, w, bias)
            ref3 = F.layer_norm(xs, (H,), w.double(), bias.double(), 1e-5)
            e3 = rel(y3, ref3)
            y4, s4 = hkrt.layer_norm(x, w, bias, residual=r)
            e4 = rel(y4, F.layer_norm(s_ref, (H,), w.double(), bias.double(), 1e-5))
            check(max(e, e2, es, e3, e4) < 1e-2, "norm %dx%d weight %s: rms %.2e, rms+res %.2e (s %.2e), "
                  "layer %.2e, layer+res %.2e" % (R, H, str(wdt)[6:], e, e2, es, e3, e4))
    # x 2 bytes off 16: the baked vec: only kernels refuse it, hkrt.py takes a run-time one
    for R in (5, 1024):
        H = 4096
        x = torch.randn(R * H + 1, device=dev, dtype=torch.bfloat16)[1:].view(R, H)
        r = torch.randn(R, H, device=dev, dtype=torch.bfloat16)
        w = (1 + 0.1 * torch.randn(H, device=dev)).to(torch.bfloat16)
        y, s = hkrt.rms_norm(x, w, residual=r)
        s_ref = x.double() + r.double()
        ref = s_ref * torch.rsqrt((s_ref * s_ref).mean(-1, keepdim=True) + 1e-5) * w.double()
        e = rel(y, ref)
        check(e < 1e-2, "norm %dx%d, x misaligned: rms+res %.2e" % (R, H, e))
    B, S, Hq, Hk, D = 2, 300, 8, 2, 128
    for table in (True, False):
        for style in ("rotate_half", "interleaved"):
            q = torch.randn(B, S, Hq, D, device=dev, dtype=torch.bfloat16)
            kx = torch.randn(B, S, Hq + 2 * Hk, D, device=dev, dtype=torch.bfloat16)[:, :, Hq:Hq + Hk]  # a view
            pos0 = 5
            pos = torch.arange(pos0 + S, device=dev, dtype=torch.float64)[:, None]
            i = torch.arange(D // 2, device=dev, dtype=torch.float64)[None, :]
            ang = pos * 10000.0 ** (-2.0 * i / D)
            cs, sn = torch.cos(ang), torch.sin(ang)
            args = dict(cos=cs.float(), sin=sn.float()) if table else {}
            qo, ko = hkrt.rope(q, kx, style=style, pos_offset=pos0, **args)
            c, s = cs[pos0:, None, :], sn[pos0:, None, :]

            def ref(x):
                x = x.double()
                if style == "interleaved":
                    a, b = x[..., 0::2], x[..., 1::2]
                    y = torch.empty_like(x)
                    y[..., 0::2] = a * c - b * s
                    y[..., 1::2] = b * c + a * s
                    return y
                a, b = x[..., :D // 2], x[..., D // 2:]
                return torch.cat([a * c - b * s, b * c + a * s], -1)
            eq, ek = rel(qo, ref(q)), rel(ko, ref(kx))
            check(max(eq, ek) < 1e-2, "rope %s table %d (k a strided view): q %.2e, k %.2e" % (style, table, eq, ek))


def errors():
    q, k, v = make_qkv("bshd", 1, 64, 64, 8, 2, 128)
    cases = [
        ("fp16 q", lambda: hkrt.attention(q.half(), k, v), "q: dtype float16"),
        ("k on the CPU", lambda: hkrt.attention(q, k.cpu(), v), "k: on device cpu"),
        ("head_dim 96", lambda: hkrt.attention(*make_qkv("bshd", 1, 64, 64, 8, 2, 96)), "head_dim"),
        ("heads 8:3", lambda: hkrt.attention(q, *make_qkv("bshd", 1, 64, 64, 3, 3, 128)[1:]), "heads ratio"),
        ("head_dim strided", lambda: hkrt.attention(torch.randn(1, 64, 8, 256, device=dev,
                                                                dtype=torch.bfloat16)[..., ::2], k, v),
         "q: stride 2 along its last dimension"),
        ("v of k's batch but another length", lambda: hkrt.attention(q, k, v[:, :32]), "v: shape"),
        ("gemm K mismatch", lambda: hkrt.gemm(torch.randn(64, 128, device=dev, dtype=torch.bfloat16),
                                              torch.randn(64, 96, device=dev, dtype=torch.bfloat16)), "b: shape"),
        ("rms_norm strided x", lambda: hkrt.rms_norm(torch.randn(64, 256, device=dev, dtype=torch.bfloat16)[:, :128],
                                                     torch.ones(128, device=dev, dtype=torch.bfloat16)),
         "x: strides"),
        ("rope odd table", lambda: hkrt.rope(q, k, cos=torch.ones(10, 64, device=dev),
                                             sin=torch.ones(10, 64, device=dev)), "cos: shape"),
        ("layer_norm fp64 x", lambda: hkrt.layer_norm(torch.randn(4, 64, device=dev, dtype=torch.float64),
                                                      torch.ones(64, device=dev), torch.zeros(64, device=dev)),
         "x: dtype float64"),
    ]
    for what, fn, want in cases:
        try:
            fn()
            torch.cuda.synchronize()
            check(False, "error %s: none raised" % what)
        except hkrt.ArgError as e:
            check(want in str(e), "error %s: %s" % (what, str(e)[:400]))
        except Exception as e:
            check(False, "error %s: %s, not ArgError: %s" % (what, type(e).__name__, str(e)[:300]))


def block(x, w_qkv, w_o, g, cos, sin, Hq, Hk, D):
    """A pre-norm attention block of custom ops only: RMSNorm, QKV GEMM, RoPE, attention, out GEMM, + x."""
    B, S, Dm = x.shape
    h = hkrt.rms_norm(x.reshape(B * S, Dm), g)
    qkv = hkrt.gemm(h, w_qkv).view(B, S, Hq + 2 * Hk, D)
    q, k = hkrt.rope(qkv[:, :, :Hq], qkv[:, :, Hq:Hq + Hk], cos=cos, sin=sin)
    o = hkrt.attention(q, k, qkv[:, :, Hq + Hk:], causal=True)
    y = hkrt.gemm(o.reshape(B * S, Hq * D), w_o).view(B, S, Dm)
    return y + x


def compiled():
    B, S, Dm, Hq, Hk, D = 2, 512, 1024, 8, 2, 128
    x = torch.randn(B, S, Dm, device=dev, dtype=torch.bfloat16)
    w_qkv = torch.randn((Hq + 2 * Hk) * D, Dm, device=dev, dtype=torch.bfloat16) * Dm ** -0.5
    w_o = torch.randn(Dm, Hq * D, device=dev, dtype=torch.bfloat16) * (Hq * D) ** -0.5
    g = torch.ones(Dm, device=dev, dtype=torch.bfloat16)
    pos = torch.arange(S, device=dev, dtype=torch.float64)[:, None]
    ang = pos * 10000.0 ** (-2.0 * torch.arange(D // 2, device=dev, dtype=torch.float64)[None, :] / D)
    cos, sin = torch.cos(ang).float(), torch.sin(ang).float()
    args = (x, w_qkv, w_o, g, cos, sin, Hq, Hk, D)
    eager = block(*args)
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    fn = torch.compile(block, fullgraph=True, backend=record)
    got = fn(*args)
    targets = [str(n.target) for gm in graphs for n in gm.graph.nodes if n.op == "call_function"]
    ours = [t for t in targets if "hkrt" in t]
    check(len(graphs) == 1 and len(ours) == 5 and len(set(ours)) == 4,
          "torch.compile(fullgraph=True) traced %d graph(s); its %d hkrt calls: %s"
          % (len(graphs), len(ours), ", ".join(ours)))
    check(torch.equal(got, eager), "dynamo graph (recording backend) = eager, bit for bit")
    try:
        expl = torch._dynamo.explain(block)(*args)
        check(expl.graph_break_count == 0, "torch._dynamo.explain: %d graph breaks, %d graphs"
              % (expl.graph_break_count, expl.graph_count))
    except Exception as e:
        log("     (torch._dynamo.explain unavailable: %s)" % e)
    torch._dynamo.reset()
    t0 = time.time()
    fi = torch.compile(block, fullgraph=True)  # inductor
    got = fi(*args)
    torch.cuda.synchronize()
    e = rel(got, eager)
    check(e < 1e-3, "torch.compile(fullgraph=True), inductor: rel L2 to eager %.2e (bit equal %s), compiled in %.1f s"
          % (e, torch.equal(got, eager), time.time() - t0))
    # dynamic shapes: a second length through the compiled function
    x2 = torch.randn(B, 256, Dm, device=dev, dtype=torch.bfloat16)
    args2 = (x2, w_qkv, w_o, g, cos[:256], sin[:256], Hq, Hk, D)
    e2 = rel(fi(*args2), block(*args2))
    check(e2 < 1e-3, "compiled block at seq 256 (recompiled or dynamic): rel L2 to eager %.2e" % e2)


def compiled_training():
    """A training step of the block through torch.compile(fullgraph=True):
    attn_bwd in the backward graph; gradients against eager's."""
    if not HAVE_BWD:
        log("     (no attn_bwd in the catalogue: no compiled training step)")
        return
    B, S, Dm, Hq, Hk, D = 2, 512, 1024, 8, 2, 128
    x = torch.randn(B, S, Dm, device=dev, dtype=torch.bfloat16)
    w_qkv = torch.randn((Hq + 2 * Hk) * D, Dm, device=dev, dtype=torch.bfloat16) * Dm ** -0.5
    w_o = torch.randn(Dm, Hq * D, device=dev, dtype=torch.bfloat16) * (Hq * D) ** -0.5
    g = torch.ones(Dm, device=dev, dtype=torch.bfloat16)
    pos = torch.arange(S, device=dev, dtype=torch.float64)[:, None]
    ang = pos * 10000.0 ** (-2.0 * torch.arange(D // 2, device=dev, dtype=torch.float64)[None, :] / D)
    cos, sin = torch.cos(ang).float(), torch.sin(ang).float()

    def loss(x, w_qkv, w_o):  # differentiable ops only: attention (hkgen) and torch's own
        h = F.rms_norm(x.float(), (Dm,)).to(torch.bfloat16)
        qkv = (h @ w_qkv.t()).view(B, S, Hq + 2 * Hk, D)
        o = hkrt.attention(qkv[:, :, :Hq], qkv[:, :, Hq:Hq + Hk], qkv[:, :, Hq + Hk:], causal=True)
        return (o.reshape(B, S, Hq * D) @ w_o.t()).float().square().mean()
    ws = [t.detach().clone().requires_grad_() for t in (x, w_qkv, w_o)]
    loss(*ws).backward()
    ge = [t.grad.clone() for t in ws]
    for t in ws:
        t.grad = None
    torch._dynamo.reset()
    torch.compile(loss, fullgraph=True, backend="aot_eager")(*ws).backward()
    errs = [rel(t.grad, r) for t, r in zip(ws, ge)]
    check(max(errs) < 1e-2, "compiled training step (aot_eager: attn_bwd in the backward graph): gradients vs "
          "eager %s" % " ".join("%.1e" % e for e in errs))
    for t in ws:
        t.grad = None
    torch._dynamo.reset()
    torch.compile(loss, fullgraph=True)(*ws).backward()
    errs = [rel(t.grad, r) for t, r in zip(ws, ge)]
    check(max(errs) < 1e-2, "compiled training step (inductor, fullgraph): gradients vs eager %s"
          % " ".join("%.1e" % e for e in errs))


def host_time():
    """Host time per call of hkrt.attention and of its parts, poisoning off (benchmark, not a test)."""
    hkrt._POISON = False
    q, k, v = make_qkv("bshd", 1, 128, 128, 8, 8, 64)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    cat = hkrt._catalog("")
    dims = hkrt._attn_shape(q, k, v, "bshd", "cuda")
    kern = hkrt._attn_select(cat, "attn_fwd", dims, False)
    o, lse = hkrt._attn_out(torch, q, "bshd", dims)
    args = hkrt._attn_fwd_args(q, k, v, o, lse, 0.125, dims, "bshd")
    qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))

    def us(fn, n=2000):
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (t1 - t0) / n * 1e6, (time.perf_counter() - t0) / n * 1e6
    rows = [("hkrt.attention (a known shape)", lambda: hkrt.attention(q, k, v)),
            ("hkrt.attention, inputs requiring grad", lambda: hkrt.attention(qg, kg, vg)),
            ("torch.ops.hkrt.attn_fwd", lambda: torch.ops.hkrt.attn_fwd(q, k, v, False, 0.125, "bshd", "")),
            ("  _attn_fwd_impl (no dispatcher)", lambda: hkrt._attn_fwd_impl(q, k, v, False, 0.125, "bshd", "")),
            ("  _catalog('')", lambda: hkrt._catalog("")),
            ("  _attn_shape", lambda: hkrt._attn_shape(q, k, v, "bshd", "cuda")),
            ("  _canon x3", lambda: (hkrt._canon(q), hkrt._canon(k), hkrt._canon(v))),
            ("  _attn_select (memo)", lambda: hkrt._attn_select(cat, "attn_fwd", dims, False)),
            ("  _attn_out (2 torch.empty)", lambda: hkrt._attn_out(torch, q, "bshd", dims)),
            ("  _attn_fwd_args", lambda: hkrt._attn_fwd_args(q, k, v, o, lse, 0.125, dims, "bshd")),
            ("  _launch (bound)", lambda: hkrt._launch(kern, args)),
            ("  Kernel.__call__ (packs)", lambda: kern(**{n: a for n, a in args.items() if n in kern.arg_names()})),
            ("torch SDPA (same problem, BHSD view)", lambda: F.scaled_dot_product_attention(qt, kt, vt)),
            ("torch SDPA, inputs requiring grad", lambda: F.scaled_dot_product_attention(
                qg.transpose(1, 2), kg.transpose(1, 2), vg.transpose(1, 2)))]
    log("host time per call, 1x128x8x64 bf16 (H200; benchmark, not a test):")
    for name, fn in rows:
        try:
            h, w = us(fn)
            log("     %-40s host %7.2f us   wall %7.2f us" % (name, h, w))
        except Exception as e:
            log("     %-40s failed: %s" % (name, str(e)[:200]))
    hkrt._POISON = os.environ.get("HKRT_POISON", "") not in ("", "0")


torch.manual_seed(0)
if PART != "bwd":
    section("attention forward", attn_forward)
    section("catalog=", catalog_forms)
    section("gemm, norm, rope", other_ops)
    section("errors", errors)
    section("torch.compile", compiled)
    section("host time", host_time)
if PART != "fwd":
    section("gemm backward", gemm_backward)  # first: they do not depend on attn_bwd
    section("norm backward", norm_backward)
    section("attention backward", attn_backward)
    section("torch.compile, a training step", compiled_training)
log("torch_ops%s: %d failed%s" % ("" if PART == "all" else " " + PART, len(fails),
                                  (": " + "; ".join(fails)) if fails else ""))
LOG.flush()
sys.stdout.flush()
os._exit(1 if fails else 0)  # not sys.exit: inductor's compile workers can hang the interpreter's shutdown
