"""tune_check.py CATALOG TUNED_CATALOG: on the H200, in one torch process,
(1) the numerics of every kernel `hkgen tune` chose (the tuned list of
TUNED_CATALOG's manifest): fresh random A and B, C poisoned with NaN, the
kernel launched through hkrt.py, rel. L2 error against an fp64 product on
the GPU (tolerance 1e-2, NaN fails); (2) same-run baselines: cuBLAS
(torch.mm(a, b.t()), layout nt) at each tuned problem, SDPA (cuDNN, then
flash) at hkgen bench's default attention problems, a 256 MiB copy.
triton.testing.do_bench medians (L2 cleared between runs)."""
import json
import os
import sys

import torch
import triton

import hkrt


def check(cat, entry):
    p = {k: int(v) for k, v in entry["problem"].items() if v.lstrip("-").isdigit()}
    m, n, k = p["M"], p["N"], p["K"]
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern = cat.kernel(entry["kernel"], entry["target"])
    kern(A=a, B=b, C=c, lda=k, ldb=k, ldc=n, M=m, N=n, K=k)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().t()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    ok = err == err and err <= 1e-2
    print(f"numerics {entry['kernel']} M={m} N={n} K={k}: rel L2 {err:.3e} {'PASS' if ok else 'FAIL'}", flush=True)
    ms = triton.testing.do_bench(lambda: torch.mm(a, b.t()), warmup=25, rep=100, return_mode="median")
    print(f"cublas_gemm_nt M={m} N={n} K={k}: {ms*1e3:.2f} us  {2*m*n*k/ms/1e9:.1f} TFLOP/s", flush=True)
    return ok


def sdpa(b, hq, hk, s, d, causal):
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
    q = torch.randn(b, hq, s, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(be):
                f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
                f()
                ms = triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")
            print(f"sdpa_{name} batch={b} heads={hq}:{hk} seq={s} d={d} causal={int(causal)}: {ms*1e3:.2f} us",
                  flush=True)
            return
        except Exception as e:  # one backend refusing GQA must not stop the run
            print(f"sdpa_{name}: not run ({type(e).__name__}: {str(e)[:80]})", flush=True)


def main():
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    with open(os.path.join(sys.argv[2], "manifest.json")) as f:
        tuned = json.load(f).get("tuned") or []
    cat = hkrt.Catalog(sys.argv[2], backend="cuda")
    fails = sum(not check(cat, e) for e in tuned)
    print(f"numerics: {len(tuned)} tuned kernels, {fails} failed", flush=True)
    for causal in (True, False):
        sdpa(4, 32, 8, 2048, 128, causal)
    x = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x), warmup=25, rep=100, return_mode="median")
    print(f"device copy 256 MiB: {ms*1e3:.2f} us  {2*(256<<20)/ms/1e9:.2f} TB/s", flush=True)
    sys.exit(1 if fails or not tuned else 0)


main()
