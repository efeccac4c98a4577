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
"""
import ctypes
import json
import os

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

    def kernels(self, target=None):
        return [self.kernel(e["name"], e["target"]) for e in self.manifest["kernels"]
                if target is None or e["target"] == target]

    def synchronize(self):
        self.lib.check(self.lib.c.hkrt_synchronize(self.dev), "synchronize")
