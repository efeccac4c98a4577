#!/usr/bin/env python3
"""hkgen's H200 device suite: numerics, compute-sanitizer and benchmarks of an
sm_90a catalogue built from tests/device/h200.yaml.

Run on the GPU machine, from the repository root:
    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \
        python3 tests/device/check_bench.py build/h200cat [--no-bench] [--no-sanitize]

(a) numerics: every kernel of the catalogue against torch in fp64 at several
    shapes (tails in every dimension, padded and odd strides, a misaligned base),
    fresh random inputs, outputs poisoned with NaN first; relative L2 < 1e-2,
    NaN never passes, memory outside the logical output (padding, guards before
    and after) and the inputs stay bit-for-bit unchanged.
(b) compute-sanitizer memcheck (and racecheck on two GEMMs) over a child run of
    this script on a few kernels; "ERROR SUMMARY: 0 errors" is required.
(c) benchmarks, triton.testing.do_bench medians, baselines in the same run:
    GEMM vs torch.matmul (cuBLAS); RoPE vs device-to-device copy bandwidth and
    vs torch.compile of a rotate-half RoPE in fp32 math; launch overhead of
    hkrt.py vs a pre-packed hkrt_launch vs a raw cuLaunchKernel.
The full log goes to $OUT/h200.log (else build/device-logs/h200.log); the compact table
is printed last. Exit status: non-zero on any numerics or sanitizer failure.
"""
import ctypes
import datetime
import faulthandler
import math
import os
import random
import shutil
import subprocess
import sys
import time
import traceback

import torch

import hkrt


TARGET = "sm_90a"
TOL = 1e-2
HERE = os.path.abspath(__file__)

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
CAT = args[0] if args else "build/h200cat"
CHILD = "--child" in flags  # the small run under compute-sanitizer
GEMM_ONLY = "--gemm" in flags  # benchmarks: GEMM only (no copy, RoPE or launch-overhead sections)


class SkipSection(Exception):
    pass

# logs never go under tests/ (not committed): $OUT on the device machine,
# else build/device-logs/ (ignored by git)
out_dir = os.environ.get("OUT") or "build/device-logs"
os.makedirs(out_dir, exist_ok=True)
LOG = None if CHILD else open(os.path.join(out_dir, "h200.log"), "w")
# Guards (elements) before and after every buffer, checked bit for bit. Under
# compute-sanitizer (the child) there are none, so that memcheck sees any access
# past a tensor's first or last element (each tensor is its own cudaMalloc there).
LEAD, TAIL = (0, 0) if CHILD else (8, 64)


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    if LOG:
        LOG.write(s + "\n")
        LOG.flush()


failures = []  # (what, detail)


def fail(what, detail):
    failures.append((what, detail))
    log("FAIL", what, detail)


dev = torch.device("cuda")
torch.cuda.init()
torch.zeros(1, device=dev)
cat = hkrt.Catalog(CAT, backend="cuda")
entries = [e for e in cat.manifest["kernels"] if e["target"] == TARGET]

POISON = torch.tensor([float("nan")], dtype=torch.bfloat16).view(torch.int16).item()


def bits(t):
    return t.view(torch.int16)


def rel_l2(got, ref):
    """(rel L2 error, has NaN) of got vs ref (fp64)."""
    got = got.double()
    nan = bool(torch.isnan(got).any().item()) or bool(torch.isinf(got).any().item())
    num = (got - ref).norm().item()
    den = ref.norm().item()
    err = num / den if den > 0 else num
    if nan or math.isnan(err):
        return float("inf"), True
    return err, False


def guarded(n, lead, tail, fill):
    """A flat bf16 buffer of lead + n + tail elements, filled; returns (buf, view of the n)."""
    if fill == "nan":
        buf = torch.full((lead + n + tail,), float("nan"), device=dev, dtype=torch.bfloat16)
    else:
        buf = torch.randn(lead + n + tail, device=dev, dtype=torch.bfloat16)
    return buf, buf[lead:lead + n]


# A launch that has not finished after CHECK_HANG_S seconds (a hung kernel)
# ends the run with every thread's traceback instead of using up the device
# time: faulthandler's watchdog is a C thread, which fires even while the main
# thread waits in the CUDA driver.
HANG_S = float(os.environ.get("CHECK_HANG_S", "120"))


def sync(what):
    try:
        faulthandler.dump_traceback_later(HANG_S, exit=True)
        torch.cuda.synchronize()
        faulthandler.cancel_dump_traceback_later()
        return True
    except Exception as e:  # a fault poisons the context; report and stop
        faulthandler.cancel_dump_traceback_later()
        fail(what, "CUDA error after launch: %s" % e)
        raise


# ---------------------------------------------------------------- GEMM numerics

def gemm_case(k, e, M, N, K, lda, ldb, ldc, offset, rng):
    nt = e["params"]["layout"] == "nt"
    rowsB = N if nt else K
    colsB = K if nt else N
    # A and B: guard before (offset elements: 0 keeps 16-byte alignment, 1 does not) and after
    Abuf = torch.randn(offset + M * lda + TAIL, device=dev, dtype=torch.bfloat16)
    Bbuf = torch.randn(offset + rowsB * ldb + TAIL, device=dev, dtype=torch.bfloat16)
    A = Abuf[offset:offset + M * lda].view(M, lda)
    B = Bbuf[offset:offset + rowsB * ldb].view(rowsB, ldb)
    A0, B0 = Abuf.clone(), Bbuf.clone()
    lead = LEAD + offset  # C's own guard before it
    Cbuf, Cflat = guarded(M * ldc, lead, TAIL, "nan")
    C = Cflat.view(M, ldc)
    vals = dict(A=A, B=B, C=C, lda=lda, ldb=ldb, ldc=ldc)
    for d, v in (("M", M), ("N", N), ("K", K)):
        if d in e["runtime_params"]:
            vals[d] = v
    k(**vals)
    sync(e["name"])
    ref = A[:, :K].double() @ (B[:N, :K].double().t() if nt else B[:K, :N].double())
    err, nan = rel_l2(C[:, :N], ref)
    mask = torch.zeros(Cbuf.numel(), dtype=torch.bool, device=dev)
    mask[lead:lead + M * ldc].view(M, ldc)[:, :N] = True
    outside = int((bits(Cbuf)[~mask] != POISON).sum().item())
    inputs_changed = not (torch.equal(bits(Abuf), bits(A0)) and torch.equal(bits(Bbuf), bits(B0)))
    return err, nan, outside, inputs_changed


def gemm_shapes(e, child):
    rt = e["runtime_params"]
    p = e["params"]
    nt = p["layout"] == "nt"
    if "N" in rt:
        base = [(1, 1, 1), (17, 9, 5), (100, 77, 93), (128, 128, 32), (130, 257, 70), (129, 64, 200),
                (513, 257, 1031), (1000, 777, 333), (640, 1536, 4096), (2048, 2048, 2048)]
        if child:
            base = [(17, 9, 5), (130, 257, 70), (129, 64, 200)]
    else:
        N, K = int(p["N"]), int(p["K"])
        base = [(m, N, K) for m in ((1, 77, 128, 300, 1000) if not child else (77,))]
    cases = []
    for i, (M, N, K) in enumerate(base):
        # first case dense, then random padding of every leading dimension
        pad = i > 0
        lda = K + (random.choice((0, 8, 3)) if pad else 0)
        ldb = (K if nt else N) + (random.choice((0, 3, 8)) if pad else 0)
        ldc = N + (random.choice((0, 5, 8)) if pad else 0)
        cases.append((M, N, K, lda, ldb, ldc, 0))
    if not child:
        # explicitly padded strides, and a misaligned base pointer (element path)
        if "N" in rt:
            cases.append((300, 200, 264, 272, 280 if nt else 208, 208, 0))
            cases.append((129, 130, 136, 136, 136 if nt else 130, 133, 1))
            cases.append((255, 383, 129, 131, 131 if nt else 389, 390, 0))
        else:
            N, K = int(p["N"]), int(p["K"])
            cases.append((129, N, K, K + 8, (K if nt else N) + 8, N + 5, 1))
    else:
        if "N" in rt:
            cases.append((129, 130, 136, 136, 136 if nt else 130, 133, 1))
    return cases


def check_gemm(e, child=False):
    k = cat.kernel(e["name"], TARGET)
    worst, n = 0.0, 0
    for (M, N, K, lda, ldb, ldc, off) in gemm_shapes(e, child):
        for rep in range(1 if child else 2):
            err, nan, outside, inch = gemm_case(k, e, M, N, K, lda, ldb, ldc, off, None)
            n += 1
            worst = max(worst, err)
            if nan or not err < TOL or outside or inch:
                fail(e["name"], "M=%d N=%d K=%d lda=%d ldb=%d ldc=%d off=%d: rel=%.3e nan=%s outside_written=%d inputs_changed=%s"
                     % (M, N, K, lda, ldb, ldc, off, err, nan, outside, inch))
    return worst, n


# ---------------------------------------------------------------- RoPE numerics

def strided(B, S, H, D, order, pads, fill, lead=None, tail=None):
    """A [B][S][H][D] view over a guarded flat buffer. order 'bshd' or 'bhsd' is
    the memory order; pads add elements to the head, then the next, then the
    batch stride. Returns (buf, view, mask of logical elements, lead)."""
    p0, p1, p2 = pads
    lead = LEAD if lead is None else lead
    tail = TAIL if tail is None else tail
    if order == "bshd":
        sh = D + p0
        ss = H * sh + p1
        sb = S * ss + p2
    else:  # bhsd
        ss = D + p0
        sh = S * ss + p1
        sb = H * sh + p2
    n = (B - 1) * sb + (S - 1) * ss + (H - 1) * sh + D
    buf, flat = guarded(n, lead, tail, fill)
    view = flat.as_strided((B, S, H, D), (sb, ss, sh, 1))
    mask = torch.zeros(buf.numel(), dtype=torch.bool, device=dev)
    mask[lead:lead + n].as_strided((B, S, H, D), (sb, ss, sh, 1)).fill_(True)
    return buf, view, mask, (sb, ss, sh)


def rope_ref(x, cs, sn, interleaved):
    """x: [B][S][H][D] fp64; cs, sn: [S][D/2] fp64."""
    c = cs[None, :, None, :]
    s = sn[None, :, None, :]
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        y = torch.empty_like(x)
        y[..., 0::2] = a * c - b * s
        y[..., 1::2] = b * c + a * s
        return y
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * c - b * s, b * c + a * s], -1)


def rope_tables(npos, D, theta):
    half = D // 2
    pos = torch.arange(npos, device=dev, dtype=torch.float64)[:, None]
    i = torch.arange(half, device=dev, dtype=torch.float64)[None, :]
    ang = pos * theta ** (-2.0 * i / D)
    return torch.cos(ang), torch.sin(ang)


def rope_case(k, e, B, S, HQ, HK, D, pos0, pads, out_order="bhsd"):
    p = e["params"]
    inplace = p["inplace"] == "true"
    table = p["table"] == "true"
    inter = p["style"] == "interleaved"
    theta = float(p["theta"])
    vals = {}
    ins, outs = [], []
    for t, H in (("q", HQ), ("k", HK)):
        ibuf, iv, imask, ist = strided(B, S, H, D, "bshd", pads[0], "rand")
        x = iv.double()  # the input, before the kernel runs
        i0 = ibuf.clone()
        if inplace:
            vals[t] = iv
            for ax, st in zip("bsh", ist):
                vals["%s_stride_%s" % (t, ax)] = st
            outs.append((t, ibuf, iv, imask, i0, x, H))
        else:
            obuf, ov, omask, ost = strided(B, S, H, D, out_order, pads[1], "nan")
            vals[t + "_in"] = iv
            vals[t + "_out"] = ov
            for ax, st in zip("bsh", ist):
                vals["%s_in_stride_%s" % (t, ax)] = st
            for ax, st in zip("bsh", ost):
                vals["%s_out_stride_%s" % (t, ax)] = st
            ins.append((t, ibuf, i0))
            outs.append((t, obuf, ov, omask, None, x, H))
    npos = pos0 + S
    cs64, sn64 = rope_tables(npos, D, theta)
    if table:
        ct = cs64.float().contiguous()
        st_ = sn64.float().contiguous()
        vals["cos_table"], vals["sin_table"] = ct, st_
        cs_use, sn_use = ct.double(), st_.double()
    else:
        cs_use, sn_use = cs64, sn64
    vals["pos_offset"] = pos0
    for d, v in (("batch", B), ("seq_len", S), ("heads_q", HQ), ("heads_k", HK), ("head_dim", D)):
        if d in e["runtime_params"]:
            vals[d] = v
    k(**vals)
    sync(e["name"])
    errs, bad = [], []
    for (t, buf, view, mask, orig, x, H) in outs:
        ref = rope_ref(x, cs_use[pos0:pos0 + S], sn_use[pos0:pos0 + S], inter)
        err, nan = rel_l2(view, ref)
        errs.append(err)
        if nan:
            bad.append("%s: NaN/Inf in output" % t)
        if not err < TOL:
            bad.append("%s: rel L2 %.3e" % (t, err))
        if orig is None:
            outside = int((bits(buf)[~mask] != POISON).sum().item())
        else:
            outside = int((bits(buf)[~mask] != bits(orig)[~mask]).sum().item())
        if outside:
            bad.append("%s: %d elements outside the logical tensor changed" % (t, outside))
    for (t, buf, orig) in ins:
        if not torch.equal(bits(buf), bits(orig)):
            bad.append("%s: input changed (out-of-place kernel)" % t)
    return max(errs), bad


def rope_shapes(e, child):
    rt = e["runtime_params"]
    p = e["params"]
    if "heads_q" in rt:
        base = [(2, 5, 3, 1, 64), (1, 1, 1, 1, 2), (1, 7, 12, 4, 128), (3, 3, 5, 5, 96), (1, 9, 7, 2, 130),
                (2, 33, 32, 8, 128), (1, 3, 2, 1, 512), (1, 4, 3, 2, 6), (2, 17, 8, 8, 258), (1, 64, 4, 2, 128)]
        if child:
            base = [(2, 5, 3, 1, 64), (1, 9, 7, 2, 130), (1, 3, 2, 1, 512)]
    else:
        HQ, HK, D = int(p["heads_q"]), int(p["heads_k"]), int(p["head_dim"])
        bs = ((1, 1), (2, 37), (3, 129), (1, 513), (1, 64)) if not child else ((2, 5),)
        base = [(b, s, HQ, HK, D) for (b, s) in bs]
    cases = []
    if not child:  # a second case for the 16-byte vector path: padded, but every stride a multiple of 8
        base.insert(1, (2, 9, 5, 3, 64) if "heads_q" in rt else (2, 9, HQ, HK, D))
    for i, sh in enumerate(base):
        if i == 0:
            pads = ((0, 0, 0), (0, 0, 0))
        elif i == 1 and not child:
            pads = ((8, 16, 8), (0, 8, 24))
        else:
            pads = tuple((random.choice((0, 2, 1)), random.randrange(3), random.randrange(5)) for _ in range(2))
        # the last full-size case at a large position (angles in the thousands of radians)
        pos0 = 8000 if (i == len(base) - 1 and not child) else random.randrange(50)
        cases.append((sh, pos0, pads))
    return cases


def check_rope(e, child=False):
    k = cat.kernel(e["name"], TARGET)
    worst, n = 0.0, 0
    for (sh, pos0, pads) in rope_shapes(e, child):
        for rep in range(1 if child else 2):
            err, bad = rope_case(k, e, *sh, pos0, pads)
            n += 1
            worst = max(worst, err)
            if bad:
                fail(e["name"], "B,S,HQ,HK,D=%s pos0=%d pads=%s: %s" % (sh, pos0, pads, "; ".join(bad)))
    return worst, n


CHECKS = {"gemm": check_gemm, "rope": check_rope}

# ---------------------------------------------------------------- the child under compute-sanitizer
if CHILD:
    names = os.environ.get("HK_CHILD_KERNELS", "").split(",")
    random.seed(7)
    torch.manual_seed(7)
    for e in entries:
        if e["name"] in names:
            w, n = CHECKS[e["op"]](e, child=True)
            print("child %-32s %d runs, worst rel L2 %.3e" % (e["name"], n, w), flush=True)
    torch.cuda.synchronize()
    print("child failures:", len(failures), flush=True)
    sys.exit(1 if failures else 0)

# ---------------------------------------------------------------- main run
commit = os.environ.get("HK_COMMIT", "")  # set by run_h200.sh's invocation: the copy there may have no .git
if not commit:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except Exception:
        commit = "?"
props = torch.cuda.get_device_properties(0)
log("hkgen H200 device suite  date %s  device %s (%d SMs, %.0f GiB)  torch %s  triton %s  catalogue %s (%d kernels for %s)"
    % (datetime.datetime.now().isoformat(timespec="minutes"), props.name, props.multi_processor_count,
       props.total_memory / 2**30, torch.__version__, __import__("triton").__version__, CAT, len(entries), TARGET))
try:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu",
                          "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
    log("nvidia-smi:", smi)
except Exception as ex:
    log("nvidia-smi failed:", ex)

random.seed(1234)
torch.manual_seed(1234)
log("\n== (a) numerics: fp64 reference, rel L2 < %.0e, NaN-poisoned outputs, guards and padding checked" % TOL)
numerics = []
t0 = time.time()
for e in entries:
    try:
        w, n = CHECKS[e["op"]](e)
    except Exception as ex:
        fail(e["name"], "exception: %s" % traceback.format_exc(limit=3))
        w, n = float("inf"), 0
        if "illegal" in str(ex) or "CUDA error" in str(ex):
            break  # the context is gone
    nf = sum(1 for f in failures if f[0] == e["name"])
    numerics.append((e["name"], n, w, nf))
    log("%-34s %3d runs  worst rel L2 %.3e  %s" % (e["name"], n, w, "ok" if nf == 0 else "%d FAILED" % nf))
log("numerics: %d kernels, %d failures, %.1f s" % (len(numerics), len(failures), time.time() - t0))

# ---------------------------------------------------------------- (c) benchmarks
bench = []  # (section, name, shape, figure, unit, [(baseline name, baseline figure, ratio), ...])
extra_lines = []
if "--no-bench" not in flags:
    import triton.testing

    def med(fn, warmup=50, rep=300):
        return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")

    lib = cat.lib.c

    class Packed:
        """A pre-packed hkrt_launch_ex (with the manifest's dynamic_lds) of a catalogue kernel (the kernel's time without hkrt.py's packing)."""

        def __init__(self, name, **vals):
            self.k = cat.kernel(name, TARGET)
            self.vals = vals
            self.args = self.k.pack(vals)
            self.buf = ctypes.create_string_buffer(self.args, len(self.args))
            self.g = (ctypes.c_uint * 3)(*self.k.grid(vals))
            self.b = (ctypes.c_uint * 3)(*self.k.entry["block"])
            self.fn = self.k._function()

        def __call__(self):
            st = lib.hkrt_launch_ex(self.fn, self.g, self.b, self.k.dynamic_lds, self.buf, len(self.args),
                                    ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
            if st:
                raise RuntimeError("hkrt_launch_ex: %s" % lib.hkrt_error().decode())

    log("\n== (c) benchmarks: triton.testing.do_bench medians (ms), L2 flushed by do_bench before each run")
    # ---- GEMM
    try:
        def tflops(M, N, K, ms):
            return 2.0 * M * N * K / ms / 1e9

        gemm_any = sorted(e["name"] for e in entries if e["op"] == "gemm" and "N" in e["runtime_params"])
        for S in (4096, 8192):
            M = N = K = S
            a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            bt = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
            bn = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
            c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
            cub = {}
            for lay, f in (("nt", lambda: torch.matmul(a, bt.t())), ("nn", lambda: torch.matmul(a, bn))):
                t1, t2 = med(f), med(f)
                cub[lay] = tflops(M, N, K, min(t1, t2))
                log("cuBLAS %s %d^3: %.3f ms %.3f ms -> %.1f TFLOP/s" % (lay, S, t1, t2, cub[lay]))
            for name in gemm_any:
                e = cat.kernel(name, TARGET).entry
                if S == 8192 and not (e["params"]["tile_m"] == "128" and e["params"]["tile_n"] in ("128", "256")):
                    continue
                lay = e["params"]["layout"]
                b = bt if lay == "nt" else bn
                c.fill_(float("nan"))
                go = Packed(name, A=a, B=b, C=c, lda=K, ldb=K if lay == "nt" else N, ldc=N, M=M, N=N, K=K)
                t1, t2 = med(go), med(go)
                ms = min(t1, t2)
                torch.cuda.synchronize()
                r = a[:256].double() @ (bt.double().t() if lay == "nt" else bn.double())
                err, nan = rel_l2(c[:256], r)
                if nan or not err < TOL:
                    fail(name, "benchmark output at %d^3: rel %.3e nan %s" % (S, err, nan))
                tf = tflops(M, N, K, ms)
                log("%-26s %d^3: %.3f ms %.3f ms -> %.1f TFLOP/s (cuBLAS %.1f, ratio %.3f; spread %.1f%%; rel err %.2e)"
                    % (name, S, t1, t2, tf, cub[lay], tf / cub[lay], 100 * abs(t1 - t2) / ms, err))
                bench.append(("gemm", name, "%d^3 %s" % (S, lay), tf, "TFLOP/s", [("cuBLAS", cub[lay], tf / cub[lay])]))
            del a, bt, bn, c
        # Llama-3 projections, M = 8192 tokens
        M = 8192
        for name in sorted(e["name"] for e in entries if e["op"] == "gemm" and "N" not in e["runtime_params"]):
            e = cat.kernel(name, TARGET).entry
            N, K, lay = int(e["params"]["N"]), int(e["params"]["K"]), e["params"]["layout"]
            a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            b = torch.randn(N, K, device=dev, dtype=torch.bfloat16) if lay == "nt" else torch.randn(K, N, device=dev, dtype=torch.bfloat16)
            c = torch.full((M, N), float("nan"), device=dev, dtype=torch.bfloat16)
            f = (lambda: torch.matmul(a, b.t())) if lay == "nt" else (lambda: torch.matmul(a, b))
            tc = min(med(f), med(f))
            go = Packed(name, A=a, B=b, C=c, lda=K, ldb=b.shape[1], ldc=N, M=M)
            t1, t2 = med(go), med(go)
            ms = min(t1, t2)
            torch.cuda.synchronize()
            r = a[:128].double() @ (b.double().t() if lay == "nt" else b.double())
            err, nan = rel_l2(c[:128], r)
            if nan or not err < TOL:
                fail(name, "benchmark output: rel %.3e nan %s" % (err, nan))
            tf, tfc = tflops(M, N, K, ms), tflops(M, N, K, tc)
            log("%-26s M=%d N=%d K=%d %s: %.3f ms %.3f ms -> %.1f TFLOP/s (cuBLAS %.3f ms %.1f, ratio %.3f; rel err %.2e)"
                % (name, M, N, K, lay, t1, t2, tf, tc, tfc, tf / tfc, err))
            bench.append(("gemm", name, "%dx%dx%d %s" % (M, N, K, lay), tf, "TFLOP/s", [("cuBLAS", tfc, tf / tfc)]))
            del a, b, c
    except Exception:
        fail("gemm benchmarks", traceback.format_exc(limit=4))
    torch.cuda.empty_cache()

    # ---- copy bandwidth
    copy_tbps = None
    try:
        if GEMM_ONLY:
            raise SkipSection()
        x = torch.empty(2 << 30, dtype=torch.uint8, device=dev)
        x.random_(0, 255)
        t1, t2 = med(lambda: x.clone()), med(lambda: x.clone())
        copy_tbps = 2 * x.numel() / min(t1, t2) / 1e9
        log("copy: clone of 2 GiB: %.3f ms %.3f ms -> %.3f TB/s (bytes read + written)" % (t1, t2, copy_tbps))
        y = torch.empty_like(x)
        t3 = med(lambda: y.copy_(x))
        log("copy: copy_ of 2 GiB into a preallocated tensor: %.3f ms -> %.3f TB/s" % (t3, 2 * x.numel() / t3 / 1e9))
        extra_lines.append("copy_ 2 GiB preallocated: %.3f TB/s" % (2 * x.numel() / t3 / 1e9))
        del x, y
    except SkipSection:
        pass
    except Exception:
        fail("copy benchmark", traceback.format_exc(limit=3))
    torch.cuda.empty_cache()

    # ---- RoPE at 16K tokens, 32 q heads, 8 kv heads, d = 128
    try:
        if GEMM_ONLY:
            raise SkipSection()
        # 16K tokens (the Llama-3-8B shape of the earlier runs), then 64K tokens (a long
        # prefill: fixed start-up and tail costs weigh less)
        HQ, HK, D = 32, 8, 128
        for B, S in ((4, 4096), (16, 4096)):
            shape_label = "%dK tok 32/8 d128" % (B * S // 1024)
            half = D // 2
            q = torch.randn(B, S, HQ, D, device=dev, dtype=torch.bfloat16)
            kk = torch.randn(B, S, HK, D, device=dev, dtype=torch.bfloat16)
            qo = torch.empty_like(q)
            ko = torch.empty_like(kk)
            qk_bytes = 2 * (q.numel() + kk.numel()) * 2  # read Q, K + write Q, K
            tab_bytes = 2 * S * half * 4
            cs64, sn64 = rope_tables(S, D, 10000.0)
            cos, sin = cs64.float().contiguous(), sn64.float().contiguous()
            log("rope shape: batch %d x seq %d = %d tokens, heads %d/%d, head_dim %d; Q+K %.1f MB, moved %.1f MB (+ tables %.1f MB)"
                % (B, S, B * S, HQ, HK, D, (q.numel() + kk.numel()) * 2 / 1e6, qk_bytes / 1e6, tab_bytes / 1e6))
            # same-bytes copy: clone of Q and K
            tcp = min(med(lambda: (q.clone(), kk.clone())), med(lambda: (q.clone(), kk.clone())))
            copy_same = qk_bytes / tcp / 1e9
            log("copy of Q and K (clone, same bytes): %.4f ms -> %.3f TB/s" % (tcp, copy_same))
            extra_lines.append("clone of Q,K (%.0f MB moved): %.3f TB/s" % (qk_bytes / 1e6, copy_same))

            def rope_t(x):
                x1, x2 = x[..., :half].float(), x[..., half:].float()
                c, s = cos[None, :, None, :], sin[None, :, None, :]
                return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1).to(x.dtype)

            def rope_qk(q, k):
                return rope_t(q), rope_t(k)

            te = min(med(lambda: rope_qk(q, kk)), med(lambda: rope_qk(q, kk)))
            log("torch eager rotate-half RoPE (fp32 math, table): %.4f ms -> %.3f TB/s" % (te, (qk_bytes + tab_bytes) / te / 1e9))
            rc = torch.compile(rope_qk)
            qc, kc = rc(q, kk)
            torch.cuda.synchronize()
            tcomp = min(med(lambda: rc(q, kk)), med(lambda: rc(q, kk)))
            comp_tbps = (qk_bytes + tab_bytes) / tcomp / 1e9
            log("torch.compile rotate-half RoPE (fp32 math, table): %.4f ms -> %.3f TB/s" % (tcomp, comp_tbps))
            eq, _ = rel_l2(qc, rope_ref(q.double(), cs64, sn64, False))
            log("  torch.compile output rel L2 vs fp64: %.2e" % eq)
            cp = copy_tbps or float("nan")
            bench.append(("rope", "torch eager (baseline)", shape_label, (qk_bytes + tab_bytes) / te / 1e9, "TB/s",
                          [("copy", cp, (qk_bytes + tab_bytes) / te / 1e9 / cp)]))
            bench.append(("rope", "torch.compile (baseline)", shape_label, comp_tbps, "TB/s",
                          [("copy", cp, comp_tbps / cp)]))

            rope_names = sorted(e["name"] for e in entries if e["op"] == "rope")
            for name in rope_names:
                e = cat.kernel(name, TARGET).entry
                p = e["params"]
                inplace, table = p["inplace"] == "true", p["table"] == "true"
                vals = {}
                qs = (HQ * D * S, HQ * D, D)
                ks = (HK * D * S, HK * D, D)
                if inplace:
                    vals.update(q=q, k=kk)
                    for t, st in (("q", qs), ("k", ks)):
                        for ax, v in zip("bsh", st):
                            vals["%s_stride_%s" % (t, ax)] = v
                else:
                    vals.update(q_in=q, k_in=kk, q_out=qo, k_out=ko)
                    for t, st in (("q_in", qs), ("k_in", ks), ("q_out", qs), ("k_out", ks)):
                        for ax, v in zip("bsh", st):
                            vals["%s_stride_%s" % (t, ax)] = v
                if table:
                    vals.update(cos_table=cos, sin_table=sin)
                vals["pos_offset"] = 0
                for d, v in (("batch", B), ("seq_len", S), ("heads_q", HQ), ("heads_k", HK), ("head_dim", D)):
                    if d in e["runtime_params"]:
                        vals[d] = v
                go = Packed(name, **vals)
                t1, t2 = med(go), med(go)
                ms = min(t1, t2)
                by = qk_bytes + (tab_bytes if table else 0)
                tb = by / ms / 1e9
                log("%-34s %.4f ms %.4f ms -> %.3f TB/s (copy %.3f: ratio %.3f; torch.compile %.3f: ratio %.2f; spread %.1f%%)"
                    % (name, t1, t2, tb, copy_tbps or float("nan"), tb / copy_tbps if copy_tbps else float("nan"),
                       comp_tbps, tb / comp_tbps, 100 * abs(t1 - t2) / ms))
                bench.append(("rope", name, shape_label, tb, "TB/s",
                              [("copy", cp, tb / cp), ("compile", comp_tbps, tb / comp_tbps)]))
                if name == "rope_l3_rotate_half_ip0_tab1" and B * S == 16384:
                    # hkrt.py's own call (packs the arguments each time) against the pre-packed launch
                    k = cat.kernel(name, TARGET)
                    th = min(med(lambda: k(**vals)), med(lambda: k(**vals)))
                    log("  same kernel through hkrt.py's Kernel.__call__: %.4f ms (pre-packed %.4f ms)" % (th, ms))
                    extra_lines.append("%s via hkrt.py call: %.4f ms vs pre-packed %.4f ms" % (name, th, ms))
                    torch.cuda.synchronize()
                    ref = rope_ref(q.double(), cs64.float().double(), sn64.float().double(), False)
                    err, nan = rel_l2(qo, ref)
                    log("  output rel L2 vs fp64: %.2e" % err)
                    if nan or not err < TOL:
                        fail(name, "benchmark output rel %.3e nan %s" % (err, nan))
            del q, kk, qo, ko
    except SkipSection:
        pass
    except Exception:
        fail("rope benchmarks", traceback.format_exc(limit=4))
    torch.cuda.empty_cache()

    # ---- launch overhead: host time per launch of a one-token RoPE
    try:
        if GEMM_ONLY:
            raise SkipSection()
        name = "rope_l3_rotate_half_ip0_tab1"
        k = cat.kernel(name, TARGET)
        q1 = torch.randn(1, 1, 32, 128, device=dev, dtype=torch.bfloat16)
        k1 = torch.randn(1, 1, 8, 128, device=dev, dtype=torch.bfloat16)
        qo1, ko1 = torch.empty_like(q1), torch.empty_like(k1)
        ct = torch.rand(1, 64, device=dev)
        vals = dict(q_in=q1, k_in=k1, q_out=qo1, k_out=ko1, cos_table=ct, sin_table=ct, pos_offset=0, batch=1, seq_len=1)
        for t, H in (("q_in", 32), ("k_in", 8), ("q_out", 32), ("k_out", 8)):
            for ax, v in zip("bsh", (H * 128, H * 128, 128)):
                vals["%s_stride_%s" % (t, ax)] = v
        go = Packed(name, **vals)
        cu = ctypes.CDLL("libcuda.so.1")
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        data = open(os.path.join(CAT, k.entry["file"]), "rb").read()
        assert cu.cuModuleLoadData(ctypes.byref(mod), data) == 0
        assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()) == 0
        size = ctypes.c_size_t(len(go.args))
        extra = (ctypes.c_void_p * 5)(1, ctypes.cast(go.buf, ctypes.c_void_p), 2,
                                      ctypes.cast(ctypes.pointer(size), ctypes.c_void_p), 0)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

        def raw():
            rc = cu.cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, stream, None, extra)
            if rc:
                raise RuntimeError("cuLaunchKernel %d" % rc)

        res = {}
        for label, f in (("hkrt.py Kernel.__call__", lambda: k(**vals)), ("pre-packed hkrt_launch", go),
                         ("raw cuLaunchKernel", raw)):
            for _ in range(200):
                f()
            torch.cuda.synchronize()
            n = 5000
            t = time.perf_counter()
            for _ in range(n):
                f()
            torch.cuda.synchronize()
            res[label] = (time.perf_counter() - t) / n * 1e6
            log("launch overhead, %s: %.2f us per launch (host loop of %d one-token launches)" % (label, res[label], n))
        extra_lines.append("host us/launch: " + ", ".join("%s %.1f" % kv for kv in res.items()))
    except SkipSection:
        pass
    except Exception:
        fail("launch overhead", traceback.format_exc(limit=3))

# ---------------------------------------------------------------- (b) compute-sanitizer
san_lines = []
if "--no-sanitize" not in flags:
    log("\n== (b) compute-sanitizer")
    cs_bin = shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer")
         if os.path.exists(p)), None)
    if not cs_bin:
        log("compute-sanitizer: NOT FOUND on this machine (PATH and /usr/local/cuda); memcheck not run")
        san_lines.append("compute-sanitizer not found: not run")
    else:
        runs = [
            ("memcheck", ["gemm_any_nt_tm128_tn128", "gemm_any_nt_tm128_tn256", "gemm_any_nn_tm128_tn256",
                          "gemm_any_nn_tm64_tn64",
                          "gemm_any_nt_tm64_tn128", "l3_qkv", "l3_down_tn256",
                          "l3_down_nn", "rope_any_rotate_half_ip0_tab1", "rope_any_interleaved_ip1_tab0",
                          "rope_l3_rotate_half_ip0_tab1", "rope_l3_interleaved_ip1_tab0"]),
            ("racecheck", ["gemm_any_nt_tm128_tn256", "gemm_any_nn_tm128_tn256"]),
        ]
        for tool, names in runs:
            env = dict(os.environ, HK_CHILD_KERNELS=",".join(names), PYTORCH_NO_CUDA_MEMORY_CACHING="1")
            cmd = [cs_bin, "--tool", tool, "--print-limit", "20"]
            if tool == "memcheck":
                cmd += ["--leak-check", "no"]
            cmd += [sys.executable, HERE, CAT, "--child"]
            t = time.time()
            try:
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=200 if tool == "memcheck" else 150)
                outp = r.stdout + r.stderr
                rc = r.returncode
            except subprocess.TimeoutExpired as ex:
                outp = (ex.stdout or b"").decode(errors="replace") if isinstance(ex.stdout, bytes) else (ex.stdout or "")
                rc = "timeout"
            for line in outp.splitlines():
                if LOG:
                    LOG.write("  [%s] %s\n" % (tool, line))
            summ = [l for l in outp.splitlines() if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l]
            ok = rc == 0 and any("ERROR SUMMARY: 0 errors" in l for l in summ) or \
                (tool == "racecheck" and rc == 0 and any("0 hazards" in l or "0 errors" in l for l in summ))
            msg = "%s on %s: rc %s, %s (%.0f s)" % (tool, ",".join(names), rc, "; ".join(summ) or "no summary", time.time() - t)
            log(msg)
            san_lines.append(("ok   " if ok else "FAIL ") + msg)
            if not ok:
                fail("compute-sanitizer " + tool, msg + "\n" + "\n".join(outp.splitlines()[-30:]))

# ---------------------------------------------------------------- compact table
log("\n== summary")
log("device %s  date %s  commit %s (working tree may hold uncommitted files)" %
    (props.name, datetime.datetime.now().isoformat(timespec="minutes"), commit))
log("numerics: %d kernels checked, %d with failures; worst rel L2 over passing kernels %.2e" %
    (len(numerics), sum(1 for n in numerics if n[3]), max([n[2] for n in numerics if not n[3]] or [0])))
for s in san_lines:
    log("sanitizer:", s)
for s in extra_lines:
    log("note:", s)
log("%-5s %-30s %-22s %9s %-7s  %s" % ("op", "kernel", "shape", "figure", "unit", "baseline: figure ratio"))
for (sec, name, shape, fig, unit, bases) in bench:
    log("%-5s %-30s %-22s %9.3f %-7s  %s" % (sec, name, shape, fig, unit,
                                               "  ".join("%s %.3f %.3f" % b for b in bases)))
log("failures: %d" % len(failures))
for w, d in failures:
    log("  %s: %s" % (w, d.splitlines()[0] if d else ""))
sys.exit(1 if failures else 0)
