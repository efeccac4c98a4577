# Same-run baselines for hkgen bench's figures: cuBLAS bf16 GEMM (torch.mm,
# C = A B^T as layout nt) timed by triton.testing.do_bench (L2 cleared
# between runs, median), and a device-to-device copy for the TB/s ops.
import torch, triton
def gemm(m, n, k):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    ms = triton.testing.do_bench(lambda: torch.mm(a, b.t()), warmup=25, rep=100, return_mode="median")
    print(f"cublas_gemm_nt M={m} N={n} K={k}: {ms*1e3:.2f} us  {2*m*n*k/ms/1e9:.1f} TFLOP/s", flush=True)
def copy(mb):
    x = torch.empty(mb << 20, device="cuda", dtype=torch.uint8); y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x), warmup=25, rep=100, return_mode="median")
    print(f"device copy {mb} MiB: {ms*1e3:.2f} us  {2*(mb<<20)/ms/1e9:.2f} TB/s", flush=True)
print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
for s in ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (256, 8192, 4096)): gemm(*s)
copy(256)
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
            print(f"sdpa_{name} batch={b} heads={hq}:{hk} seq={s} d={d} causal={int(causal)}: {ms*1e3:.2f} us", flush=True)
        except Exception as e:
            print(f"sdpa_{name}: not run ({type(e).__name__}: {str(e)[:80]})", flush=True)
for c in (True, False):
    sdpa(4, 32, 8, 2048, 128, c)
