#!/usr/bin/env python3
"""decode_h200.py CATALOG[,CATALOG2...] [numerics|bench|all] [LIMIT] (on the H200): attn_decode for sm_90a.

Every catalogue after the first (another plan of the same kernels, for a
comparison in the same run) is timed too; DIR:MODE chooses its numerics:
all, d128 (its d128 kernels), none (the default after the first).

numerics: every kernel named n_* of CATALOG (tests/device/decode_h200.yaml)
against an fp64 reference built by gathering the pages: random block tables
(a permutation of the cache, unused entries 0x7fffffff), a sequence that
fills its table, one shorter than a page, lengths ending mid-page; GQA ratios
1, 3, 4, 5, 8; q_tokens 1, 4, 16; windows, sinks, a soft cap, an fp8 cache,
a cache that is not 16-byte aligned; outputs poisoned first, relative L2 of O
and LSE, NaN fails; counters back to 0; a second launch bitwise identical;
check_tables: valid tables record no fault, a corrupt entry or length
records its sequence.

bench: the b_* kernels at Llama-3-8B (32:8 heads) and Llama-3-70B TP 8 (8:1)
shapes (DEC_ONLY=NAME,...: those kernels alone, at every point of their
model, in each catalogue), d128, 16-key pages, q_tokens 1, launched from CUDA graphs over
enough distinct caches (layers) that no launch finds its pages in L2: KV
TB/s, the fraction of a same-run device copy (bytes read + written), and
torch SDPA on the same KV gathered into contiguous tensors (the gather's
time too).

    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/decode_h200.py build/dev/decode all"""
import math
import os
import sys
import time

import torch

import hkrt

T0 = time.time()
cat_modes = [(c.split(":") + ["all" if i == 0 else "none"])[:2] for i, c in enumerate(sys.argv[1].split(","))]
cats = [hkrt.Catalog(d, backend="cuda") for d, _ in cat_modes]
cat = cats[0]
mode = sys.argv[2] if len(sys.argv) > 2 else "all"
dev = "cuda"
fails = 0
UNITS = torch.cuda.get_device_properties(0).multi_processor_count


def argnames(k):
    return {a["name"] for a in k.entry["kernarg"]["args"]}


def param(k, name):
    return k.entry["params"].get(name, "any")


def splits_max(mb, bs):
    """A bound on the splits of every plan timed here (one per 128 keys at
    most): the workspace is sized by it."""
    return (mb * bs + 127) // 128


class Prob:
    """One decode problem on the device."""

    def __init__(self, k, B, QT, HQ, HK, MB, WL, seed, neg=False, unaligned=False, lens=None):
        g = torch.Generator(device="cpu").manual_seed(seed)
        self.k, self.B, self.QT, self.HQ, self.HK, self.MB, self.WL = k, B, QT, HQ, HK, MB, WL
        self.D, self.BS = int(param(k, "head_dim")), int(param(k, "block_size"))
        self.fp8 = param(k, "kv_dtype") == "fp8_e4m3"
        self.NB = B * MB + 3
        cap = MB * self.BS
        if lens is None:
            lens = []
            for b in range(B):
                if b == 0:
                    n = cap
                elif b == 1:
                    n = 1 + int(torch.randint(0, max(1, min(self.BS - 1, cap)), (1,), generator=g))
                else:
                    n = 1 + int(torch.randint(0, cap, (1,), generator=g))
                    n = max(n, min(QT, cap))
                lens.append(n)
        self.lens = lens
        perm = torch.randperm(self.NB, generator=g)
        tab = torch.full((B, MB), 0x7FFFFFFF, dtype=torch.int32)
        nxt = 0
        for b in range(B):
            for i in range((lens[b] + self.BS - 1) // self.BS):
                tab[b, i] = int(perm[nxt])
                nxt += 1
        self.tables = tab.to(dev)
        self.seq_lens = torch.tensor(lens, dtype=torch.int32, device=dev)
        self.q = (torch.randn(B, QT, HQ, self.D, generator=g) * 1.5).to(torch.bfloat16).to(dev)
        n_kv = 2 * self.NB * self.BS * HK * self.D
        vals = torch.randn(n_kv, generator=g).to(dev)
        if self.fp8:
            self.ks, self.vs = 0.3 + 0.4 * float(torch.rand(1, generator=g)), 0.3 + 0.4 * float(torch.rand(1, generator=g))
            codes = (vals * 2).to(torch.float8_e4m3fn).view(torch.uint8)
            self.kv_ref = codes.view(torch.float8_e4m3fn).double().view(2, self.NB, self.BS, HK, self.D)
            self.kv_ref[0] *= self.ks
            self.kv_ref[1] *= self.vs
            self.kv = codes
        else:
            kvb = vals.to(torch.bfloat16)
            self.kv_ref = kvb.double().view(2, self.NB, self.BS, HK, self.D)
            if unaligned:  # the same values at an address 2 bytes past a 16-byte boundary
                store = torch.empty(n_kv + 8, dtype=torch.bfloat16, device=dev)
                store[1:n_kv + 1] = kvb
                self.kv = store[1:n_kv + 1]
                assert self.kv.data_ptr() % 16 == 2
            else:
                self.kv = kvb
        self.scale = (-1.0 if neg else 1.0) / math.sqrt(self.D)
        self.sinks = (torch.rand(HQ, generator=g) * 3.0).to(dev) if param(k, "sinks") == "true" else None
        self.softcap = float(param(k, "softcap")) if param(k, "softcap") not in ("any", "0") else 0.0
        rows = B * HQ * QT
        self.ws = torch.zeros(rows * (self.D * 4 + 8) * splits_max(MB, self.BS) // 4 + 1, dtype=torch.float32,
                              device=dev)
        # the sm_90a rule: rg * (2 * batch * heads_k + cdiv(units, 16)) (a counter per 16 splits too)
        self.cnt_len = ((QT * (HQ // HK) + 15) // 16) * (2 * B * HK + (UNITS + 15) // 16)
        self.cnt = torch.zeros(self.cnt_len, dtype=torch.int32, device=dev)
        self.err = torch.full((1,), -1, dtype=torch.int32, device=dev) if param(k, "check_tables") == "true" else None
        self.o = torch.empty(B, QT, HQ, self.D, dtype=torch.bfloat16, device=dev)
        self.lse = torch.empty(B, HQ, QT, dtype=torch.float32, device=dev)

    def values(self):
        v = dict(Q=self.q, KV=self.kv, block_tables=self.tables, seq_lens=self.seq_lens, O=self.o, LSE=self.lse,
                 workspace=self.ws, workspace_bytes=self.ws.numel() * 4, counters=self.cnt,
                 counters_len=self.cnt_len, scale=self.scale, batch=self.B, q_tokens=self.QT, heads_q=self.HQ,
                 heads_k=self.HK, max_blocks=self.MB, num_blocks=self.NB, window_left=self.WL)
        if self.fp8:
            v.update(k_scale=self.ks, v_scale=self.vs)
        if self.sinks is not None:
            v["sinks"] = self.sinks
        if self.err is not None:
            v["table_error"] = self.err
        names = argnames(self.k)
        return {n: x for n, x in v.items() if n in names}

    def launch(self):
        self.o.view(torch.int16).fill_(-1)  # 0xffff: a bf16 NaN
        self.lse.fill_(float("nan"))
        if self.err is not None:
            self.err.fill_(-1)
        self.k(**self.values())
        torch.cuda.synchronize()

    def reference(self):
        G = self.HQ // self.HK
        o = torch.zeros(self.B, self.QT, self.HQ, self.D, dtype=torch.float64, device=dev)
        lse = torch.full((self.B, self.HQ, self.QT), -math.inf, dtype=torch.float64, device=dev)
        for b in range(self.B):
            n = self.lens[b]
            if n == 0:
                continue
            pages = self.tables[b, :(n + self.BS - 1) // self.BS].long()
            kk = self.kv_ref[0][pages].reshape(-1, self.HK, self.D)[:n]
            vv = self.kv_ref[1][pages].reshape(-1, self.HK, self.D)[:n]
            kk = kk.repeat_interleave(G, dim=1)  # [n][HQ][D]
            vv = vv.repeat_interleave(G, dim=1)
            q = self.q[b].double()  # [QT][HQ][D]
            s = torch.einsum("thd,jhd->thj", q, kk) * self.scale
            if self.softcap > 0:
                s = self.softcap * torch.tanh(s / self.softcap)
            j = torch.arange(n, device=dev).view(1, 1, n)
            pos = (n - self.QT + torch.arange(self.QT, device=dev)).view(-1, 1, 1)
            vis = j <= pos
            if self.WL >= 0:
                vis &= j >= pos - self.WL
            s = s.masked_fill(~vis, -math.inf)
            m = s.amax(dim=2, keepdim=True)
            if self.sinks is not None:
                m = torch.maximum(m, self.sinks.double().view(1, -1, 1))
            mf = torch.where(torch.isinf(m), torch.zeros_like(m), m)
            e = torch.exp(s - mf)
            tot = e.sum(dim=2, keepdim=True)
            if self.sinks is not None:
                tot = tot + torch.exp(self.sinks.double().view(1, -1, 1) - mf)
            ob = torch.einsum("thj,jhd->thd", e, vv) / torch.where(tot > 0, tot, torch.ones_like(tot))
            o[b] = ob
            l = torch.where(tot[..., 0] > 0, mf[..., 0] + torch.log(tot[..., 0]), torch.full_like(tot[..., 0], -math.inf))
            lse[b] = l.t()
        return o, lse


def rel_l2(ref, got):
    if torch.isnan(got).any():
        return float("inf")
    d = (ref - got).norm().item()
    n = ref.norm().item()
    return d / n if n > 0 else d


def check_case(k, case, seed):
    """One numerics case; returns a line."""
    global fails
    B, QT, HQ, HK, MB, WL = case[:6]
    opts = case[6] if len(case) > 6 else {}
    p = Prob(k, B, QT, HQ, HK, MB, WL, seed, **opts)
    p.launch()
    ro, rl = p.reference()
    eo = rel_l2(ro, p.o.double())
    fin = torch.isfinite(rl)
    both_inf = (~fin) & torch.isinf(p.lse) & (p.lse < 0)
    el = rel_l2(rl[fin], p.lse.double()[fin]) if fin.any() else 0.0
    if (~fin & ~both_inf).any():
        el = float("inf")
    notes = []
    ok = eo < 1e-2 and el < 1e-3
    if int(p.cnt.abs().sum()) != 0:
        ok = False
        notes.append("counters not reset")
    if p.err is not None and int(p.err[0]) != -1:
        ok = False
        notes.append("table_error %d on valid tables" % int(p.err[0]))
    first = (p.o.clone(), p.lse.clone())
    p.launch()
    if not (torch.equal(first[0].view(torch.int16), p.o.view(torch.int16))
            and torch.equal(first[1].view(torch.int32), p.lse.view(torch.int32))):
        ok = False
        notes.append("second launch differs")
    if p.err is not None:  # corrupt sequence B-1: a block id past the cache, or a length past its table
        for kind in ("entry", "len"):
            tab, ln = p.tables.clone(), p.seq_lens.clone()
            if kind == "entry":
                p.tables[B - 1, 0] = p.NB + 7
            else:
                p.seq_lens[B - 1] = MB * p.BS + 3
            p.launch()
            if int(p.err[0]) != B - 1:
                ok = False
                notes.append("corrupt %s: table_error %d, want %d" % (kind, int(p.err[0]), B - 1))
            p.tables.copy_(tab)
            p.seq_lens.copy_(ln)
            if int(p.cnt.abs().sum()) != 0:
                ok = False
                notes.append("counters not reset after a corrupt launch")
                p.cnt.zero_()
    fails += not ok
    ns = k.grid(p.values())[0]
    return "%-22s B%-3d qt%-2d %2d:%-2d mb%-4d wl%-4d splits %-3d O %.2e LSE %.2e %s %s" % (
        k.name, B, QT, HQ, HK, MB, WL, ns, eo, el, "ok" if ok else "FAIL", " ".join(notes))


CASES = [
    (3, 1, 8, 8, 24, -1),            # GQA 1
    (2, 4, 12, 4, 20, 300),          # GQA 3, 4 tokens
    (2, 1, 10, 2, 40, 5),            # GQA 5
    (4, 1, 32, 8, 64, -1),           # Llama-3-8B
    (2, 4, 8, 1, 30, 100),           # GQA 8, 4 tokens (32 rows)
    (1, 1, 8, 1, 200, -1),           # a long context: many splits
    (1, 1, 8, 1, 400, -1),           # more than 16 splits: a two-level merge
    (2, 2, 16, 2, 300, -1),          # 19-33 splits: groups of 16 and 3 (or 1)
    (2, 1, 8, 2, 300, 40),           # a window: most splits' partials empty, in groups
    (2, 16, 16, 2, 6, 0),            # 16 tokens, GQA 8: 128 rows
    (40, 1, 32, 8, 10, -1),          # no split (batch x heads_k fills the device)
    (3, 1, 8, 8, 24, -1, dict(neg=True)),
    (4, 1, 32, 8, 64, -1, dict(unaligned=True)),
]


def numerics(cat, nmode):
    global fails
    ks = [k for k in cat.kernels("sm_90a") if k.name.startswith("n_") and (nmode == "all" or "128" in k.name or
                                                                         k.name in ("n_feat", "n_chk", "n_q4g8"))]
    seed = 1
    for k in ks:
        if time.time() - T0 > NUM_LIMIT:
            print("numerics time limit: %s and the kernels after it not checked" % k.name)
            fails += 1
            return
        for case in CASES:
            B, QT, HQ, HK, MB, WL = case[:6]
            if case[6:] and case[6].get("unaligned") and param(k, "kv_dtype") == "fp8_e4m3":
                continue
            fixed = dict(q_tokens=QT, heads_q=HQ, heads_k=HK, window_left=WL)
            if any(param(k, n) not in ("any", str(v)) for n, v in fixed.items() if n != "window_left"):
                continue
            wl = WL if param(k, "window_left") == "any" else int(param(k, "window_left"))
            case = (B, QT, HQ, HK, MB, wl) + tuple(case[6:])
            seed += 1
            try:
                print(check_case(k, case, seed), flush=True)
            except Exception as e:  # one failing case must not stop the others
                fails += 1
                print("%-22s %s FAIL: %s" % (k.name, case, e), flush=True)
                torch.cuda.synchronize()


def graph_time(fns, reps=3):
    """Seconds per call of the calls fns (one graph of all of them, replayed)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in fns:
            f()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3 / len(fns))
    return sorted(ts)[len(ts) // 2]


def copy_bw():
    """Device copy (bytes read + written over time), the best of: copy_ from
    a graph (a memcpy node) and eager (events around 5 calls), 2 GiB each way;
    and a kernel that reads and writes (torch.neg into a preallocated out)."""
    n = 1 << 30
    src = torch.empty(n, dtype=torch.bfloat16, device=dev).normal_()
    dst = torch.empty_like(src)
    res = {"graph copy_": 2 * n * 2 / graph_time([lambda: dst.copy_(src)] * 5) / 1e12}
    for name, fn in (("eager copy_", lambda: dst.copy_(src)), ("eager neg(out=)", lambda: torch.neg(src, out=dst))):
        fn()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(5):
            fn()
        b.record()
        b.synchronize()
        res[name] = 2 * n * 2 / (a.elapsed_time(b) / 5e3) / 1e12
    del src, dst
    print("copy TB/s: " + ", ".join("%s %.3f" % kv for kv in res.items()), flush=True)
    return max(res.values())


def bench_point(k, B, ctx, HQ, HK, sdpa):
    D, BS = 128, 16
    fp8 = param(k, "kv_dtype") == "fp8_e4m3"
    esz = 1 if fp8 else 2
    MB = ctx // BS
    kv_bytes = 2 * B * ctx * HK * D * esz
    layers = max(1, min(16, (256 << 20) // kv_bytes))  # distinct caches: > 256 MiB per graph
    NB = B * MB
    caches = []
    for _ in range(layers):
        if fp8:
            kv = (torch.randn(2 * NB * BS * HK * D // 2, device=dev, dtype=torch.bfloat16)).view(torch.uint8) & 0x77
        else:
            kv = torch.empty(2 * NB * BS * HK * D, device=dev, dtype=torch.bfloat16).normal_()
        caches.append(kv)
    tables = torch.randperm(NB, device=dev, dtype=torch.int32).view(B, MB)
    lens = torch.full((B,), ctx, dtype=torch.int32, device=dev)
    q = torch.randn(B, 1, HQ, D, device=dev, dtype=torch.bfloat16)
    o = torch.empty(B, 1, HQ, D, device=dev, dtype=torch.bfloat16)
    lse = torch.empty(B, HQ, 1, device=dev, dtype=torch.float32)
    ws = torch.zeros(B * HQ * (D * 4 + 8) * splits_max(MB, BS) // 4, device=dev, dtype=torch.float32)
    cnt = torch.zeros(2 * (2 * B * HK + (UNITS + 15) // 16), device=dev, dtype=torch.int32)
    base = dict(Q=q, KV=caches[0], block_tables=tables, seq_lens=lens, O=o, LSE=lse, workspace=ws,
                workspace_bytes=ws.numel() * 4, counters=cnt, counters_len=cnt.numel(), scale=D ** -0.5,
                batch=B, q_tokens=1, heads_q=HQ, heads_k=HK, max_blocks=MB, num_blocks=NB, k_scale=0.5,
                v_scale=0.5)
    names = argnames(k)
    run = k.bind(**{n: v for n, v in base.items() if n in names})
    fns = [(lambda kv=kv: run(KV=kv)) for kv in caches]
    t = graph_time(fns)
    ns = run.grid[0]  # the splits libhkrt's grid formula gave
    row = dict(name=k.name, B=B, ctx=ctx, HQ=HQ, HK=HK, t=t, tbs=kv_bytes / t / 1e12, splits=ns, layers=layers)
    if sdpa and not fp8 and kv_bytes * layers <= 8 << 30:
        kc = [None] * layers
        vc = [None] * layers

        def gather(i):
            kv = caches[i].view(2, NB, BS, HK, D)
            kc[i] = kv[0][tables.long()].view(B, ctx, HK, D).transpose(1, 2).contiguous()
            vc[i] = kv[1][tables.long()].view(B, ctx, HK, D).transpose(1, 2).contiguous()
        try:
            row["gather"] = graph_time([lambda i=i: gather(i) for i in range(layers)], reps=2)
            qs = q.transpose(1, 2)  # [B][HQ][1][D]
            row["sdpa"] = graph_time([lambda i=i: torch.nn.functional.scaled_dot_product_attention(
                qs, kc[i], vc[i], enable_gqa=True) for i in range(layers)])
        except Exception as e:
            row["sdpa_err"] = str(e)[:80]
        del kc, vc
    del caches
    torch.cuda.empty_cache()
    return row


POINTS_8B = [(1, 1024), (1, 32768), (1, 131072), (8, 8192), (8, 131072), (32, 8192), (32, 32768), (64, 32768),
             (128, 4096), (256, 1024), (256, 8192)]
POINTS_70B = [(1, 8192), (1, 131072), (8, 32768), (32, 32768), (64, 131072), (128, 8192), (256, 4096),
              (256, 32768)]


def floor_us():
    """The fixed cost a batch-1 decode cannot go below, timed as the decode
    is (graph replay, 16 calls per graph, distinct buffers: no L2 hits): a
    trivial kernel (1-float add_), a 4 MB read (torch.sum of 2 Mi bf16,
    4 MB from each of 16 buffers) and a 4 MB copy (torch.neg(out=): 4 MB
    read + 4 MB written)."""
    x = torch.zeros(1, device=dev)
    src = [torch.empty(2 << 20, dtype=torch.bfloat16, device=dev).normal_() for _ in range(16)]
    dst = [torch.empty_like(a) for a in src]
    red = torch.empty(16, device=dev, dtype=torch.bfloat16)
    t0 = graph_time([lambda: x.add_(1)] * 16)
    tr = graph_time([lambda i=i: torch.sum(src[i], dim=0, out=red[i]) for i in range(16)])
    tc = graph_time([lambda i=i: torch.neg(src[i], out=dst[i]) for i in range(16)])
    print("floor (graph, 16 per graph): trivial kernel %.1f us, 4 MB read (sum) %.1f us = %.3f TB/s, "
          "4 MB copy (neg) %.1f us = %.3f TB/s read+write" % (t0 * 1e6, tr * 1e6, 4.194304e6 / tr / 1e12,
                                                            tc * 1e6, 8.388608e6 / tc / 1e12), flush=True)


def bench(cat, cbw, points):
    global fails
    print("%-16s %5s %7s %5s %6s %4s %9s %7s %6s %9s %9s" % ("kernel", "batch", "ctx", "heads", "splits", "lay",
                                                           "us", "KV TB/s", "x copy", "sdpa us", "gather us"))
    jobs = [(n, pts, hq, hk) for n, pts, hq, hk in (("b_8b", points[0], 32, 8), ("b_70b", points[1], 8, 1),
                                                   ("b_8b_fp8", points[2], 32, 8))]
    only = os.environ.get("DEC_ONLY")  # DEC_ONLY=b_8b_fp8,...: those kernels alone, at every point of their model
    if only:
        jobs = [(n, POINTS_70B if hk == 1 else POINTS_8B, hq, hk) for n, _, hq, hk in jobs if n in only.split(",")]
    for name, pts, hq, hk in jobs:
        try:
            k = cat.kernel(name, "sm_90a")
        except Exception as e:
            print("no kernel %s: %s" % (name, e))
            continue
        for B, ctx in pts:
            if time.time() - T0 > LIMIT:
                print("time limit: skipping the rest")
                return
            try:
                r = bench_point(k, B, ctx, hq, hk, sdpa=name != "b_8b_fp8" and cat is cats[0])
                print("%-16s %5d %7d %2d:%-2d %6d %4d %9.1f %7.3f %6.2f %9s %9s %s" % (
                    r["name"], B, ctx, hq, hk, r["splits"], r["layers"], r["t"] * 1e6, r["tbs"], r["tbs"] / cbw,
                    "%.1f" % (r["sdpa"] * 1e6) if "sdpa" in r else "-",
                    "%.1f" % (r["gather"] * 1e6) if "gather" in r else "-", r.get("sdpa_err", "")), flush=True)
            except Exception as e:
                fails += 1
                print("%-16s %5d %7d FAIL: %s" % (name, B, ctx, str(e)[:200]), flush=True)
                torch.cuda.empty_cache()


LIMIT = float(sys.argv[3]) if len(sys.argv) > 3 else 50.0  # seconds from the start: bench stops
NUM_LIMIT = LIMIT * 0.5  # numerics stop
print("attn_decode sm_90a on %s, %s" % (torch.cuda.get_device_name(0), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
for c, (_, nmode) in zip(cats, cat_modes):
    if mode in ("numerics", "all") and nmode != "none":
        print("== numerics: %s (block %s)" % (c.dir, c.manifest["kernels"][0]["block"]), flush=True)
        numerics(c, nmode)
        print("numerics done at %.1f s, %d failed" % (time.time() - T0, fails), flush=True)
if mode in ("bench", "all"):
    cbw = copy_bw()
    print("device %s, copy %.3f TB/s (the best above), %d SMs" % (torch.cuda.get_device_name(0), cbw, UNITS),
          flush=True)
    try:
        floor_us()
    except Exception as e:
        print("floor FAIL: %s" % str(e)[:200], flush=True)
    # the points below the bar first, every catalogue side by side; then the rest (the first catalogue)
    low8 = [(1, 1024), (1, 32768), (8, 8192), (32, 8192)]
    low70 = [(1, 8192), (1, 131072), (8, 32768), (128, 8192)]
    for i, c in enumerate(cats):
        print("== bench (below the bar at c287bcf): %s (block %s)" % (c.dir, c.manifest["kernels"][0]["block"]),
              flush=True)
        bench(c, cbw, (low8, low70, []))
    for i, c in enumerate(cats):
        if os.environ.get("DEC_ONLY"):
            break
        print("== bench (the rest): %s" % c.dir, flush=True)
        bench(c, cbw, ([p for p in POINTS_8B if p not in low8], [p for p in POINTS_70B if p not in low70],
                       POINTS_8B[::2] if i == 0 else []))
    for i, c in enumerate(cats):
        if os.environ.get("DEC_ONLY"):
            break
        print("== bench (below the bar, again): %s" % c.dir, flush=True)
        bench(c, cbw, (low8, low70, []))
print("decode_h200: %d failed, %.1f s" % (fails, time.time() - T0))
sys.exit(1 if fails else 0)
