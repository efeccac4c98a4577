#!/usr/bin/env python3
"""bind_bench.py CATALOG (on the H200): hkrt.py's launch paths at a small GEMM.
Checks each path's numbers against torch (fp32 reference of the same bf16
inputs, relative L2, NaN fails), then the host time per call of
Kernel.__call__ (packs every call), Kernel.bind's bound call (patches the
pointers), torch.matmul and torch SDPA at a small problem, and that a bound
launch captured into a CUDA graph replays with the right numbers.

    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/bind_bench.py build/dev/bind"""
import sys
import time

import torch

import hkrt

cat = hkrt.Catalog(sys.argv[1], backend="cuda")
k = [x for x in cat.kernels("sm_90a") if x.entry["op"] == "gemm"][0]
M = N = K = 256
torch.manual_seed(0)
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
ref = a.float() @ b.float().t()
fails = 0


def check(c, what):
    global fails
    torch.cuda.synchronize()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    ok = err == err and err < 1e-2
    fails += not ok
    print("%-40s rel L2 %.3e %s" % (what, err, "ok" if ok else "FAIL"))


def poisoned():
    return torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)


vals = dict(lda=K, ldb=K, ldc=N, M=M, N=N, K=K)
c = poisoned()
k(A=a, B=b, C=c, **vals)
check(c, "Kernel.__call__")
run = k.bind(A=a, B=b, C=poisoned(), **vals)
a2, b2 = a.clone(), b.clone()  # other addresses, same values: A and B are held by tensor maps on sm_90a
c = poisoned()
run(A=a2, B=b2, C=c)
check(c, "Kernel.bind, A, B, C patched")
del a2, b2


def host_us(fn, n=20000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


c = poisoned()
q = torch.randn(1, 8, 128, 64, device="cuda", dtype=torch.bfloat16)
rows = [
    ("hkrt Kernel.__call__ (packs each call)", lambda: k(A=a, B=b, C=c, **vals)),
    ("hkrt Kernel.bind call (pointers only)", lambda: run(A=a, B=b, C=c)),
    ("hkrt bound call, no pointer given", lambda: run()),
    ("torch.matmul (cuBLAS), same GEMM", lambda: torch.matmul(a, b.t())),
    ("torch SDPA, 1x8x128x64", lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q)),
]
print("%-40s %12s %14s" % ("path (H200, %dx%dx%d bf16)" % (M, N, K), "host us/call", "wall us/call"))
for name, fn in rows:
    h, w = host_us(fn)
    print("%-40s %12.2f %14.2f" % (name, h, w))
check(c, "after the timed bound calls")

# a bound launch captured into a CUDA graph, replayed on fresh output
g = torch.cuda.CUDAGraph()
c = poisoned()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    run(A=a, B=b, C=c)  # warm-up outside capture
torch.cuda.current_stream().wait_stream(s)
with torch.cuda.graph(g):
    run(A=a, B=b, C=c)
c.fill_(float("nan"))
g.replay()
check(c, "CUDA graph replay of a bound launch")
b.copy_(torch.randn(N, K, device="cuda", dtype=torch.bfloat16))
ref = a.float() @ b.float().t()
g.replay()
check(c, "replay after B changed in place")
h, w = host_us(lambda: g.replay(), 5000)
print("%-40s %12.2f %14.2f" % ("graph replay (one launch)", h, w))
print("bind_bench: %d failed" % fails)
sys.exit(1 if fails else 0)
