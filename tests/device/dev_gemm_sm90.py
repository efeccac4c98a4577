#!/usr/bin/env python3
"""Throwaway device check of the sm_90a GEMM cubins (templates/gemm.sm90.hip.m4).

Loads each cubin with ctypes over libcuda (cuModuleLoadData, cuModuleGetFunction,
cuLaunchKernel with the args struct packed through CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE),
checks against torch in fp64 (fresh random inputs, poisoned outputs, rel L2 < 1e-2,
no NaN, every element written), and times 128x128 kernels against torch.matmul
(cuBLAS) with triton.testing.do_bench medians in the same run.

Usage: dev_gemm_sm90.py CUBIN_DIR [--quick]
"""
import ctypes, datetime, glob, os, struct, sys

import torch
import triton.testing

cubin_dir = sys.argv[1] if len(sys.argv) > 1 else ".sm90cubins"
cu = ctypes.CDLL("libcuda.so.1")


def ck(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what}: CUDA error {rc} {name.value}")


torch.cuda.init()
torch.zeros(1, device="cuda")  # primary context current on this thread
ck(cu.cuInit(0), "cuInit")

mods = {}


def load(name):
    path = os.path.join(cubin_dir, f"{name}_sm_90a.cubin")
    data = open(path, "rb").read()
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), data), f"cuModuleLoadData {path}")
    fn = ctypes.c_void_p()
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, f"{name}_sm_90a".encode()), "cuModuleGetFunction")
    mods[name] = (mod, data)
    return fn


def launcher(fn, A, B, C, lda, ldb, ldc, M, N, K, tm, tn):
    # struct hk_args { const hk_bf16 *A, *B; hk_bf16 *C; int lda, ldb, ldc, M, N, K; } (run-time M, N, K)
    buf = struct.pack("<QQQiiiiii", A.data_ptr(), B.data_ptr(), C.data_ptr(), lda, ldb, ldc, M, N, K)
    cbuf = ctypes.create_string_buffer(buf, len(buf))
    size = ctypes.c_size_t(len(buf))
    extra = (ctypes.c_void_p * 5)(1, ctypes.cast(cbuf, ctypes.c_void_p), 2, ctypes.cast(ctypes.pointer(size), ctypes.c_void_p), 0)
    gx, gy = (N + tn - 1) // tn, (M + tm - 1) // tm
    keep = (cbuf, size, extra)

    def go():
        _ = keep
        ck(cu.cuLaunchKernel(fn, gx, gy, 1, 256, 1, 1, 0, None, None, extra), "cuLaunchKernel")

    return go


def make(M, N, K, layout, lda=None, ldb=None, ldc=None, offset=0):
    lda = lda or K
    ldb = ldb or (K if layout == "nt" else N)
    ldc = ldc or N
    rowsB = N if layout == "nt" else K
    # offset (elements) makes the base pointer misaligned for the element path
    Ast = torch.randn(M * lda + offset, device="cuda", dtype=torch.bfloat16)
    Bst = torch.randn(rowsB * ldb + offset, device="cuda", dtype=torch.bfloat16)
    A = Ast[offset:].view(M, lda)
    B = Bst[offset:].view(rowsB, ldb)
    C = torch.full((M * ldc,), float("nan"), device="cuda", dtype=torch.bfloat16).view(M, ldc)
    return A, B, C, lda, ldb, ldc


def ref(A, B, M, N, K, layout):
    a = A[:, :K].double()
    b = B[:N, :K].double().t() if layout == "nt" else B[:K, :N].double()
    return a @ b


rows = []
fails = 0
shapes = [  # M, N, K, extras
    (128, 128, 32, {}), (256, 384, 512, {}), (1000, 777, 333, {}), (1, 1, 1, {}), (17, 9, 5, {}),
    (513, 257, 1031, {}), (640, 1536, 4096, {}), (300, 200, 264, {"lda": 272, "ldb": 280, "ldc": 208}),
    (129, 130, 136, {"offset": 1}), (2048, 2048, 2048, {}),
]
names = sorted(os.path.basename(p)[: -len("_sm_90a.cubin")] for p in glob.glob(os.path.join(cubin_dir, "gemm_*_any_sm_90a.cubin")))
fns = {n: load(n) for n in names}
torch.manual_seed(1234)
for n in names:
    layout = n.split("_")[1]
    tm, tn = (int(x) for x in n.split("_")[2].split("x"))
    worst = 0.0
    for (M, N, K, ex) in shapes:
        for rep in range(2):
            A, B, C, lda, ldb, ldc = make(M, N, K, layout, **ex)
            launcher(fns[n], A, B, C, lda, ldb, ldc, M, N, K, tm, tn)()
            ck(cu.cuCtxSynchronize(), "sync")
            r = ref(A, B, M, N, K, layout)
            out = C[:, :N].double()
            nan = torch.isnan(out).any().item()
            err = ((out - r).norm() / r.norm().clamp_min(1e-30)).item()
            # columns past N of a padded C must stay poisoned (NaN)
            outside = ldc > N and not torch.isnan(C[:, N:].float()).all().item()
            bad = nan or not err < 1e-2 or outside
            worst = max(worst, err if not nan else float("inf"))
            if bad:
                fails += 1
                print(f"FAIL {n} M={M} N={N} K={K} {ex} rel={err:.3e} nan={nan} outside_written={outside}", flush=True)
    print(f"{n:24s} correctness over {len(shapes)} shapes x2: worst rel L2 {worst:.3e}", flush=True)

# timing: 128x128 kernels vs cuBLAS
timing = []
for S in (4096, 8192):
    M = N = K = S
    flop = 2.0 * M * N * K
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    bt = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    bn = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    t_cublas_nt = triton.testing.do_bench(lambda: torch.matmul(a, bt.t()), warmup=100, rep=400, return_mode="median")
    t_cublas_nn = triton.testing.do_bench(lambda: torch.matmul(a, bn), warmup=100, rep=400, return_mode="median")
    for n in names:
        if "128x128" not in n and S == 8192:
            continue
        layout = n.split("_")[1]
        tm, tn = (int(x) for x in n.split("_")[2].split("x"))
        b = bt if layout == "nt" else bn
        go = launcher(fns[n], a, b, c, K, K if layout == "nt" else N, N, M, N, K, tm, tn)
        t = triton.testing.do_bench(go, warmup=100, rep=400, return_mode="median")
        t2 = triton.testing.do_bench(go, warmup=50, rep=400, return_mode="median")
        ck(cu.cuCtxSynchronize(), "sync")
        r = ref(a[:1024], b, 1024, N, K, layout) if layout == "nt" else ref(a[:1024], b, 1024, N, K, layout)
        err = ((c[:1024].double() - r).norm() / r.norm()).item()
        tc = t_cublas_nt if layout == "nt" else t_cublas_nn
        timing.append((f"{S}^3", n, err, flop / t / 1e9, flop / t2 / 1e9, flop / tc / 1e9))
print()
print(f"device: {torch.cuda.get_device_name()}  date: {datetime.datetime.now().isoformat(timespec='minutes')}  torch {torch.__version__}")
print(f"{'shape':8s} {'kernel':24s} {'rel err':>9s} {'TFLOP/s':>8s} {'(again)':>8s} {'cuBLAS':>8s} {'ratio':>6s}")
for (s, n, e, t, t2, tc) in timing:
    print(f"{s:8s} {n:24s} {e:9.2e} {t:8.1f} {t2:8.1f} {tc:8.1f} {t / tc:6.3f}")
print("correctness failures:", fails)
sys.exit(1 if fails else 0)
