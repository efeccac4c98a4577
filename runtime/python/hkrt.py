"""hkrt: load an hkgen catalogue and launch its kernels from Python.

A thin ctypes layer over libhkrt (runtime/include/hkrt.h): the C library
reads the manifest, checks and packs the arguments (tensor maps included),
computes the grid and launches. Tensors are torch tensors (data_ptr is
passed); kernels run on torch's current stream. Python is never needed to
build or run hkgen itself.

    cat = hkrt.Catalog("catalog", backend="cuda")
    k = cat.kernel("llama3_8b_qkv", "sm_90a")
    k(A=a, B=b, C=c, lda=4096, ldb=4096, ldc=6144, M=m)   # grid from the manifest
    run = k.bind(A=a, B=b, C=c, lda=4096, ldb=4096, ldc=6144, M=m)  # checked and packed once
    run(A=a2, C=c2)                                        # patches pointers, launches
    k = cat.select("gemm", layout="nt", M=m, N=6144, K=4096)  # hkrt_select: the best fit

torch ops (docs/TORCH.md). One op namespace, torch.ops.hkrt: attn_fwd,
attn_bwd (attn_fwd's autograd formula), gemm, rms_norm, layer_norm, norm_bwd
(the norms' autograd formula) and rope,
each a torch.library custom op with a fake implementation, so
torch.compile(fullgraph=True) keeps them in its graph. Each takes its
catalogue as its last argument, a string: a catalogue folder, or "" for the
module's default, which set_default_catalog(path) names; a catalogue is
opened once per process, and each call picks its kernel with hkrt_select
(a launch of a shape seen before only patches pointers). The Python faces:

    hkrt.set_default_catalog("build/torchcat")
    o = hkrt.attention(q, k, v, causal=True)   # [B, S, H, D] bf16, GQA; autograd through attn_bwd
    c = hkrt.gemm(a, w)                        # a w^T
    y = hkrt.rms_norm(x, weight); q, k = hkrt.rope(q, k, cos, sin)

A tensor no kernel can take (dtype, device, shape, heads ratio, strides) or a
problem the catalogue has no kernel for raises ArgError naming the argument
or the parameter, before anything launches. hkrt imports torch only for
these ops (at import when torch is loaded already, else at first use).
"""
import ctypes
import json
import os
import re
import sys

__version__ = "0.1.0"  # hkgen's VERSION (Makefile); tests/pipeline/install.sh checks they agree

_BACKENDS = {"emu": 1, "hip": 2, "cuda": 3}


def _find_lib():
    env = os.environ.get("HKRT_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    # an installed prefix (PREFIX/lib/hkgen/python/hkrt.py beside PREFIX/lib),
    # then a build tree (runtime/python/hkrt.py, build/libhkrt.so)
    for cand in (os.path.join(here, "..", "..", "libhkrt.so.0"),
                 os.path.join(here, "..", "..", "build", "libhkrt.so")):
        if os.path.exists(cand):
            return cand
    return "libhkrt.so.0"


class HkrtError(RuntimeError):
    pass


class _Val(ctypes.Union):
    _fields_ = [("p", ctypes.c_void_p), ("i", ctypes.c_longlong), ("f", ctypes.c_double)]


class _Arg(ctypes.Structure):  # hkrt_arg
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int), ("v", _Val)]


_PTR, _INT, _FLOAT = 1, 2, 3


class _Param(ctypes.Structure):  # hkrt_param
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _Problem(ctypes.Structure):  # hkrt_problem
    _fields_ = [("op", ctypes.c_char_p), ("target", ctypes.c_char_p), ("params", ctypes.POINTER(_Param)),
                ("nparams", ctypes.c_size_t)]


def _param_text(v):
    """A problem parameter as hkrt_select reads it: booleans true/false, the rest as text."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _args(values):
    """hkrt_arg array for keyword values: tensors (data_ptr) are pointers,
    Python/numpy integers integers, floats floats."""
    arr = (_Arg * max(1, len(values)))()
    for a, (name, v) in zip(arr, values.items()):
        a.name = name.encode()
        if hasattr(v, "data_ptr"):
            a.kind, a.v.p = _PTR, v.data_ptr()
        elif isinstance(v, float):
            a.kind, a.v.f = _FLOAT, v
        elif hasattr(v, "__index__"):
            a.kind, a.v.i = _INT, v.__index__()
        else:
            raise HkrtError("argument %s: %r is neither a tensor nor a number" % (name, v))
    return arr


class _Lib:
    def __init__(self, path):
        self.c = ctypes.CDLL(path)
        c = self.c
        c.hkrt_error.restype = ctypes.c_char_p
        c.hkrt_device_open.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        c.hkrt_module_load.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        c.hkrt_module_function.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        c.hkrt_launch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                                  ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        c.hkrt_launch_ex.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                                     ctypes.c_uint, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        c.hkrt_synchronize.argtypes = [ctypes.c_void_p]
        c.hkrt_catalog_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        c.hkrt_catalog_find.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                        ctypes.POINTER(ctypes.c_void_p)]
        c.hkrt_kernel_args.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Arg), ctypes.c_size_t,
                                       ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                       ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
        c.hkrt_kernel_function.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        c.hkrt_kernel_set_pointer.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                              ctypes.c_void_p]
        c.hkrt_kernel_pointer_slot.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                                               ctypes.POINTER(ctypes.c_size_t)]
        c.hkrt_kernel_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Arg), ctypes.c_size_t,
                                         ctypes.c_void_p]
        c.hkrt_select.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Problem), ctypes.POINTER(ctypes.c_void_p)]
        c.hkrt_kernel_name.argtypes = [ctypes.c_void_p]
        c.hkrt_kernel_name.restype = ctypes.c_char_p
        c.hkrt_kernel_target.argtypes = [ctypes.c_void_p]
        c.hkrt_kernel_target.restype = ctypes.c_char_p

    def check(self, status, what):
        if status != 0:
            raise HkrtError("%s: %s" % (what, self.c.hkrt_error().decode()))


class Kernel:
    def __init__(self, cat, entry):
        self.cat, self.entry = cat, entry
        self.name = entry["name"]
        self.size = entry["kernarg"]["size"]
        self.dynamic_lds = int(entry.get("dynamic_lds", 0))  # bytes of dynamic shared memory per launch
        self._k = ctypes.c_void_p()
        self.cat.lib.check(self.cat.lib.c.hkrt_catalog_find(self.cat.cat, self.name.encode(),
                                                            entry["target"].encode(), ctypes.byref(self._k)),
                           "kernel " + self.name)
        self._fn = None
        self._bound = {}  # hkrt's torch ops: scalar arguments -> Bound (_launch)
        self._names = None

    def arg_names(self):
        """The arguments a caller gives (tensor maps are libhkrt's)."""
        if self._names is None:
            self._names = frozenset(a["name"] for a in self.entry["kernarg"]["args"] if "tmap" not in a)
        return self._names

    def bound_cache(self):
        return self._bound

    def _function(self):
        if self._fn is None:  # for callers that launch pre-packed arguments themselves
            # libhkrt loads the module once, after checking its sha256 against the manifest
            fn = ctypes.c_void_p()
            self.cat.lib.check(self.cat.lib.c.hkrt_kernel_function(self._k, ctypes.byref(fn)),
                               "loading " + self.entry["file"])
            self._fn = fn
        return self._fn

    def _pack(self, values):
        buf = ctypes.create_string_buffer(max(1, self.size))
        size = ctypes.c_size_t()
        grid, block = (ctypes.c_uint * 3)(), (ctypes.c_uint * 3)()
        self.cat.lib.check(self.cat.lib.c.hkrt_kernel_args(self._k, None, _args(values), len(values), buf,
                                                           len(buf), ctypes.byref(size), grid, block),
                           "kernel %s" % self.name)
        return buf.raw[:size.value], list(grid), list(block)

    def pack(self, values):
        """The kernel argument bytes (checked, tensor maps built)."""
        return self._pack(values)[0]

    def grid(self, values):
        return self._pack(values)[1]

    def bind(self, **values):
        """A launch with every argument checked and packed now: the returned
        Bound only patches the pointers it is given and launches (see Bound)."""
        return Bound(self, values)

    def __call__(self, stream=None, **values):
        stream = _stream(self.cat, stream)
        self.cat.lib.check(self.cat.lib.c.hkrt_kernel_launch(self._k, None, _args(values), len(values),
                                                             ctypes.c_void_p(stream or 0)),
                           "launching " + self.name)


def _stream(cat, stream):
    """torch's current CUDA stream when none is given (CUDA backend only)."""
    if stream is None and cat.backend == "cuda":
        try:
            import torch
            return torch.cuda.current_stream().cuda_stream
        except ImportError:
            return None
    return stream


def _stream_getter(cat):
    """A function giving the stream to launch on when none is given: torch's
    current CUDA stream as an integer (its raw-stream call where torch has
    it: a bound launch should cost little more than the C call), or 0."""
    if cat.backend != "cuda":
        return lambda: 0
    try:
        import torch
    except ImportError:
        return lambda: 0
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        dev = torch.cuda.current_device()  # the device current at bind
        return lambda: raw(dev)
    return lambda: torch.cuda.current_stream().cuda_stream


class Bound:
    """One kernel at one shape, packed once: k.bind(A=a, B=b, C=c, M=4096, ...)
    runs libhkrt's checks and packing (launch rules, grid, tensor maps) a
    single time. A call b(A=a2, C=c2) patches only the pointers it names,
    checking each for NULL and alignment, and launches the packed bytes
    (hkrt_launch_ex); integers and floats stay as bound (bind again for
    another shape). A pointer that a tensor map holds too (sm_90a) goes
    through libhkrt's hkrt_kernel_set_pointer, which gives the map the new
    address."""

    def __init__(self, kernel, values):
        self.k, self.values = kernel, dict(values)
        raw, grid, block = kernel._pack(self.values)
        self.buf = ctypes.create_string_buffer(raw, max(1, len(raw)))
        self.size = len(raw)
        self.grid, self.block = (ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block)
        self.fn = kernel._function()
        # name -> (the 8 bytes of the pointer in the packed buffer, alignment), from libhkrt
        self.ptrs = {}
        off, align = ctypes.c_size_t(), ctypes.c_size_t()
        for a in kernel.entry["kernarg"]["args"]:
            if kernel.cat.lib.c.hkrt_kernel_pointer_slot(kernel._k, a["name"].encode(), ctypes.byref(off),
                                                         ctypes.byref(align)) == 0:
                self.ptrs[a["name"]] = (ctypes.c_uint64.from_buffer(self.buf, off.value), align.value)
        # pointers a tensor map holds too (sm_90a): set through libhkrt, which gives the map the address
        self.mapped = {a["tmap"]["tensor"] for a in kernel.entry["kernarg"]["args"] if "tmap" in a}
        self.set_pointer = kernel.cat.lib.c.hkrt_kernel_set_pointer
        self.stream_of = _stream_getter(kernel.cat)
        self.launch = kernel.cat.lib.c.hkrt_launch_ex
        self.lds = kernel.dynamic_lds

    def __call__(self, stream=None, **ptrs):
        for name, v in ptrs.items():
            slot = self.ptrs.get(name)
            p = v.data_ptr() if hasattr(v, "data_ptr") else None
            if slot is None:
                if name in self.mapped and p is not None:
                    self.k.cat.lib.check(self.set_pointer(self.k._k, self.buf, self.size, name.encode(), p),
                                         "kernel %s" % self.k.name)
                    self.values[name] = v
                    continue
                raise HkrtError("kernel %s: argument %s is not a pointer this launch can change "
                                "(bind again to change it)" % (self.k.name, name))
            if not p or p % slot[1]:
                raise HkrtError("kernel %s: argument %s: %s pointer (it must be a non-NULL address "
                                "aligned to %d bytes)" % (self.k.name, name, "NULL" if not p else "misaligned",
                                                         slot[1]))
            slot[0].value = p
            self.values[name] = v
        st = self.launch(self.fn, self.grid, self.block, self.lds, self.buf, self.size,
                         stream if stream is not None else self.stream_of())
        if st:
            self.k.cat.lib.check(st, "launching " + self.k.name)


class Catalog:
    def __init__(self, path, backend="cuda", target=None, lib=None):
        self.dir = path
        self.key = _key_of(path)  # what the torch ops' `catalog` argument may name it by
        with open(os.path.join(path, "manifest.json")) as f:
            self.manifest = json.load(f)
        self.backend = backend
        self.lib = _Lib(lib or _find_lib())
        self.dev = ctypes.c_void_p()
        self.lib.check(self.lib.c.hkrt_device_open(_BACKENDS[backend], (target or "").encode() or None,
                                                   ctypes.byref(self.dev)), "opening the %s device" % backend)
        self.cat = ctypes.c_void_p()
        self.lib.check(self.lib.c.hkrt_catalog_open(self.dev, path.encode(), ctypes.byref(self.cat)),
                       "opening the catalogue " + path)
        self._kernels = {}
        self._selected = {}  # (op, target, params) -> the Kernel hkrt_select chose

    def kernel(self, name, target):
        key = (name, target)
        if key not in self._kernels:
            for e in self.manifest["kernels"]:
                if e["name"] == name and e["target"] == target:
                    self._kernels[key] = Kernel(self, e)
                    break
            else:
                raise HkrtError("no kernel %s for %s in %s" % (name, target, self.dir))
        return self._kernels[key]

    def select(self, op, target=None, **params):
        """The kernel hkrt_select picks for a problem: op ("attn_fwd", "gemm",
        ...) and parameters by name (numbers, text, booleans); target None is
        the device's. HkrtError with libhkrt's reasons (the nearest kernels and
        what does not fit) when none fits."""
        key = (op, target, tuple(params.items()))
        k = self._selected.get(key)
        if k is not None:
            return k
        if len(self._selected) >= 4096:
            self._selected.clear()
        k = self._selected[key] = self._select(op, target, params)
        return k

    def _select(self, op, target, params):
        pairs = [(n.encode(), _param_text(v).encode()) for n, v in params.items()]
        arr = (_Param * max(1, len(pairs)))(*pairs)
        pb = _Problem(op.encode(), target.encode() if target else None, arr, len(pairs))
        k = ctypes.c_void_p()
        self.lib.check(self.lib.c.hkrt_select(self.cat, ctypes.byref(pb), ctypes.byref(k)),
                       "catalogue " + self.dir)
        return self.kernel(self.lib.c.hkrt_kernel_name(k).decode(), self.lib.c.hkrt_kernel_target(k).decode())

    def kernels(self, target=None):
        return [self.kernel(e["name"], e["target"]) for e in self.manifest["kernels"]
                if target is None or e["target"] == target]

    def synchronize(self):
        self.lib.check(self.lib.c.hkrt_synchronize(self.dev), "synchronize")


# ---- torch: hkrt.attention and the torch.library ops ---------------------------------------
#
# The ops take their catalogue as a string (a path, or "" for the default
# that set_default_catalog names), so they are plain torch.library custom ops
# that torch.compile keeps in its graph; each run opens the catalogue once
# (_catalog) and picks its kernel with hkrt_select. Checks of the tensors
# (_attn_shape and friends) read only shape, stride, dtype and device, so they
# are tested without torch (tests/rt/py_torchops.py).

class ArgError(HkrtError, ValueError):
    """A tensor argument no kernel can take (dtype, device, shape, strides),
    raised before anything launches; the message names the argument."""


# HKRT_POISON=1: every output of the torch ops is filled with NaN before its
# launch, so that a test sees any element a kernel did not write
_POISON = os.environ.get("HKRT_POISON", "") not in ("", "0")
_OPEN = {}        # catalogue key (its folder's real path) -> Catalog
_DEFAULT = [""]   # the key set_default_catalog gave ("" until then)
_TORCH = []       # [torch] once the ops are registered


def _key_of(path):
    return os.path.realpath(path)


def set_default_catalog(path, backend="cuda", lib=None):
    """Makes the catalogue at path (a folder hkgen build wrote) the one the
    ops and hkrt.attention use when not given catalog=, and registers the
    torch.library ops (this imports torch). Returns the Catalog."""
    cat = _catalog(path, backend, lib)
    _DEFAULT[0] = cat.key
    _torch()
    return cat


def _catalog(key, backend="cuda", lib=None):
    """The open catalogue of a key: "" is the default's, else a folder's path."""
    if isinstance(key, Catalog):
        _OPEN.setdefault(key.key, key)
        return key
    if key == "":
        if not _DEFAULT[0]:
            raise HkrtError("no catalogue: call hkrt.set_default_catalog(PATH) first, or pass catalog=")
        key = _DEFAULT[0]
    cat = _OPEN.get(key)  # a key as given before (the default's is its real path)
    if cat is not None:
        return cat
    real = _key_of(key)
    cat = _OPEN.get(real)
    if cat is None:
        cat = _OPEN[real] = Catalog(key, backend=backend, lib=lib)
    _OPEN[key] = cat
    return cat


def _catalog_key(catalog):
    """What an op's `catalog` string holds for catalog=None, a path or a Catalog."""
    if catalog is None:
        return ""
    if isinstance(catalog, Catalog):
        _OPEN.setdefault(catalog.key, catalog)
        return catalog.key
    return str(catalog)


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _device_type(cat):
    """The torch device type a catalogue's tensors live on (None: the emulator, any)."""
    return {"cuda": "cuda", "hip": "cuda"}.get(cat.backend)


def _check_tensor(name, t, ndim, dtypes, device, what):
    """dtype, device and rank of one tensor argument, by name."""
    if not hasattr(t, "shape") or not hasattr(t, "stride"):
        raise ArgError("%s: %r is not a tensor" % (name, type(t).__name__))
    if len(t.shape) != ndim:
        raise ArgError("%s: shape %s is not %d-D %s" % (name, tuple(t.shape), ndim, what))
    if _dtype(t) not in dtypes:
        raise ArgError("%s: dtype %s is not served (the kernels take %s)" % (name, _dtype(t), " or ".join(dtypes)))
    if device is not None and t.device.type != device:
        raise ArgError("%s: on device %s; the catalogue's kernels run on %s tensors" % (name, t.device, device))
    if device == "cuda" and t.device.index not in (0, None):
        raise ArgError("%s: on device %s; libhkrt launches on the process's GPU 0 (cuda:0) only: choose the GPU "
                       "with CUDA_VISIBLE_DEVICES" % (name, t.device))


def _check_same_device(named):
    first = named[0]
    for name, t in named[1:]:
        if str(t.device) != str(first[1].device):
            raise ArgError("%s: on device %s, %s on %s; all tensors must be on one device"
                           % (name, t.device, first[0], first[1].device))


def _check_inner(name, t):
    """The last dimension contiguous: every kernel reads rows of elements."""
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ArgError("%s: stride %d along its last dimension; the kernels need it contiguous (stride 1): "
                       "pass %s.contiguous()" % (name, t.stride(-1), name))


def _check_contiguous(name, t):
    if not _is_contiguous(t):
        raise ArgError("%s: strides %s are not contiguous rows (shape %s); pass %s.contiguous()"
                       % (name, tuple(t.stride()), tuple(t.shape), name))


def _is_contiguous(t):
    want = 1
    for n, st in zip(reversed(tuple(t.shape)), reversed(tuple(t.stride()))):
        if n != 1 and st != want:
            return False
        want *= n
    return True


def _is_dense(t):
    """Non-overlapping and dense in some order of its dimensions (then a
    tensor of the same strides needs no more memory than its elements)."""
    want = 1
    for st, n in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1):
        if st != want:
            return False
        want *= n
    return True


# dims of (batch, seq, heads) in a 4-D attention tensor; head_dim is last
_LAYOUTS = {"bshd": (0, 1, 2), "bhsd": (0, 2, 1)}
_LAYOUT_TEXT = {"bshd": "[batch, seq, heads, head_dim]", "bhsd": "[batch, heads, seq, head_dim]"}


def _attn_layout(layout):
    if layout not in _LAYOUTS:
        raise ArgError("layout: %r; allowed: bshd %s, bhsd %s" % (layout, _LAYOUT_TEXT["bshd"], _LAYOUT_TEXT["bhsd"]))
    return _LAYOUTS[layout]


def _attn_dims(t, layout):
    ib, is_, ih = _LAYOUTS[layout]
    return t.shape[ib], t.shape[is_], t.shape[ih], t.shape[3]


def _attn_strides(prefix, t, layout):
    ib, is_, ih = _LAYOUTS[layout]
    return {prefix + "_stride_b": t.stride(ib), prefix + "_stride_s": t.stride(is_), prefix + "_stride_h": t.stride(ih)}


def _attn_shape(q, k, v, layout, device):
    """Checks q, k, v of one attention problem (dtype, device, shapes, heads
    ratio, strides), each error naming the argument; returns the problem's
    dimensions (batch, seqlen_q, seqlen_k, heads_q, heads_k, head_dim)."""
    _attn_layout(layout)
    what = "%s (layout %s)" % (_LAYOUT_TEXT[layout], layout)
    named = (("q", q), ("k", k), ("v", v))
    for name, t in named:
        _check_tensor(name, t, 4, ("bfloat16",), device, what)
    _check_same_device(named)
    B, Sq, Hq, D = _attn_dims(q, layout)
    Bk, Sk, Hk, Dk = _attn_dims(k, layout)
    if Bk != B:
        raise ArgError("k: batch %d, q's is %d" % (Bk, B))
    if Dk != D:
        raise ArgError("k: head_dim %d, q's is %d (one head_dim for q, k and v)" % (Dk, D))
    if tuple(v.shape) != tuple(k.shape):
        raise ArgError("v: shape %s, k's is %s (v has k's shape)" % (tuple(v.shape), tuple(k.shape)))
    if Hk < 1 and Hq > 0:
        raise ArgError("k: 0 heads")
    if Hk and Hq % Hk:
        raise ArgError("heads ratio: q has %d heads and k %d; heads_q must be a multiple of heads_k "
                       "(MHA, GQA, MQA)" % (Hq, Hk))
    for name, t in named:
        _check_inner(name, t)
    return dict(batch=B, seqlen_q=Sq, seqlen_k=Sk, heads_q=Hq, heads_k=Hk, head_dim=D)


def _attn_select(cat, op, dims, causal):
    """The attn_fwd / attn_bwd kernel for a problem, or ArgError saying which
    parameter no kernel of the catalogue serves."""
    params = dict(dtype="bf16", head_dim=dims["head_dim"], causal=bool(causal), batch=dims["batch"],
                  seqlen_q=dims["seqlen_q"], seqlen_k=dims["seqlen_k"], heads_q=dims["heads_q"],
                  heads_k=dims["heads_k"])
    try:
        return cat.select(op, **params)
    except HkrtError as e:
        raise ArgError("hkrt.attention: %s" % e) from None


def _attn_fwd_args(q, k, v, o, lse, scale, dims, layout):
    """attn_fwd's launch arguments (pointers, strides, scale, dimensions)."""
    a = dict(Q=q, K=k, V=v, O=o, LSE=lse, scale=float(scale))
    for p, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        a.update(_attn_strides(p, t, layout))
    a.update((n, dims[n]) for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"))
    return a


def _attn_bwd_args(q, k, v, o, do, lse, dq, dk, dv, scale, dims, layout):
    """attn_bwd's launch arguments: dQ takes Q's strides, dK K's, dV V's."""
    a = dict(Q=q, K=k, V=v, O=o, dO=do, LSE=lse, dQ=dq, dK=dk, dV=dv, scale=float(scale))
    for p, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do)):
        a.update(_attn_strides(p, t, layout))
    a.update((n, dims[n]) for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_k"))
    return a


def _gemm_shape(a, b, layout, device):
    """C = a b^T (nt: b is N x K) or a b (nn: b is K x N); rows of a and b
    contiguous. Returns (M, N, K, lda, ldb)."""
    if layout not in ("nt", "nn"):
        raise ArgError("layout: %r; allowed: nt (C = a b^T, b is N x K), nn (C = a b, b is K x N)" % (layout,))
    _check_tensor("a", a, 2, ("bfloat16",), device, "[M, K]")
    _check_tensor("b", b, 2, ("bfloat16",), device, "[N, K]" if layout == "nt" else "[K, N]")
    _check_same_device((("a", a), ("b", b)))
    M, K = a.shape
    N, Kb = b.shape if layout == "nt" else (b.shape[1], b.shape[0])
    if Kb != K:
        raise ArgError("b: shape %s; layout %s needs K = %d (a is %d x %d)" % (tuple(b.shape), layout, K, M, K))
    _check_inner("a", a)
    _check_inner("b", b)
    return M, N, K, max(a.stride(0), K), max(b.stride(0), b.shape[1])


def _norm_shape(x, weight, bias, residual, device):
    """Rows of x (the last dimension is hidden), all contiguous. Returns (rows, hidden)."""
    if not hasattr(x, "shape") or len(x.shape) < 1:
        raise ArgError("x: needs at least one dimension (hidden)")
    _check_tensor("x", x, len(x.shape), ("bfloat16",), device, "")
    H = x.shape[-1]
    rows = 1
    for n in x.shape[:-1]:
        rows *= n
    named = [("x", x), ("weight", weight)]
    _check_tensor("weight", weight, 1, ("bfloat16", "float32"), device, "[hidden]")
    if bias is not None:
        _check_tensor("bias", bias, 1, (_dtype(weight),), device, "[hidden], weight's dtype")
        named.append(("bias", bias))
    if residual is not None:
        _check_tensor("residual", residual, len(x.shape), ("bfloat16",), device, "(x's shape)")
        if tuple(residual.shape) != tuple(x.shape):
            raise ArgError("residual: shape %s, x's is %s" % (tuple(residual.shape), tuple(x.shape)))
        named.append(("residual", residual))
    _check_same_device(named)
    for name, t in named[1:]:
        if name in ("weight", "bias") and t.shape[0] != H:
            raise ArgError("%s: %d elements, x's hidden (last dimension) is %d" % (name, t.shape[0], H))
    for name, t in named:
        _check_contiguous(name, t)
    return rows, H


def _rope_shape(q, k, cos, sin, pos_offset, device):
    """q [batch, seq, heads_q, head_dim], k [batch, seq, heads_k, head_dim]
    (head_dim contiguous, any other strides); cos, sin fp32 tables
    [positions, head_dim/2], contiguous, covering pos_offset + seq."""
    for name, t in (("q", q), ("k", k)):
        _check_tensor(name, t, 4, ("bfloat16",), device, "[batch, seq, heads, head_dim]")
    _check_same_device((("q", q), ("k", k)))
    B, S, Hq, D = q.shape
    if k.shape[0] != B or k.shape[1] != S or k.shape[3] != D:
        raise ArgError("k: shape %s; q's is %s (same batch, seq and head_dim)" % (tuple(k.shape), tuple(q.shape)))
    if D % 2:
        raise ArgError("q: head_dim %d is odd (rotation pairs)" % D)
    if pos_offset < 0:
        raise ArgError("pos_offset: %d is negative" % pos_offset)
    if (cos is None) != (sin is None):
        raise ArgError("%s: given without %s (both tables, or neither)" % (("cos", "sin") if sin is None else ("sin", "cos")))
    for name, t in (("cos", cos), ("sin", sin)):
        if t is None:
            continue
        _check_tensor(name, t, 2, ("float32",), device, "[positions, head_dim/2]")
        if t.shape[1] != D // 2 or t.shape[0] < pos_offset + S:
            raise ArgError("%s: shape %s; needs at least %d positions (pos_offset + seq) of head_dim/2 = %d"
                           % (name, tuple(t.shape), pos_offset + S, D // 2))
        _check_contiguous(name, t)
    for name, t in (("q", q), ("k", k)):
        _check_inner(name, t)
    return dict(batch=B, seq_len=S, heads_q=Hq, heads_k=k.shape[2], head_dim=D)


def _select(cat, what, op, **params):
    try:
        return cat.select(op, **params)
    except HkrtError as e:
        raise ArgError("%s: %s" % (what, e)) from None


def _tmap_safe(k, values):
    """True when a bound launch may patch these tensors: every pointer 16-byte
    aligned and every stride and leading dimension a multiple of 8 elements,
    so a tensor map built at bind stays valid for the next tensors of the
    shape (a map left zero for a misaligned tensor must stay zero)."""
    for n, v in values.items():
        if hasattr(v, "data_ptr"):
            if v.data_ptr() % 16:
                return False
        elif isinstance(v, int) and ("_stride_" in n or n in ("lda", "ldb", "ldc")) and v % 8:
            return False
    return True


def _launch(k, values):
    """Launches k on torch's current stream with the arguments it takes out
    of values (a baked dimension is left out). Each shape is checked and
    packed once (Kernel.bind) and later calls only patch the pointers;
    tensors a bound launch cannot patch safely go through Kernel.__call__.
    Returns the Bound that launched (None for Kernel.__call__)."""
    names = k.arg_names()
    vals = {n: v for n, v in values.items() if n in names}
    if not _tmap_safe(k, vals):
        k(**vals)
        return None
    key = tuple(sorted((n, v) for n, v in vals.items() if not hasattr(v, "data_ptr")))
    cache = k.bound_cache()
    b = cache.get(key)
    if b is None:
        if len(cache) >= 256:
            cache.clear()
        b = cache[key] = k.bind(**vals)
        b()
    else:
        b(**{n: v for n, v in vals.items() if hasattr(v, "data_ptr")})
    b.values.clear()  # holds no tensor past its launch
    return b


def _poison(*ts):
    if _POISON:
        for t in ts:
            if t.is_floating_point():
                t.fill_(float("nan"))


def _torch():
    """torch, with the hkrt ops registered (once)."""
    if not _TORCH:
        import torch
        _TORCH.append(torch)  # the implementations read torch from here
        try:
            _register_ops(torch)
        except BaseException:
            _TORCH.pop()
            raise
    return _TORCH[0]


def _attn_out(torch, q, layout, dims):
    """O (q's logical shape, contiguous) and LSE ([batch, heads_q, seqlen_q] fp32)."""
    o = torch.empty(tuple(q.shape), dtype=q.dtype, device=q.device)
    lse = torch.empty((dims["batch"], dims["heads_q"], dims["seqlen_q"]), dtype=torch.float32, device=q.device)
    return o, lse


def _canon(t):
    """A dense tensor viewed with the strides a fresh one of its dimension
    order would have: a dimension of size 1 may carry any stride in torch,
    and a kernel that takes tensor maps needs each a positive multiple of 8
    elements (it gets the tensor's numel, which addresses nothing). Other
    tensors as they are."""
    if not _is_dense(t) or t.numel() == 0:
        return t
    st = tuple(s if n != 1 else t.numel() for n, s in zip(t.shape, t.stride()))
    return t if st == tuple(t.stride()) else t.as_strided(tuple(t.shape), st)


def _attn_grads(torch, q, k, v):
    """dQ, dK, dV with the strides of Q, K, V (the kernel writes them so),
    decided by shapes and strides alone (the fake implementation gives the
    same): a tensor that is not dense is copied first, so no gradient holds
    gaps."""
    q, k, v = (_canon(t) if _is_dense(t) else t.contiguous() for t in (q, k, v))
    grads = [torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=t.device)
             for t in (q, k, v)]
    return (q, k, v), grads


def _tmap_ready(torch, kern, ts):
    """Inputs of a kernel that takes tensor maps (sm_90a attn_bwd), each with
    a 16-byte aligned base and strides that are positive multiples of 8
    elements: one that is not is copied, dense ones to the same strides (dQ,
    dK and dV take Q's, K's and V's), others contiguous (the kernel traps on
    a misaligned base). Kernels without maps take them as they are."""
    if not any("tmap" in a for a in kern.entry["kernarg"]["args"]):
        return ts
    out = []
    for t in ts:
        if t.data_ptr() % 16 or not all(s > 0 and s % 8 == 0 for s in t.stride()[:-1]):
            shape, st = tuple(t.shape), tuple(t.stride()) if _is_dense(t) else None
            fresh = torch.empty_strided(shape, st, dtype=t.dtype, device=t.device) if st else \
                _canon(torch.empty(shape, dtype=t.dtype, device=t.device))
            t = fresh.copy_(t)
        out.append(t)
    return out


# scratch a kernel leaves as it found it, zero: sized once, zeroed once, reused
# (attn_bwd on sm_90a, attn_decode); other scratch is allocated per launch
_ZEROED = ("counters",)
_SCRATCH = {}  # (name, device, stream) -> a zeroed tensor


def _scratch_rules(kern):
    """{pointer: (elements or bytes, formula)} from the manifest's launch rules
    "<p>_bytes >= F" and "<p>_len >= F": the one place the sizes are written."""
    rules = kern.entry.get("_scratch")
    if rules is None:
        rules = {}
        for c in kern.entry.get("checks", ()):
            m = re.match(r"^(\w+)_(bytes|len) >= ([\w()*+\-/, ]+)$", c["rule"])
            if m:
                rules[m.group(1)] = (m.group(2), m.group(3))
        kern.entry["_scratch"] = rules
    return rules


def _formula(expr, names):
    """A manifest formula of integers, names, + - * /, cdiv, min and max."""
    if not re.match(r"^[\w()*+\-/, ]+$", expr):
        raise HkrtError("scratch formula %r: not one hkrt.py evaluates" % expr)
    env = dict(names, cdiv=lambda a, b: -(-a // b), min=min, max=max)
    return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, env))


def _scratch(torch, kern, dims, device, vals):
    """The scratch arguments of kern (pointer and its _bytes or _len), sized
    by the manifest's rules for these dimensions, put into vals."""
    for name, (unit, expr) in _scratch_rules(kern).items():
        need = max(1, _formula(expr, dims))
        arg = next((a for a in kern.entry["kernarg"]["args"] if a["name"] == name), None)
        if arg is None:
            continue
        dtype = torch.int32 if arg["type"].startswith("int") else torch.float32
        n = -(-need // 4) if unit == "bytes" else need
        if name in _ZEROED:
            key = (name, str(device), torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0)
            t = _SCRATCH.get(key)
            if t is None or t.numel() < n:
                t = _SCRATCH[key] = torch.zeros(max(n, 4096), dtype=dtype, device=device)
        else:  # zeroed although the kernels need not: a few microseconds against a stale-sum hazard
            t = torch.zeros(n, dtype=dtype, device=device)
        vals[name] = t
        vals[name + "_" + unit] = t.numel() * (4 if unit == "bytes" else 1)


# attn_fwd calls seen before: everything the checks, the selection and the
# packing depend on (catalogue, mode, scale, layout, each tensor's dtype,
# device, shape, strides and base alignment) -> (dimensions, Bound), so that
# a call of a known signature allocates O and LSE and patches five pointers
_FWD_PLANS = {}


def _attn_signature(q, k, v, causal, scale, layout, catalog):
    return (catalog or _DEFAULT[0], causal, scale, layout, q.dtype, k.dtype, v.dtype, q.device, k.device, v.device,
            tuple(q.shape), q.stride(), tuple(k.shape), k.stride(), tuple(v.shape), v.stride(),
            q.data_ptr() % 16, k.data_ptr() % 16, v.data_ptr() % 16)


def _attn_fwd_impl(q, k, v, causal, scale, layout, catalog):
    torch = _TORCH[0]
    sig = _attn_signature(q, k, v, causal, scale, layout, catalog)
    plan = _FWD_PLANS.get(sig)
    if plan is not None:
        dims, b = plan
        o, lse = _attn_out(torch, q, layout, dims)
        _poison(o, lse)
        b(Q=q, K=k, V=v, O=o, LSE=lse)  # q's base is _canon(q)'s
        b.values.clear()
        return o, lse
    cat = _catalog(catalog)
    dims = _attn_shape(q, k, v, layout, _device_type(cat))
    q, k, v = _canon(q), _canon(k), _canon(v)
    o, lse = _attn_out(torch, q, layout, dims)
    if o.numel() == 0:
        return o, lse
    if dims["seqlen_k"] == 0:  # no key at all: O = 0, LSE = -inf, as for rows with none visible
        return o.zero_(), lse.fill_(float("-inf"))
    kern = _attn_select(cat, "attn_fwd", dims, causal)
    _poison(o, lse)
    b = _launch(kern, _attn_fwd_args(q, k, v, o, lse, scale, dims, layout))
    if b is not None:
        if len(_FWD_PLANS) >= 1024:
            _FWD_PLANS.clear()
        _FWD_PLANS[sig] = (dims, b)
    return o, lse


def _attn_fwd_fake(q, k, v, causal, scale, layout, catalog):
    torch = _TORCH[0]
    dims = _attn_shape(q, k, v, layout, None)
    return _attn_out(torch, q, layout, dims)


def _attn_bwd_impl(do, q, k, v, o, lse, causal, scale, layout, catalog):
    torch = _TORCH[0]
    cat = _catalog(catalog)
    dims = _attn_shape(q, k, v, layout, _device_type(cat))
    (q, k, v), (dq, dk, dv) = _attn_grads(torch, q, k, v)
    if dq.numel() == 0 or dk.numel() == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    if tuple(do.shape) != tuple(q.shape):
        raise ArgError("dO: shape %s, q's is %s" % (tuple(do.shape), tuple(q.shape)))
    if tuple(o.shape) != tuple(q.shape):
        raise ArgError("O: shape %s, q's is %s" % (tuple(o.shape), tuple(q.shape)))
    want = (dims["batch"], dims["heads_q"], dims["seqlen_q"])
    if tuple(lse.shape) != want or _dtype(lse) != "float32" or not _is_contiguous(lse):
        raise ArgError("LSE: %s %s, strides %s; attn_bwd takes attn_fwd's: float32 %s, contiguous"
                       % (_dtype(lse), tuple(lse.shape), tuple(lse.stride()), want))
    if _dtype(do) != "bfloat16":
        do = do.to(torch.bfloat16)
    if do.stride(-1) != 1 or 0 in do.stride():  # an expanded or transposed gradient
        do = do.contiguous()
    kern = _attn_select(cat, "attn_bwd", dims, causal)
    q, k, v, o, do = _tmap_ready(torch, kern, (q, k, v, _canon(o), _canon(do)))
    _poison(dq, dk, dv)
    vals = _attn_bwd_args(q, k, v, o, do, lse, dq, dk, dv, scale, dims, layout)
    _scratch(torch, kern, dims, q.device, vals)
    _launch(kern, vals)
    return dq, dk, dv


def _attn_bwd_fake(do, q, k, v, o, lse, causal, scale, layout, catalog):
    torch = _TORCH[0]
    _attn_shape(q, k, v, layout, None)
    return tuple(_attn_grads(torch, q, k, v)[1])


def _attn_setup(ctx, inputs, output):
    q, k, v, causal, scale, layout, catalog = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.args = (causal, scale, layout, catalog)


def _attn_backward(ctx, do, dlse):
    """LSE carries no gradient: a loss that uses it gets none through it."""
    torch = _TORCH[0]
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.hkrt.attn_bwd(do, q, k, v, o, lse, *ctx.args)
    return dq, dk, dv, None, None, None, None


def _gemm_impl(a, b, layout, catalog):
    torch = _TORCH[0]
    cat = _catalog(catalog)
    M, N, K, lda, ldb = _gemm_shape(a, b, layout, _device_type(cat))
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if c.numel() == 0:
        return c
    if K == 0:
        return c.zero_()
    kern = _select(cat, "hkrt.gemm", "gemm", dtype="bf16", layout=layout, M=M, N=N, K=K)
    _poison(c)
    _launch(kern, dict(A=a, B=b, C=c, lda=lda, ldb=ldb, ldc=N, M=M, N=N, K=K))
    return c


def _gemm_fake(a, b, layout, catalog):
    torch = _TORCH[0]
    M, N, K, _, _ = _gemm_shape(a, b, layout, None)
    return torch.empty((M, N), dtype=a.dtype, device=a.device)


def _gemm_setup(ctx, inputs, output):
    a, b, layout, catalog = inputs
    ctx.save_for_backward(a, b)
    ctx.args = (layout, catalog)


def _gemm_backward(ctx, dc):
    """nt (C = A B^T): dA = dC B (nn), dB = dC^T A (nn); nn (C = A B): dA =
    dC B^T (nt), dB = A^T dC (nn). The transposed operand is copied to rows."""
    torch = _TORCH[0]
    a, b = ctx.saved_tensors
    layout, catalog = ctx.args
    dc = dc.to(torch.bfloat16)
    if dc.stride(-1) != 1 or 0 in dc.stride():
        dc = dc.contiguous()
    gemm = torch.ops.hkrt.gemm
    if layout == "nt":
        da = gemm(dc, b, "nn", catalog) if ctx.needs_input_grad[0] else None
        db = gemm(dc.t().contiguous(), a, "nn", catalog) if ctx.needs_input_grad[1] else None
    else:
        da = gemm(dc, b, "nt", catalog) if ctx.needs_input_grad[0] else None
        db = gemm(a.t().contiguous(), dc, "nn", catalog) if ctx.needs_input_grad[1] else None
    return da, db, None, None


def _norm_out(torch, x, residual, kind, rows):
    y = torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
    s = torch.empty(tuple(x.shape) if residual is not None else (0,), dtype=x.dtype, device=x.device)
    rstd = torch.empty((rows,), dtype=torch.float32, device=x.device)
    mean = torch.empty((rows if kind == "layernorm" else 0,), dtype=torch.float32, device=x.device)
    return y, s, rstd, mean


def _norm_run(kind, x, weight, bias, residual, eps, catalog):
    torch = _TORCH[0]
    cat = _catalog(catalog)
    rows, H = _norm_shape(x, weight, bias, residual, _device_type(cat))
    y, s, rstd, mean = _norm_out(torch, x, residual, kind, rows)
    if y.numel() == 0:
        return y, s, rstd, mean
    # a tensor off 16 bytes: a kernel with both paths (vec: only ones refuse it)
    aligned = all(t is None or t.data_ptr() % 16 == 0 for t in (x, residual, y, s, weight, bias))
    extra = {} if aligned else {"vec": "both"}
    kern = _select(cat, "hkrt.%s" % ("rms_norm" if kind == "rmsnorm" else "layer_norm"), "norm", kind=kind,
                   phase="fwd", weight_dtype="bf16" if _dtype(weight) == "bfloat16" else "fp32",
                   residual=residual is not None, dropout=0, eps=repr(float(eps)), rows=rows, hidden=H, **extra)
    _poison(y, s, rstd, mean)
    _launch(kern, dict(x=x, residual=residual, weight=weight, bias=bias, y=y, s_out=s, rstd=rstd, mean=mean,
                       rows=rows, hidden=H))
    return y, s, rstd, mean


def _rms_norm_impl(x, weight, residual, eps, catalog):
    return _norm_run("rmsnorm", x, weight, None, residual, eps, catalog)[:3]


def _rms_norm_fake(x, weight, residual, eps, catalog):
    rows, _ = _norm_shape(x, weight, None, residual, None)
    return _norm_out(_TORCH[0], x, residual, "rmsnorm", rows)[:3]


def _layer_norm_impl(x, weight, bias, residual, eps, catalog):
    return _norm_run("layernorm", x, weight, bias, residual, eps, catalog)


def _layer_norm_fake(x, weight, bias, residual, eps, catalog):
    rows, _ = _norm_shape(x, weight, bias, residual, None)
    return _norm_out(_TORCH[0], x, residual, "layernorm", rows)


def _norm_bwd_out(torch, s, weight, kind):
    """dx (s's shape), dweight and dbias (weight's dtype; dbias empty for RMSNorm)."""
    H = s.shape[-1]
    return (torch.empty(tuple(s.shape), dtype=s.dtype, device=s.device),
            torch.empty((H,), dtype=weight.dtype, device=s.device),
            torch.empty((H if kind == "layernorm" else 0,), dtype=weight.dtype, device=s.device))


def _rows_of(torch, t):
    """A gradient as bf16 contiguous rows."""
    if _dtype(t) != "bfloat16":
        t = t.to(torch.bfloat16)
    return t if _is_contiguous(t) else t.contiguous()


def _norm_bwd_impl(dy, ds, s, weight, rstd, mean, kind, residual, eps, catalog):
    """The norm's backward: its bwd kernel (dx and per-part weight sums),
    then bwd_reduce (the sums in part order: the same bits every run)."""
    torch = _TORCH[0]
    cat = _catalog(catalog)
    rows, H = _norm_shape(s, weight, None, None, _device_type(cat))
    dx, dw, db = _norm_bwd_out(torch, s, weight, kind)
    if dx.numel() == 0:
        return dx, dw.zero_(), db.zero_()
    dy = _rows_of(torch, dy).view(tuple(s.shape))
    if residual:
        ds = _rows_of(torch, ds).view(tuple(s.shape)) if ds is not None and ds.numel() else torch.zeros_like(s)
    what = "hkrt.%s backward" % ("rms_norm" if kind == "rmsnorm" else "layer_norm")
    params = dict(kind=kind, weight_dtype="bf16" if _dtype(weight) == "bfloat16" else "fp32", residual=bool(residual),
                  dropout=0, eps=repr(float(eps)), rows=rows, hidden=H)
    kb = _select(cat, what, "norm", phase="bwd", **params)
    kr = _select(cat, what, "norm", phase="bwd_reduce", **params)
    parts = min(rows, int(kb.entry.get("tunables", {}).get("parts", 512)))
    f32 = dict(dtype=torch.float32, device=s.device)
    dwp, dbp = torch.empty((parts, H), **f32), torch.empty((parts, H) if kind == "layernorm" else (0,), **f32)
    dw32, db32 = torch.empty((H,), **f32), torch.empty((H,) if kind == "layernorm" else (0,), **f32)
    _poison(dx, dwp, dbp, dw32, db32)
    _launch(kb, dict(dy=dy, s=s, weight=weight, rstd=rstd, mean=mean, ds_in=ds, dx=dx, dw_part=dwp, db_part=dbp,
                     rows=rows, hidden=H))
    _launch(kr, dict(dw_part=dwp, db_part=dbp, dweight=dw32, dbias=db32, rows=rows, hidden=H))
    dw.copy_(dw32)
    if kind == "layernorm":
        db.copy_(db32)
    return dx, dw, db


def _norm_bwd_fake(dy, ds, s, weight, rstd, mean, kind, residual, eps, catalog):
    _norm_shape(s, weight, None, None, None)
    return _norm_bwd_out(_TORCH[0], s, weight, kind)


def _rms_setup(ctx, inputs, output):
    x, weight, residual, eps, catalog = inputs
    y, s, rstd = output
    ctx.save_for_backward(s if residual is not None else x, weight, rstd)
    ctx.args = (residual is not None, eps, catalog)


def _rms_backward(ctx, dy, ds, drstd):
    """x and the residual get the same gradient (s = x + residual); rstd none."""
    torch = _TORCH[0]
    s, weight, rstd = ctx.saved_tensors
    residual, eps, catalog = ctx.args
    dx, dw, _ = torch.ops.hkrt.norm_bwd(dy, ds if residual else None, s, weight, rstd, None, "rmsnorm", residual,
                                        eps, catalog)
    return dx, dw, dx if residual else None, None, None


def _ln_setup(ctx, inputs, output):
    x, weight, bias, residual, eps, catalog = inputs
    y, s, rstd, mean = output
    ctx.save_for_backward(s if residual is not None else x, weight, rstd, mean)
    ctx.args = (residual is not None, eps, catalog)


def _ln_backward(ctx, dy, ds, drstd, dmean):
    torch = _TORCH[0]
    s, weight, rstd, mean = ctx.saved_tensors
    residual, eps, catalog = ctx.args
    dx, dw, db = torch.ops.hkrt.norm_bwd(dy, ds if residual else None, s, weight, rstd, mean, "layernorm",
                                         residual, eps, catalog)
    return dx, dw, db, dx if residual else None, None, None


def _rope_impl(q, k, cos, sin, theta, style, pos_offset, catalog):
    torch = _TORCH[0]
    cat = _catalog(catalog)
    dims = _rope_shape(q, k, cos, sin, pos_offset, _device_type(cat))
    qo = torch.empty(tuple(q.shape), dtype=q.dtype, device=q.device)
    ko = torch.empty(tuple(k.shape), dtype=k.dtype, device=k.device)
    if qo.numel() == 0 and ko.numel() == 0:
        return qo, ko
    kern = _select(cat, "hkrt.rope", "rope", dtype="bf16", style=style, inplace=False, table=cos is not None,
                   theta=repr(float(theta)), **dims)
    _poison(qo, ko)
    a = dict(q_in=q, k_in=k, q_out=qo, k_out=ko, cos_table=cos, sin_table=sin, pos_offset=pos_offset, **dims)
    for p, t in (("q_in", q), ("k_in", k), ("q_out", qo), ("k_out", ko)):
        a.update({p + "_stride_b": t.stride(0), p + "_stride_s": t.stride(1), p + "_stride_h": t.stride(2)})
    _launch(kern, a)
    return qo, ko


def _rope_fake(q, k, cos, sin, theta, style, pos_offset, catalog):
    torch = _TORCH[0]
    _rope_shape(q, k, cos, sin, pos_offset, None)
    return torch.empty(tuple(q.shape), dtype=q.dtype, device=q.device), \
        torch.empty(tuple(k.shape), dtype=k.dtype, device=k.device)


# name, schema, the run, the fake (meta) implementation
_OPS = (
    ("attn_fwd", "(Tensor q, Tensor k, Tensor v, bool causal, float scale, str layout, str catalog)"
                 " -> (Tensor, Tensor)", _attn_fwd_impl, _attn_fwd_fake),
    ("attn_bwd", "(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, bool causal, float scale,"
                 " str layout, str catalog) -> (Tensor, Tensor, Tensor)", _attn_bwd_impl, _attn_bwd_fake),
    ("gemm", "(Tensor a, Tensor b, str layout, str catalog) -> Tensor", _gemm_impl, _gemm_fake),
    ("rms_norm", "(Tensor x, Tensor weight, Tensor? residual, float eps, str catalog)"
                 " -> (Tensor, Tensor, Tensor)", _rms_norm_impl, _rms_norm_fake),
    ("layer_norm", "(Tensor x, Tensor weight, Tensor bias, Tensor? residual, float eps, str catalog)"
                   " -> (Tensor, Tensor, Tensor, Tensor)", _layer_norm_impl, _layer_norm_fake),
    ("norm_bwd", "(Tensor dy, Tensor? ds, Tensor s, Tensor weight, Tensor rstd, Tensor? mean, str kind,"
                 " bool residual, float eps, str catalog) -> (Tensor, Tensor, Tensor)", _norm_bwd_impl, _norm_bwd_fake),
    ("rope", "(Tensor q, Tensor k, Tensor? cos, Tensor? sin, float theta, str style, int pos_offset, str catalog)"
             " -> (Tensor, Tensor)", _rope_impl, _rope_fake),
)


_ATTENTION = []  # [the torch.autograd.Function of eager hkrt.attention]


def _attention_function(torch):
    """hkrt.attention's torch.autograd.Function, for eager calls: the same
    implementations as the ops (attn_fwd, attn_bwd), without the dispatcher
    and the generated autograd layer of a custom op between them."""
    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, causal, scale, layout, catalog):
            o, lse = _attn_fwd_impl(q, k, v, causal, scale, layout, catalog)
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.args = (causal, scale, layout, catalog)
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        def backward(ctx, do, dlse):
            q, k, v, o, lse = ctx.saved_tensors
            dq, dk, dv = _attn_bwd_impl(do, q, k, v, o, lse, *ctx.args)
            return dq, dk, dv, None, None, None, None
    return Attention


def _register_ops(torch):
    """torch.ops.hkrt.<name> for each of _OPS; attn_fwd differentiable through
    attn_bwd, gemm through gemm."""
    defs = {}
    for name, schema, impl, fake in _OPS:
        d = torch.library.custom_op("hkrt::" + name, impl, mutates_args=(), schema=schema)
        d.register_fake(fake)
        defs[name] = d
    defs["attn_fwd"].register_autograd(_attn_backward, setup_context=_attn_setup)
    defs["gemm"].register_autograd(_gemm_backward, setup_context=_gemm_setup)
    defs["rms_norm"].register_autograd(_rms_backward, setup_context=_rms_setup)
    defs["layer_norm"].register_autograd(_ln_backward, setup_context=_ln_setup)
    _ATTENTION.append(_attention_function(torch))


def attention(q, k, v, causal=False, scale=None, layout="bshd", catalog=None, return_lse=False):
    """softmax(scale q k^T + causal mask) v with hkgen's attn_fwd, differentiable
    through attn_bwd, both picked from the catalogue by hkrt_select at each
    shape. Eager calls go through a torch.autograd.Function over the kernels;
    under torch.compile (or on tensor subclasses such as fake tensors) the
    same work is the custom op torch.ops.hkrt.attn_fwd, whose autograd
    formula is torch.ops.hkrt.attn_bwd.

    q [batch, seqlen_q, heads_q, head_dim], k and v [batch, seqlen_k, heads_k,
    head_dim] (layout "bshd"; "bhsd" is [batch, heads, seq, head_dim] as SDPA
    takes), bf16, head_dim contiguous, any other strides; heads_q a multiple of
    heads_k (GQA, MQA). causal aligns bottom-right (a query row with no key
    visible gets 0). scale defaults to head_dim ** -0.5. Returns O in q's
    shape (contiguous), and with return_lse the fp32 log-sum-exp [batch,
    heads_q, seqlen_q], which carries no gradient. catalog: a Catalog, a
    catalogue folder, or None for set_default_catalog's."""
    torch = _torch()
    if scale is None:
        scale = q.shape[-1] ** -0.5
    args = (q, k, v, bool(causal), float(scale), layout, _catalog_key(catalog))
    if torch.compiler.is_compiling() or not (type(q) is type(k) is type(v) is torch.Tensor):
        o, lse = torch.ops.hkrt.attn_fwd(*args)  # traced: the custom op, its fake and its autograd formula
    elif torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        o, lse = _ATTENTION[0].apply(*args)
    else:
        o, lse = _attn_fwd_impl(*args)
    return (o, lse) if return_lse else o


def gemm(a, b, layout="nt", catalog=None):
    """C = a b^T (layout nt: a [M, K], b [N, K]) or a b (nn: b [K, N]), bf16,
    rows contiguous, as torch.ops.hkrt.gemm; C is [M, N], contiguous.
    Differentiable through the same op (the backward takes both layouts)."""
    return _torch().ops.hkrt.gemm(a, b, layout, _catalog_key(catalog))


def rms_norm(x, weight, residual=None, eps=1e-5, catalog=None):
    """RMSNorm of the rows of x (bf16, contiguous; weight bf16 or fp32 [hidden])
    with hkgen's norm kernel (phase fwd), as torch.ops.hkrt.rms_norm. With a
    residual, normalizes s = x + residual and returns (y, s); else y.
    Differentiable through the norm's bwd and bwd_reduce kernels (norm_bwd)."""
    y, s, _ = _torch().ops.hkrt.rms_norm(x, weight, residual, float(eps), _catalog_key(catalog))
    return (y, s) if residual is not None else y


def layer_norm(x, weight, bias, residual=None, eps=1e-5, catalog=None):
    """LayerNorm as rms_norm, with a bias (weight's dtype); torch.ops.hkrt.layer_norm."""
    y, s, _, _ = _torch().ops.hkrt.layer_norm(x, weight, bias, residual, float(eps), _catalog_key(catalog))
    return (y, s) if residual is not None else y


def rope(q, k, cos=None, sin=None, theta=10000.0, style="rotate_half", pos_offset=0, catalog=None):
    """Rotary embedding of q [batch, seq, heads_q, head_dim] and k [batch, seq,
    heads_k, head_dim] (bf16, head_dim contiguous) at positions pos_offset +
    s, out of place (torch.ops.hkrt.rope): from fp32 tables cos, sin
    [positions, head_dim/2], or computed from theta when they are None (the
    catalogue's kernel must bake the same theta). Returns (q_out, k_out), contiguous."""
    return _torch().ops.hkrt.rope(q, k, cos, sin, float(theta), style, int(pos_offset), _catalog_key(catalog))


if "torch" in sys.modules:  # register now, so that code compiled later finds the ops
    _torch()
