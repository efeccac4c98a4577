#!/usr/bin/env python3
"""py_torchops.py CATALOG LIBHKRT PYDIR: the part of hkrt.py's torch ops that
needs no torch (CTest rt_torchops), on an emulated gfx942 catalogue. Tensors
are small objects with shape, stride(), dtype, device and data_ptr() over
emulator memory, as torch tensors have them.

- Argument checks: each bad dtype, device, rank, shape, heads ratio, stride,
  layout, LSE and table raises hkrt.ArgError naming the argument.
- Selection: hkrt_select picks the kernel of a problem; a head_dim or a
  causal mode the catalogue lacks says so by parameter.
- Launches: the forward (BSHD and BHSD, padded strides, GQA 4:2 and MQA 3:1,
  Sq != Sk, causal rows with no visible key) and the causal backward run
  through the same argument builders and bound-launch path (_launch) as the
  torch ops, on fresh random inputs, outputs poisoned with NaN, against an
  fp64 reference by relative L2 (< 1e-2; NaN fails); the second launch of a
  shape goes through the bound call with new pointers."""
import ctypes
import math
import random
import struct
import sys

sys.path.insert(0, sys.argv[3])
import hkrt  # noqa: E402

cat = hkrt.Catalog(sys.argv[1], backend="emu", target="gfx942", lib=sys.argv[2])
c = cat.lib.c
c.hkrt_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
c.hkrt_copy_to_device.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
c.hkrt_copy_to_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)


def bf16(x):
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    return (b + 0x7FFF + ((b >> 16) & 1)) >> 16


def f16(w):
    return struct.unpack("<f", struct.pack("<I", w << 16))[0]


class Device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index

    def __str__(self):
        return "%s:%d" % (self.type, self.index) if self.type == "cuda" else self.type

    def __eq__(self, other):
        return str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


class T:
    """A strided tensor over emulator memory (bf16 or fp32 elements)."""

    def __init__(self, shape, dtype="bfloat16", device="cuda", strides=None, fill=None, alloc=True):
        self.shape, self.dtype, self.device = tuple(shape), "torch." + dtype, Device(device)
        if strides is None:
            strides, n = [], 1
            for d in reversed(self.shape):
                strides.insert(0, n)
                n *= d
        self.strides = tuple(strides)
        self.esize = 2 if dtype == "bfloat16" else 4
        self.n = 1 + sum((d - 1) * s for d, s in zip(self.shape, self.strides)) if all(self.shape) else 0
        self.p = ctypes.c_void_p()
        if alloc:
            cat.lib.check(c.hkrt_alloc(cat.dev, max(1, self.n) * self.esize, ctypes.byref(self.p)), "alloc")
            self.put([float("nan")] * self.n if fill is None else fill)

    def stride(self, d=None):
        return self.strides if d is None else self.strides[d]

    def numel(self):
        return math.prod(self.shape)

    def data_ptr(self):
        return self.p.value or 0

    def put(self, vals):
        if self.esize == 2:
            host = (ctypes.c_uint16 * self.n)(*[0x7FC1 if v != v else bf16(v) for v in vals])
        else:
            host = (ctypes.c_float * self.n)(*vals)
        cat.lib.check(c.hkrt_copy_to_device(cat.dev, self.p, host, self.esize * self.n), "upload")

    def raw(self):
        host = (ctypes.c_uint16 if self.esize == 2 else ctypes.c_float) * self.n
        h = host()
        cat.lib.check(c.hkrt_copy_to_host(cat.dev, h, self.p, self.esize * self.n), "download")
        return [f16(w) for w in h] if self.esize == 2 else list(h)

    def off(self, idx):
        return sum(i * s for i, s in zip(idx, self.strides))

    # what hkrt.py's op implementations call on a torch tensor (TorchStandIn below)
    def _dt(self):
        return self.dtype.replace("torch.", "")

    def _like(self, shape, strides):
        t = T(shape, self._dt(), self.device.type, strides=strides, alloc=False)
        t.p = self.p
        return t

    def values(self):
        raw = self.raw()
        return [raw[self.off(i)] for i in iter_index(self.shape)]

    def set_values(self, vals):
        raw = self.raw()
        for i, v in zip(iter_index(self.shape), vals):
            raw[self.off(i)] = v
        self.put(raw)
        return self

    def is_floating_point(self):
        return True

    def fill_(self, v):
        return self.set_values([v] * self.numel())

    def zero_(self):
        return self.fill_(0.0)

    def copy_(self, src):
        return self.set_values(src.values())

    def view(self, shape):
        assert hkrt._is_contiguous(self)
        return self._like(tuple(shape), T(shape, alloc=False).strides)

    def as_strided(self, shape, strides):
        return self._like(tuple(shape), tuple(strides))

    def contiguous(self):
        return self if hkrt._is_contiguous(self) else T(self.shape, self._dt()).set_values(self.values())

    def to(self, dtype):
        name = str(dtype).replace("torch.", "")
        return self if name == self._dt() else T(self.shape, name).set_values(self.values())


class TorchStandIn:
    """The few torch calls hkrt.py's op implementations make, over emulator memory."""
    bfloat16, float32, int32 = "torch.bfloat16", "torch.float32", "torch.int32"

    @staticmethod
    def _shape(shape):
        return (shape,) if isinstance(shape, int) else tuple(shape)

    def empty(self, shape, dtype="torch.float32", device=None):
        return T(self._shape(shape), str(dtype).replace("torch.", ""))

    def empty_strided(self, shape, strides, dtype="torch.float32", device=None):
        return T(self._shape(shape), str(dtype).replace("torch.", ""), strides=tuple(strides))

    def zeros(self, shape, dtype="torch.float32", device=None):
        return self.empty(shape, dtype).zero_()

    def zeros_like(self, t):
        return T(t.shape, t._dt()).zero_()


def expect_error(fn, want, what):
    try:
        fn()
        check(False, "%s: no error (wanted %r)" % (what, want))
    except hkrt.ArgError as e:
        check(want in str(e), "%s: message %r lacks %r" % (what, str(e), want))


# ---- argument checks: each names the argument --------------------------------------------
B, S, H, D = 2, 16, 4, 64
q, k = T((B, S, H, D), alloc=False), T((B, S, 2, D), alloc=False)
shape = hkrt._attn_shape
expect_error(lambda: shape(T((B, S, H, D), "float16", alloc=False), k, k, "bshd", "cuda"), "q: dtype float16",
             "fp16 q")
expect_error(lambda: shape(q, T((B, S, 2, D), device="cpu", alloc=False), k, "bshd", "cuda"), "k: on device cpu",
             "k on the CPU")
expect_error(lambda: shape(q, k, T((B, S, 2, 32), alloc=False), "bshd", None), "v: shape (2, 16, 2, 32), k's is",
             "v of another shape")
expect_error(lambda: shape(T((B, S, D), alloc=False), k, k, "bshd", None), "q: shape (2, 16, 64) is not 4-D",
             "3-D q")
expect_error(lambda: shape(q, T((B + 1, S, 2, D), alloc=False), T((B + 1, S, 2, D), alloc=False), "bshd", None),
             "k: batch 3, q's is 2", "batch mismatch")
expect_error(lambda: shape(q, T((B, S, 3, D), alloc=False), T((B, S, 3, D), alloc=False), "bshd", None),
             "heads ratio: q has 4 heads and k 3", "heads 4:3")
expect_error(lambda: shape(q, T((B, S, 2, 32), alloc=False), T((B, S, 2, 32), alloc=False), "bshd", None),
             "k: head_dim 32, q's is 64", "head_dim mismatch")
expect_error(lambda: shape(T((B, S, H, D), strides=(S * H * D * 2, H * D * 2, D * 2, 2), alloc=False), k, k,
                           "bshd", None), "q: stride 2 along its last dimension", "strided head_dim")
expect_error(lambda: shape(q, k, k, "sbhd", None), "layout: 'sbhd'; allowed: bshd", "unknown layout")
dev2 = T((B, S, 2, D), alloc=False)
dev2.device = Device("cuda", 1)
expect_error(lambda: shape(q, dev2, dev2, "bshd", None), "k: on device cuda:1, q on cuda:0", "two devices")
expect_error(lambda: shape(q, dev2, dev2, "bshd", "cuda"), "k: on device cuda:1; libhkrt launches on the process's "
             "GPU 0", "GPU 1")
check(shape(T((B, H, S, D), alloc=False), T((B, 2, 40, D), alloc=False), T((B, 2, 40, D), alloc=False), "bhsd",
            None) == dict(batch=B, seqlen_q=S, seqlen_k=40, heads_q=H, heads_k=2, head_dim=D), "bhsd dimensions")
expect_error(lambda: hkrt._gemm_shape(T((8, 16), alloc=False), T((8, 24), alloc=False), "nt", None),
             "b: shape (8, 24); layout nt needs K = 16", "gemm K mismatch")
expect_error(lambda: hkrt._gemm_shape(T((8, 16), alloc=False), T((8, 16), alloc=False), "tn", None), "layout: 'tn'",
             "gemm layout")
expect_error(lambda: hkrt._norm_shape(T((4, 64), alloc=False), T((32,), alloc=False), None, None, None),
             "weight: 32 elements, x's hidden (last dimension) is 64", "norm weight size")
expect_error(lambda: hkrt._norm_shape(T((4, 64), strides=(128, 1), alloc=False), T((64,), alloc=False), None, None,
                                      None), "x: strides (128, 1) are not contiguous", "norm strided rows")
expect_error(lambda: hkrt._norm_shape(T((4, 64), alloc=False), T((64,), "float16", alloc=False), None, None, None),
             "weight: dtype float16", "norm fp16 weight")
expect_error(lambda: hkrt._rope_shape(q, k, T((S, D // 2), "float32", alloc=False), None, 0, None),
             "cos: given without sin", "rope one table")
expect_error(lambda: hkrt._rope_shape(q, k, T((S, D // 2), "float32", alloc=False),
                                      T((S, D // 2), "float32", alloc=False), 3, None),
             "cos: shape (16, 32); needs at least 19 positions", "rope short table")

# ---- selection: hkrt_select, and the parameter no kernel serves --------------------------
dims = dict(batch=1, seqlen_q=5, seqlen_k=7, heads_q=2, heads_k=1, head_dim=64)
check(hkrt._attn_select(cat, "attn_fwd", dims, True).name == "tq_attn_c1", "causal forward kernel")
check(hkrt._attn_select(cat, "attn_fwd", dims, False).name == "tq_attn_c0", "non-causal forward kernel")
expect_error(lambda: hkrt._attn_select(cat, "attn_fwd", dict(dims, head_dim=128), True), "head_dim",
             "head_dim 128 served by none")
expect_error(lambda: hkrt._attn_select(cat, "attn_bwd", dims, False), "causal", "non-causal backward served by none")
try:
    hkrt._catalog("")
    check(False, "no default catalogue: no error")
except hkrt.HkrtError as e:
    check("set_default_catalog" in str(e), "no default catalogue: message %r" % str(e))


# ---- launches through the ops' argument builders, against fp64 ------------------------------
def rand_tensor(shape, layout_strides):
    t = T(shape, strides=layout_strides, fill=None)  # layout_strides None: contiguous
    vals = [float("nan")] * t.n
    for idx in iter_index(shape):
        vals[t.off(idx)] = f16(bf16(random.uniform(-1, 1)))
    t.put(vals)
    return t


def iter_index(shape):
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in iter_index(shape[1:]):
            yield (i,) + rest


def at(t, raw, layout, b, s, h, d):
    idx = (b, s, h, d) if layout == "bshd" else (b, h, s, d)
    return raw[t.off(idx)]


def padded(shape, pad):
    """Row-major strides of shape with pad extra elements after each row of the last two dimensions."""
    s3 = 1
    s2 = shape[3] + pad
    s1 = s2 * shape[2] + pad
    return (s1 * shape[1], s1, s2, s3)


def ref_attention(q, k, v, qr, kr, vr, dims, causal, scale, layout):
    B, Sq, Sk, Hq, Hk, D = (dims[n] for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k", "head_dim"))
    o, lse = {}, {}
    for b in range(B):
        for h in range(Hq):
            hk = h // (Hq // Hk)
            for i in range(Sq):
                vis = [j for j in range(Sk) if not causal or j <= i + Sk - Sq]
                sc = [scale * sum(at(q, qr, layout, b, i, h, d) * at(k, kr, layout, b, j, hk, d) for d in range(D))
                      for j in vis]
                if not vis:
                    lse[b, h, i] = float("-inf")
                    for d in range(D):
                        o[b, i, h, d] = 0.0
                    continue
                m = max(sc)
                den = sum(math.exp(x - m) for x in sc)
                lse[b, h, i] = m + math.log(den)
                for d in range(D):
                    o[b, i, h, d] = sum(math.exp(x - m) / den * at(v, vr, layout, b, j, hk, d)
                                        for x, j in zip(sc, vis))
    return o, lse


def rel_l2(pairs):
    num = den = 0.0
    for got, ref in pairs:
        if got != got or abs(got) == float("inf"):
            return float("inf")
        num += (got - ref) ** 2
        den += ref * ref
    return math.sqrt(num / den) if den else (0.0 if num == 0 else float("inf"))


def forward_case(layout, B, Sq, Sk, Hq, Hk, causal, pad):
    D = 64
    lq = (B, Sq, Hq, D) if layout == "bshd" else (B, Hq, Sq, D)
    lk = (B, Sk, Hk, D) if layout == "bshd" else (B, Hk, Sk, D)
    q, k, v = rand_tensor(lq, padded(lq, pad)), rand_tensor(lk, padded(lk, pad)), rand_tensor(lk, padded(lk, 0))
    dims = hkrt._attn_shape(q, k, v, layout, None)
    scale = D ** -0.5
    kern = hkrt._attn_select(cat, "attn_fwd", dims, causal)
    qr, kr, vr = q.raw(), k.raw(), v.raw()
    ro, rl = ref_attention(q, k, v, qr, kr, vr, dims, causal, scale, layout)
    res = None
    for call in range(2):  # the second launch of the shape: the bound call, new pointers
        o = T(lq)
        lse = T((B, Hq, Sq), "float32")
        hkrt._launch(kern, hkrt._attn_fwd_args(q, k, v, o, lse, scale, dims, layout))
        cat.synchronize()
        orw, lrw = o.raw(), lse.raw()
        eo = rel_l2((at(o, orw, layout, b, i, h, d), ro[b, i, h, d]) for (b, i, h, d) in ro)
        fin = [(lrw[lse.off((b, h, i))], rl[b, h, i]) for (b, h, i) in rl if rl[b, h, i] != float("-inf")]
        el = rel_l2(fin)
        inf_ok = all(lrw[lse.off((b, h, i))] == float("-inf") for (b, h, i) in rl if rl[b, h, i] == float("-inf"))
        what = "attn_fwd %s B%d Sq%d Sk%d %d:%d causal %d pad %d, launch %d" % (layout, B, Sq, Sk, Hq, Hk, causal,
                                                                             pad, call)
        check(eo < 1e-2 and el < 1e-2 and inf_ok, "%s: O %.3e LSE %.3e, -inf rows %s" % (what, eo, el, inf_ok))
        print("%s: O rel L2 %.2e, LSE %.2e" % (what, eo, el))
        res = (q, k, v, o, lse, dims, scale, qr, kr, vr, orw, lrw)
    if pad % 8 == 0:  # strides a tensor map takes: the second launch was a bound one
        check(len(kern.bound_cache()) >= 1, "attn_fwd: no bound launch cached")
    return res


def backward_case(layout, B, Sq, Sk, Hq, Hk, pad):
    q, k, v, o, lse, dims, scale, qr, kr, vr, orw, lrw = forward_case(layout, B, Sq, Sk, Hq, Hk, True, pad)
    D = dims["head_dim"]
    lq = q.shape
    do = rand_tensor(lq, padded(lq, 1))
    dor = do.raw()
    kern = hkrt._attn_select(cat, "attn_bwd", dims, True)
    dq, dk, dv = T(q.shape, strides=q.strides), T(k.shape, strides=k.strides), T(v.shape, strides=v.strides)
    hkrt._launch(kern, hkrt._attn_bwd_args(q, k, v, o, do, lse, dq, dk, dv, scale, dims, layout))
    cat.synchronize()
    # fp64 reference from the same Q, K, V, O, dO and LSE
    rq, rk, rv = {}, {}, {}
    for b in range(B):
        for h in range(Hq):
            hk = h // (Hq // Hk)
            for i in range(Sq):
                L = lrw[lse.off((b, h, i))]
                qi = [at(q, qr, layout, b, i, h, d) for d in range(D)]
                doi = [at(do, dor, layout, b, i, h, d) for d in range(D)]
                Di = sum(doi[d] * at(o, orw, layout, b, i, h, d) for d in range(D))
                for d in range(D):
                    rq.setdefault((b, i, h, d), 0.0)
                for j in range(Sk):
                    for d in range(D):
                        rk.setdefault((b, j, hk, d), 0.0)
                        rv.setdefault((b, j, hk, d), 0.0)
                    if L == float("-inf") or j > i + Sk - Sq:
                        continue
                    kj = [at(k, kr, layout, b, j, hk, d) for d in range(D)]
                    vj = [at(v, vr, layout, b, j, hk, d) for d in range(D)]
                    p = math.exp(scale * sum(a * b_ for a, b_ in zip(qi, kj)) - L)
                    ds = p * (sum(a * b_ for a, b_ in zip(doi, vj)) - Di)
                    for d in range(D):
                        rq[b, i, h, d] += scale * ds * kj[d]
                        rk[b, j, hk, d] += scale * ds * qi[d]
                        rv[b, j, hk, d] += p * doi[d]
    for name, t, ref in (("dQ", dq, rq), ("dK", dk, rk), ("dV", dv, rv)):
        raw = t.raw()
        e = rel_l2((at(t, raw, layout, *key), val) for key, val in ref.items())
        what = "attn_bwd %s B%d Sq%d Sk%d %d:%d pad %d %s" % (layout, B, Sq, Sk, Hq, Hk, pad, name)
        check(e < 1e-2, "%s: rel L2 %.3e" % (what, e))
        print("%s: rel L2 %.2e" % (what, e))


random.seed()
forward_case("bshd", 2, 17, 23, 4, 2, True, 3)    # GQA, Sq < Sk, padded rows
forward_case("bhsd", 1, 21, 13, 3, 1, True, 0)    # MQA, Sq > Sk: causal rows with no visible key
forward_case("bhsd", 1, 9, 30, 2, 2, False, 5)
backward_case("bshd", 1, 19, 23, 4, 2, 2)
backward_case("bhsd", 1, 20, 11, 2, 1, 0)          # rows with no visible key: dQ 0
# ---- the ops' own implementations (hkrt._attn_fwd_impl and friends) over the torch stand-in ----
hkrt._TORCH[:] = [TorchStandIn()]
hkrt._OPEN["emu"] = cat
hkrt._POISON = True  # every output NaN before its launch


def impl_attention(layout, B, Sq, Sk, Hq, Hk, causal):
    D = 64
    lq = (B, Sq, Hq, D) if layout == "bshd" else (B, Hq, Sq, D)
    lk = (B, Sk, Hk, D) if layout == "bshd" else (B, Hk, Sk, D)
    q, k, v = rand_tensor(lq, None), rand_tensor(lk, None), rand_tensor(lk, None)
    dims = hkrt._attn_shape(q, k, v, layout, None)
    scale = D ** -0.5
    qr, kr, vr = q.raw(), k.raw(), v.raw()
    ro, rl = ref_attention(q, k, v, qr, kr, vr, dims, causal, scale, layout)
    plans = len(hkrt._FWD_PLANS)
    for call in range(2):  # the second call: the signature seen before (no checks, no selection)
        o, lse = hkrt._attn_fwd_impl(q, k, v, causal, scale, layout, "emu")
        cat.synchronize()
        orw = o.raw()
        eo = rel_l2((at(o, orw, layout, b, i, h, d), ro[b, i, h, d]) for (b, i, h, d) in ro)
        check(eo < 1e-2, "_attn_fwd_impl %s call %d: O rel L2 %.3e" % (layout, call, eo))
        print("_attn_fwd_impl %s B%d Sq%d Sk%d %d:%d causal %d, call %d: O rel L2 %.2e" % (
            layout, B, Sq, Sk, Hq, Hk, causal, call, eo))
    check(len(hkrt._FWD_PLANS) == plans + 1, "_attn_fwd_impl: the shape's plan was not kept")
    if not causal:
        return
    do = rand_tensor(o.shape, None)
    dq, dk, dv = hkrt._attn_bwd_impl(do, q, k, v, o, lse, True, scale, layout, "emu")
    cat.synchronize()
    # the reference: the launch-argument path checked above (backward_case), here only agreement with it
    dq2, dk2, dv2 = T(q.shape, strides=q.strides), T(k.shape, strides=k.strides), T(v.shape, strides=v.strides)
    kern = hkrt._attn_select(cat, "attn_bwd", dims, True)
    hkrt._launch(kern, hkrt._attn_bwd_args(q, k, v, o, do, lse, dq2, dk2, dv2, scale, dims, layout))
    cat.synchronize()
    for name, a, b_ in (("dQ", dq, dq2), ("dK", dk, dk2), ("dV", dv, dv2)):
        va, vb = a.values(), b_.values()
        check(va == vb and all(x == x for x in va), "_attn_bwd_impl %s %s: not the launch path's bits" % (layout, name))
    print("_attn_bwd_impl %s: dQ, dK, dV the bits of the checked launch path" % layout)


def impl_norm(R, H):
    x, r = rand_tensor((R, H), None), rand_tensor((R, H), None)
    w = T((H,), fill=[f16(bf16(1 + 0.2 * random.uniform(-1, 1))) for _ in range(H)])
    y, s_, rstd = hkrt._rms_norm_impl(x, w, r, 1e-5, "emu")
    cat.synchronize()
    xs, rs_, ws = x.values(), r.values(), w.values()
    sv = [f16(bf16(a + b_)) for a, b_ in zip(xs, rs_)]  # s is written (and normalized) in bf16
    ref_y, rr = [], []
    for i in range(R):
        row = sv[i * H:(i + 1) * H]
        inv = 1 / math.sqrt(sum(a * a for a in row) / H + 1e-5)
        rr.append(inv)
        ref_y += [a * inv * ws[j] for j, a in enumerate(row)]
    ey, es = rel_l2(zip(y.values(), ref_y)), rel_l2(zip(s_.values(), sv))
    check(ey < 1e-2 and es < 1e-2, "_rms_norm_impl %dx%d: y %.3e, s %.3e" % (R, H, ey, es))
    dy, ds = rand_tensor((R, H), None), rand_tensor((R, H), None)
    dx, dw, db = hkrt._norm_bwd_impl(dy, ds, s_, w, rstd, None, "rmsnorm", True, 1e-5, "emu")
    cat.synchronize()
    dyv, dsv = dy.values(), ds.values()
    ref_dx, ref_dw = [], [0.0] * H
    for i in range(R):
        row, g = sv[i * H:(i + 1) * H], [dyv[i * H + j] * ws[j] for j in range(H)]
        inv = rr[i]
        dot = sum(a * b_ for a, b_ in zip(g, row)) / H
        ref_dx += [inv * g[j] - row[j] * inv ** 3 * dot + dsv[i * H + j] for j in range(H)]
        for j in range(H):
            ref_dw[j] += dyv[i * H + j] * row[j] * inv
    ex, ew = rel_l2(zip(dx.values(), ref_dx)), rel_l2(zip(dw.values(), ref_dw))
    check(ex < 1e-2 and ew < 1e-2 and db.numel() == 0, "_norm_bwd_impl %dx%d: dx %.3e, dweight %.3e" % (R, H, ex, ew))
    print("_rms_norm_impl %dx%d: y %.2e s %.2e; _norm_bwd_impl: dx %.2e dweight %.2e" % (R, H, ey, es, ex, ew))


def impl_gemm(M, N, K):
    a, b = rand_tensor((M, K), None), rand_tensor((N, K), None)
    c_ = hkrt._gemm_impl(a, b, "nt", "emu")
    cat.synchronize()
    av, bv = a.values(), b.values()
    ref = [sum(av[i * K + q] * bv[j * K + q] for q in range(K)) for i in range(M) for j in range(N)]
    e = rel_l2(zip(c_.values(), ref))
    check(e < 1e-2, "_gemm_impl M%d N%d K%d: %.3e" % (M, N, K, e))
    print("_gemm_impl M%d N%d K%d: rel L2 %.2e" % (M, N, K, e))


impl_attention("bshd", 1, 19, 23, 4, 2, True)
impl_attention("bhsd", 2, 9, 14, 2, 1, False)
impl_norm(5, 72)
impl_gemm(37, 29, 45)
print("rt_torchops: %d failed" % failures)
sys.exit(1 if failures else 0)
