#!/usr/bin/env python3
"""attn_fwd past 2^31 elements per tensor (issue #19's 64-bit offset check):
    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/attn_big.py CATALOGUE KERNEL
KERNEL: an sm_90a attn_fwd kernel with every dimension at run time, head_dim
128, causal.  Q, K, V, O are BSHD [65][8192][32][128] bf16: 2^31 + 2^25
elements each (4.4 GB), so the last batch's offsets pass 2^31.  O and LSE are
poisoned with NaN first; a sample of query rows in the first and the last
batch is compared with an fp64 reference (relative L2 per row block), and
every O and LSE value of the last batch must be finite."""
import math
import sys
import time

import torch

import hkrt

cat_dir, name = sys.argv[1], sys.argv[2]
B, S, H, D = 65, 8192, 32, 128
cat = hkrt.Catalog(cat_dir, backend="cuda")
k = cat.kernel(name, "sm_90a")
n = B * S * H * D
print("%s: B S H D = %d %d %d %d, %d elements per tensor (2^31 = %d)" % (name, B, S, H, D, n, 2 ** 31))
g = torch.Generator(device="cuda").manual_seed(int(time.time()))
q, kk, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
o = torch.full_like(q, float("nan"))
lse = torch.full((B, H, S), float("nan"), device="cuda", dtype=torch.float32)
scale = 1.0 / math.sqrt(D)
vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=scale)
for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
    vals["%s_stride_b" % t], vals["%s_stride_s" % t], vals["%s_stride_h" % t] = x.stride(0), x.stride(1), x.stride(2)
for d, x in dict(batch=B, seqlen_q=S, seqlen_k=S, heads_q=H, heads_k=H).items():
    if d in k.entry["runtime_params"]:
        vals[d] = x
torch.cuda.synchronize()
t0 = time.time()
k(**vals)
torch.cuda.synchronize()
print("launch + run: %.3f s" % (time.time() - t0))
bad = 0
last = o[B - 1]
fin = bool(torch.isfinite(last).all()) and bool(torch.isfinite(lse[B - 1]).all())
print("last batch O and LSE finite: %s" % fin)
bad += not fin
rows = torch.tensor([0, 1, 777, 4095, 6000, 8190, 8191], device="cuda")
for b in (0, B - 1):
    for h in (0, H - 1):
        qd = q[b, rows, h].double()
        kd, vd = kk[b, :, h].double(), v[b, :, h].double()
        s = (qd @ kd.T) * scale
        cols = torch.arange(S, device="cuda")
        s = s.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
        ref_lse = torch.logsumexp(s, dim=1)
        ref = torch.softmax(s, dim=1) @ vd
        got = o[b, rows, h].double()
        err = float((got - ref).norm() / ref.norm())
        lerr = float((lse[b, h, rows].double() - ref_lse).abs().max())
        ok = math.isfinite(err) and err < 2e-2 and math.isfinite(lerr) and lerr < 1e-2
        print("batch %2d head %2d: O rel L2 %.2e, LSE max abs err %.2e %s" % (b, h, err, lerr, "ok" if ok else "FAIL"))
        bad += not ok
print("attn_big: %s" % ("PASS" if bad == 0 else "FAIL (%d)" % bad))
sys.exit(1 if bad else 0)
