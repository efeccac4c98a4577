"""hkrt: load an hkgen catalogue and launch its kernels from Python.

A thin ctypes layer over libhkrt (runtime/include/hkrt.h): the C library
reads the manifest, checks and packs the arguments (tensor maps included),
computes the grid and launches. Tensors are torch tensors (data_ptr is
passed); kernels run on torch's current stream. Python is never needed to
build or run hkgen itself.

    cat = hkrt.Catalog("catalog", backend="cuda")
    k = cat.kernel("llama3_8b_qkv", "sm_90a")
    k(A=a, B=b, C=c, lda=4096, ldb=4096, ldc=6144, M=m)   # grid from the manifest
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

    def __call__(self, stream=None, **values):
        if stream is None and self.cat.backend == "cuda":
            try:
                import torch
                stream = torch.cuda.current_stream().cuda_stream
            except ImportError:
                stream = None
        self.cat.lib.check(self.cat.lib.c.hkrt_kernel_launch(self._k, None, _args(values), len(values),
                                                             ctypes.c_void_p(stream or 0)),
                           "launching " + self.name)


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
