#!/usr/bin/env python3
"""smallgemm_bench.py CATALOG --numerics|--bench [--only FILE] [--passed FILE]
(on the H200): the small, skinny and short-K GEMM variants of
tests/device/smallgemm.yaml (one block per tile, split-K, persistent).

--numerics: every kernel at odd shapes (tails in M, N and K, padded and odd
    leading dimensions, a misaligned base for the element path; persistent and
    stream-K ones also on 1, 3 (stream-K: 5, 7) blocks), fresh randn
    inputs, C poisoned with NaN, fp64 reference, relative L2 < 1e-2 (NaN never
    passes), C's padding columns still NaN, a second launch bit-identical
    (split-K's fixed-order sum), split counters back to 0, and a too-small
    workspace or counter array refused naming the argument. Writes the
    names that passed to --passed FILE.
--bench: each kernel (of --only FILE) against cuBLAS (F.linear, the same
    nt layout) at Llama-3-8B/70B projection shapes for M = 1, 16, 64, 256,
    at 8192 x 8192 x 1024 and at 1024^3 (SG_BIG=1: first at 4096^3, 8192^3
    and Llama-3-8B's qkv and down at 8192 tokens; SG_BIG=only: those and
    the two above alone; SG_M=256,64: those M of the projections only).
    SG_ROUNDS=n: n passes over a shape's baseline and kernels in turn, the median of each (default 1). SG_LAYOUT=nn: the
    kernels of layout nn against torch.matmul (B stored K x N). Both sides are timed the same two
    ways: one launch captured in a CUDA graph, triton.testing.do_bench of the
    replay (median, L2 flushed before each replay); and back to back, R
    launches in one graph each on its own copy of the weights (R x the
    weights >= 256 MB), the replay's median / R.
Logs go to $OUT/smallgemm.log and $OUT/smallgemm.json (appended to by both
phases); a summary goes to stdout."""
import ctypes
import faulthandler
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

import hkrt

T0 = time.time()
args = [a for a in sys.argv[1:] if not a.startswith("--")]
CAT = args[0]
flag_args = sys.argv[1:]


def opt(name):
    return flag_args[flag_args.index(name) + 1] if name in flag_args else None


BUDGET = float(os.environ.get("SG_BUDGET", "50"))  # seconds this phase may take before it stops timing
LAYOUT = os.environ.get("SG_LAYOUT", "nt")  # nn: B stored K x N against torch.matmul
ROUNDS = int(os.environ.get("SG_ROUNDS", "1"))  # timing passes over a shape's baseline and kernels (median)
out_dir = os.environ.get("OUT") or "build/device-logs"
os.makedirs(out_dir, exist_ok=True)
LOG = open(os.path.join(out_dir, "smallgemm.log"), "a")
here = os.path.dirname(os.path.abspath(CAT))
COMMIT = open(os.path.join(here, "COMMIT")).read().strip() if os.path.exists(os.path.join(here, "COMMIT")) else "?"


def log(*a, quiet=False):
    s = " ".join(str(x) for x in a)
    if not quiet:
        print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


dev = torch.device("cuda")
torch.zeros(1, device=dev)
cat = hkrt.Catalog(CAT, backend="cuda")
entries = [e for e in cat.manifest["kernels"] if e["target"] == "sm_90a" and e["op"] == "gemm"]
only = opt("--only")
if only:
    keep = set(open(only).read().split())
    entries = [e for e in entries if e["name"] in keep]
log("== smallgemm %s: %s, %s, commit %s, torch %s, %d kernels" % (
    "numerics" if "--numerics" in flag_args else "bench", torch.cuda.get_device_name(),
    time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), COMMIT, torch.__version__, len(entries)))


def cdiv(a, b):
    return (a + b - 1) // b


def cfg(e):
    """tile_m, tile_n, split_k, whether its blocks walk work (persistent or stream-K), stream-K."""
    p = e["params"]
    skx = p.get("stream_k", "false") == "true"
    return (int(p["tile_m"]), int(p["tile_n"]), int(p.get("split_k", "1")),
            p.get("persistent", "false") == "true" or skx, skx)


SMS = torch.cuda.get_device_properties(0).multi_processor_count


def split_bufs(e, M, N, K, short=0):
    """workspace and counters for a split-K or stream-K kernel (zeroed counters); short: bytes / entries too few."""
    tm, tn, s, _, skx = cfg(e)
    if s < 2 and not skx:
        return {}
    tiles = cdiv(M, tm) * cdiv(N, tn)
    if skx:  # two partial tiles per block of the grid (HKRT_UNITS stands in for the SMs)
        wb = min(tiles * cdiv(K, 64), int(os.environ.get("HKRT_UNITS", SMS))) * 2 * tm * tn * 4
    else:
        wb = tiles * s * tm * tn * 4
    ws = torch.empty(wb // 4, device=dev, dtype=torch.float32)
    cn = torch.zeros(tiles, device=dev, dtype=torch.int32)
    return dict(workspace=ws, workspace_bytes=wb - (short == 1), counters=cn, counters_len=tiles - (short == 2))


def sync():
    faulthandler.dump_traceback_later(20, exit=True)
    torch.cuda.synchronize()
    faulthandler.cancel_dump_traceback_later()


def rel_l2(got, ref):
    got = got.double()
    if torch.isnan(got).any() or torch.isinf(got).any():
        return float("inf")
    d = ref.norm().item()
    return (got - ref).norm().item() / (d if d > 0 else 1.0)


POISON = torch.tensor([float("nan")], dtype=torch.bfloat16).view(torch.int16).item()


def numerics_case(k, e, M, N, K, lda, ldb, ldc, off):
    nt = e["params"]["layout"] == "nt"
    brows = N if nt else K
    Ab = torch.randn(off + M * lda, device=dev, dtype=torch.bfloat16)
    Bb = torch.randn(off + brows * ldb, device=dev, dtype=torch.bfloat16)
    A = Ab[off:].view(M, lda)
    B = Bb[off:].view(brows, ldb)
    Cb = torch.full((off + M * ldc,), float("nan"), device=dev, dtype=torch.bfloat16)
    C = Cb[off:].view(M, ldc)
    sb = split_bufs(e, M, N, K)
    vals = dict(A=A, B=B, C=C, lda=lda, ldb=ldb, ldc=ldc, M=M, N=N, K=K, **sb)
    k(**vals)
    sync()
    ref = A[:, :K].double() @ (B[:, :K].double().t() if nt else B[:, :N].double())
    err = rel_l2(C[:, :N], ref)
    bad = []
    if not err < 1e-2:
        bad.append("rel L2 %.3e" % err)
    if ldc > N and not bool((C[:, N:].view(torch.int16) == POISON).all()):
        bad.append("wrote C past column N")
    first = C[:, :N].clone()
    C.fill_(float("nan"))
    k(**vals)
    sync()
    if not torch.equal(first.view(torch.int16), C[:, :N].view(torch.int16)):
        bad.append("second launch differs bitwise")
    if sb and int(sb["counters"].abs().sum()) != 0:
        bad.append("split counters not back to 0")
    return err, bad


def refused(k, e):
    """A split-K kernel must refuse a workspace or counter array one short, naming it."""
    bad = []
    M, N, K = 100, 300, 256
    A = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    B = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
    C = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    for short, name in ((1, "workspace_bytes"), (2, "counters_len")):
        try:
            k(A=A, B=B, C=C, lda=K, ldb=K, ldc=N, M=M, N=N, K=K, **split_bufs(e, M, N, K, short))
            bad.append("%s one short: launched" % name)
        except Exception as ex:  # noqa: BLE001 -- the message is what is checked
            if name not in str(ex):
                bad.append("%s one short: message does not name it: %s" % (name, ex))
    sync()
    return bad


NUM_SHAPES = [(1, 1, 1), (1, 77, 93), (17, 300, 1000), (64, 520, 2048), (100, 257, 70), (129, 130, 136),
              (300, 1000, 5000), (256, 4096, 4096), (513, 600, 64)]


def numerics():
    passed, nfail = [], 0
    for e in entries:
        k = cat.kernel(e["name"], "sm_90a")
        worst, probs = 0.0, []
        try:
            for i, (M, N, K) in enumerate(NUM_SHAPES):
                pad = i % 3
                lda = K + (0, 8, 3)[pad]
                ldb = (K if e["params"]["layout"] == "nt" else N) + (0, 3, 8)[pad]
                ldc = N + (0, 5, 8)[pad]
                off = 1 if i == 5 else 0
                err, bad = numerics_case(k, e, M, N, K, lda, ldb, ldc, off)
                worst = max(worst, err)
                probs += ["%dx%dx%d: %s" % (M, N, K, b) for b in bad]
            if cfg(e)[3]:  # persistent: also with 1 and 3 blocks, each walking many units
                # stream-K with few m-tiles runs a lane of blocks per m-tile: 5 and 7 blocks
                # leave blocks past the last whole lane idle; 256 rows make 2 or 4 lanes
                for units in ("1", "3") + (("5", "7") if cfg(e)[4] else ()):
                    os.environ["HKRT_UNITS"] = units
                    for M, N, K in ((300, 1000, 1000), (129, 130, 136)) + (((256, 700, 2000),) if cfg(e)[4] else ()):
                        ld = K if e["params"]["layout"] == "nt" else N
                        err, bad = numerics_case(k, e, M, N, K, K, ld, N, 0)
                        worst = max(worst, err)
                        probs += ["HKRT_UNITS=%s %dx%dx%d: %s" % (units, M, N, K, b) for b in bad]
                    del os.environ["HKRT_UNITS"]
            if (cfg(e)[2] > 1 or cfg(e)[4]) and e["params"]["layout"] == "nt":
                probs += refused(k, e)
        except Exception:  # noqa: BLE001
            os.environ.pop("HKRT_UNITS", None)
            probs.append("exception: " + traceback.format_exc(limit=3).replace("\n", " | "))
        ok = not probs
        nfail += not ok
        if ok:
            passed.append(e["name"])
        log("%-24s %s worst rel L2 %.2e %s" % (e["name"], "ok  " if ok else "FAIL", worst, "; ".join(probs)))
        rec = dict(phase="numerics", kernel=e["name"], ok=ok, worst=worst, problems=probs)
        JS.write(json.dumps(rec) + "\n")
    log("numerics: %d kernels, %d failed (%.1f s)" % (len(entries), nfail, time.time() - T0))
    if opt("--passed"):
        open(opt("--passed"), "w").write("\n".join(passed) + "\n")
    return nfail


LLAMA = [("8B", "qkv", 6144, 4096), ("8B", "o", 4096, 4096), ("8B", "gate_up", 28672, 4096),
         ("8B", "down", 4096, 14336), ("70B", "qkv", 10240, 8192), ("70B", "o", 8192, 8192),
         ("70B", "gate_up", 57344, 8192), ("70B", "down", 8192, 28672),
         ("70B-tp8", "qkv", 1280, 8192), ("70B-tp8", "o", 8192, 1024), ("70B-tp8", "gate_up", 7168, 8192),
         ("70B-tp8", "down", 8192, 3584)]


# SG_BIG=1: the large shapes first (docs/PERF.md "gemm": 4096^3, 8192^3, Llama-3-8B qkv and down at 8192 tokens)
BIG = [("square", "4096^3", 4096, 4096, 4096), ("square", "8192^3", 8192, 8192, 8192),
       ("8B", "qkv", 8192, 6144, 4096), ("8B", "down", 8192, 4096, 14336)]


def bench_shapes():
    out = BIG if os.environ.get("SG_BIG") else []
    out = out + [("square", "1024^3", 1024, 1024, 1024), ("short-K", "8192x8192x1024", 8192, 8192, 1024)]
    if os.environ.get("SG_BIG") == "only":
        return out
    ms = [int(m) for m in os.environ.get("SG_M", "1,16,64,256").split(",")]  # SG_M: these M only
    for tp8 in (False, True):  # TP 8 last: the first to go when time runs out
        for M in ms:
            for model, proj, N, K in LLAMA:
                if model.endswith("tp8") == tp8:
                    out.append((model, proj, M, N, K))
    return out


class _Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _Problem(ctypes.Structure):
    _fields_ = [("op", ctypes.c_char_p), ("target", ctypes.c_char_p), ("params", ctypes.POINTER(_Param)),
                ("nparams", ctypes.c_size_t)]


SEL = None  # the catalogue hkrt_select picks from: the kernels that passed the numerics


def selection_catalog():
    """A copy of the catalogue holding only the kernels of this run (--only: those that passed)."""
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="sgsel")
    m = dict(cat.manifest)
    keep = {e["name"] for e in entries}
    m["kernels"] = [k for k in cat.manifest["kernels"] if k["name"] in keep]
    os.makedirs(os.path.join(d, "sm_90a"))
    for k in m["kernels"]:
        shutil.copy(os.path.join(CAT, k["file"]), os.path.join(d, k["file"]))
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(m, f)
    return hkrt.Catalog(d, backend="cuda")


def selected(M, N, K):
    """The kernel hkrt_select picks for an nt problem (its cost model), or None."""
    global SEL
    if SEL is None:
        SEL = selection_catalog()
    c = SEL.lib.c
    c.hkrt_select.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Problem), ctypes.POINTER(ctypes.c_void_p)]
    c.hkrt_kernel_name.argtypes = [ctypes.c_void_p]
    c.hkrt_kernel_name.restype = ctypes.c_char_p
    vals = [(b"M", b"%d" % M), (b"N", b"%d" % N), (b"K", b"%d" % K), (b"layout", LAYOUT.encode())]
    arr = (_Param * len(vals))(*[_Param(a, b) for a, b in vals])
    pb = _Problem(b"gemm", b"sm_90a", arr, len(vals))
    k = ctypes.c_void_p()
    if c.hkrt_select(SEL.cat, ctypes.byref(pb), ctypes.byref(k)) != 0:
        return None
    return c.hkrt_kernel_name(k).decode()


def graph_of(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def bench():
    import triton.testing

    def med(fn):
        return triton.testing.do_bench(fn, warmup=2, rep=8, return_mode="median")

    rows = []
    for model, proj, M, N, K in bench_shapes():
        if time.time() - T0 > BUDGET:
            log("time budget reached: the remaining shapes are not timed")
            break
        try:
            a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            wshape = (N, K) if LAYOUT == "nt" else (K, N)  # nn: B stored K x N, torch.matmul's
            base = F.linear if LAYOUT == "nt" else torch.matmul
            w = torch.randn(*wshape, device=dev, dtype=torch.bfloat16)
            gc = graph_of(lambda: base(a, w))
            # back to back: R launches in one graph, each on its own copy of the
            # weights (R x N x K x 2 bytes >= 256 MB: none comes from L2), time / R
            R = max(2, min(16, -(-(256 << 20) // (2 * N * K))))
            ws_r = [w] + [torch.randn(*wshape, device=dev, dtype=torch.bfloat16) for _ in range(R - 1)]
            gcr = graph_of(lambda: [base(a, x) for x in ws_r])
            rows = torch.linspace(0, M - 1, min(M, 16), device=dev).long()  # every m-tile's lane of stream-K
            ref = a[rows].double() @ (w.double().t() if LAYOUT == "nt" else w.double())
            c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
            graphs = {}  # name: (one launch, R back to back)
            sel = selected(M, N, K)  # always timed, whatever the filters below
            for e in entries:
                tm, tn, s, ps, skx = cfg(e)
                if e["params"]["layout"] != LAYOUT:
                    continue
                if M <= 64 and tm == 128 and e["name"] != sel:
                    continue  # 64-row tiles only for decode batches
                if M * N >= 4096 * 4096 and (s >= 4 or (s > 1 and tm == 64)) and e["name"] != sel:
                    continue  # round 1 (2026-12-02): far slower there
                if M >= 4096 and K >= 4096 and (tm == 64 or s > 1 or (skx and tn != 256)) and e["name"] != sel:
                    continue  # large shapes: 128-row tiles only, whole or 128 x 256 stream-K
                try:
                    k = cat.kernel(e["name"], "sm_90a")
                    c.fill_(float("nan"))
                    bufs = split_bufs(e, M, N, K)  # held while its graphs live (they hold only pointers)
                    run = k.bind(A=a, B=w, C=c, lda=K, ldb=K if LAYOUT == "nt" else N, ldc=N, M=M, N=N, K=K, **bufs)
                    g = graph_of(run)
                    sync()
                    err = rel_l2(c[rows], ref)
                    if not err < 1e-2:
                        log("FAIL %s at %dx%dx%d: rel L2 %.3e" % (e["name"], M, N, K, err))
                        continue

                    def chain(run=run):
                        for x in ws_r:
                            run(B=x)
                    graphs[e["name"]] = (g, graph_of(chain), run, bufs)
                except Exception:  # noqa: BLE001
                    log("ERROR %s at %dx%dx%d: %s" % (e["name"], M, N, K, traceback.format_exc(limit=2).replace("\n", " | ")))
            # ROUNDS passes over cuBLAS and the kernels in turn, the median of each
            tcs, tcrs, ts, trs = [], [], {n: [] for n in graphs}, {n: [] for n in graphs}
            for _ in range(ROUNDS):
                tcs.append(med(gc.replay) * 1e3)
                tcrs.append(med(gcr.replay) * 1e3 / R)
                for n, (g, gr, _, _) in graphs.items():
                    ts[n].append(med(g.replay) * 1e3)
                    trs[n].append(med(gr.replay) * 1e3 / R)
            mid = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
            tc, tcr = mid(tcs), mid(tcrs)
            res = {n: mid(x) for n, x in ts.items()}
            resr = {n: mid(x) for n, x in trs.items()}
            del graphs
            best = min(res, key=res.get) if res else None
            base = res.get("sg_tm128_tn256")
            flops = 2.0 * M * N * K
            log("%-8s %-8s M=%-5d N=%-6d K=%-6d cuBLAS %8.2f us %6.1f TF | best %-22s %8.2f us ratio %.3f | tm128_tn256 %s | selected %s %s"
                % (model, proj, M, N, K, tc, flops / tc / 1e6, best, res.get(best, float("nan")),
                   tc / res[best] if best else float("nan"),
                   "%.2f us (%.3f)" % (base, tc / base) if base else "-", sel,
                   "%.3f" % (tc / res[sel]) if sel in res else "-"))
            bestr = min(resr, key=resr.get) if resr else None
            log("   back-to-back x%d: cuBLAS %.2f us | best %s %.2f us ratio %.3f | selected %s %s"
                % (R, tcr, bestr, resr.get(bestr, float("nan")), tcr / resr[bestr] if bestr else float("nan"), sel,
                   "%.3f" % (tcr / resr[sel]) if sel in resr else "-"))
            log("   all: " + " ".join("%s=%.2f" % (n, t) for n, t in sorted(res.items(), key=lambda x: x[1])), quiet=True)
            log("   all back-to-back: " + " ".join("%s=%.2f" % (n, t) for n, t in sorted(resr.items(), key=lambda x: x[1])), quiet=True)
            JS.write(json.dumps(dict(phase="bench", model=model, proj=proj, M=M, N=N, K=K, cublas_us=tc, ours_us=res,
                                     selected=sel, R=R, cublas_b2b_us=tcr, ours_b2b_us=resr)) + "\n")
            JS.flush()
            rows.append((model, proj, M, N, K, tc, best, res.get(best), res.get(sel), tcr, resr.get(bestr),
                         resr.get(sel)))
            del a, w, c, gc, gcr, ws_r, ts, trs
        except Exception:  # noqa: BLE001
            log("ERROR shape %s %s M=%d: %s" % (model, proj, M, traceback.format_exc(limit=3).replace("\n", " | ")))
        torch.cuda.empty_cache()
    good = [r for r in rows if r[7]]
    if good:
        ratios = [r[5] / r[7] for r in good]
        log("bench: %d shapes, best-variant ratio to cuBLAS: min %.3f, geomean %.3f, %d of %d >= 0.9 (%.1f s)"
            % (len(good), min(ratios), math.exp(sum(math.log(x) for x in ratios) / len(ratios)),
               sum(x >= 0.9 for x in ratios), len(ratios), time.time() - T0))
        def summary(what, xs):
            if xs:
                log("bench: %s, ratio to cuBLAS: min %.3f, geomean %.3f, %d of %d >= 0.9"
                    % (what, min(xs), math.exp(sum(math.log(x) for x in xs) / len(xs)), sum(x >= 0.9 for x in xs), len(xs)))
        summary("hkrt_select's pick", [r[5] / r[8] for r in good if r[8]])
        summary("back to back, best variant", [r[9] / r[10] for r in good if r[10]])
        summary("back to back, hkrt_select's pick", [r[9] / r[11] for r in good if r[11]])


JS = open(os.path.join(out_dir, "smallgemm.json"), "a")
if "--numerics" in flag_args:
    sys.exit(1 if numerics() else 0)
if "--bench" in flag_args:
    bench()
