#!/usr/bin/env python3
"""One launch of one attention kernel, for profilers (Nsight Compute):
    PYTHONPATH=runtime/python HKRT_LIB=build/libhkrt.so \\
        python3 tests/device/attn_one.py CATALOGUE KERNEL B H S
[B][H][S][D] contiguous bf16, Hq = Hk = H, Sq = Sk = S, scale 1/sqrt(D)
(causal or not as the kernel was built); a kernel with any of these baked to
another value is refused.  Two warm-up launches, then the one to profile
(ncu --launch-skip 2 --launch-count 1)."""
import math
import sys

import torch

import hkrt

cat_dir, name, B, H, S = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
cat = hkrt.Catalog(cat_dir, backend="cuda")
k = cat.kernel(name, "sm_90a")
D = int(k.entry["params"]["head_dim"])
dims = dict(batch=B, seqlen_q=S, seqlen_k=S, heads_q=H, heads_k=H)
for d, x in dims.items():
    baked = k.entry["params"].get(d)
    if d not in k.entry["runtime_params"] and baked is not None and int(baked) != x:
        sys.exit("attn_one.py: %s has %s baked to %s, not %d" % (name, d, baked, x))
q, kk, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
o = torch.empty_like(q)
lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
vals = dict(Q=q, K=kk, V=v, O=o, LSE=lse, scale=1.0 / math.sqrt(D))
for t, x in (("q", q), ("k", kk), ("v", v), ("o", o)):
    vals["%s_stride_b" % t], vals["%s_stride_h" % t], vals["%s_stride_s" % t] = x.stride(0), x.stride(1), x.stride(2)
for d, x in dims.items():
    if d in k.entry["runtime_params"]:
        vals[d] = x
for _ in range(3):
    k(**vals)
torch.cuda.synchronize()
print("launched", name, "from", cat_dir, "B H S D", B, H, S, D)
