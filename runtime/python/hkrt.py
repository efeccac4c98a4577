"""hkrt: load an hkgen catalogue and launch its kernels from Python.

A thin ctypes layer over libhkrt (runtime/include/hkrt.h). Tensors are torch
tensors (data_ptr is passed); kernels run on torch's current stream. Python is
never needed to build or run hkgen itself.

    cat = hkrt.Catalog("catalog", backend="cuda")
    k = cat.kernel("llama3_8b_qkv", "sm_90a")
    k(A=a, B=b, C=c, lda=4096, ldb=4096, ldc=6144, M=m)   # grid from the manifest
"""
import ctypes
import json
import operator
import os
import re

_BACKENDS = {"emu": 1, "hip": 2, "cuda": 3}


def _find_lib():
    env = os.environ.get("HKRT_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "build", "libhkrt.so"), "libhkrt.so"):
        if os.path.exists(cand) or "/" not in cand:
            return cand
    return "libhkrt.so"


class HkrtError(RuntimeError):
    pass


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

    def check(self, status, what):
        if status != 0:
            raise HkrtError("%s: %s" % (what, self.c.hkrt_error().decode()))


def _cdiv(a, b):
    return -(-a // b)


def _compile(expr):
    """Compiles a manifest grid formula (integers, names, '*', cdiv(a,b)) once."""
    if not re.fullmatch(r"[A-Za-z0-9_*(), ]*", expr):
        raise HkrtError("bad grid formula %r" % expr)
    return compile(expr, "<grid>", "eval")  # only the characters above can reach it


def _eval(code, values):
    env = dict(values)
    env["cdiv"] = _cdiv
    try:
        return int(eval(code, {"__builtins__": {}}, env))
    except NameError as e:
        raise HkrtError("grid formula needs a value: %s" % e)


class Kernel:
    def __init__(self, cat, entry):
        self.cat, self.entry = cat, entry
        self.name = entry["name"]
        self.args = entry["kernarg"]["args"]
        self.size = entry["kernarg"]["size"]
        self.dynamic_lds = int(entry.get("dynamic_lds", 0))  # bytes of dynamic shared memory per launch
        self._fn = None
        self._grid = [_compile(g) for g in entry["grid"]]
        self._baked = {k: int(v) for k, v in entry["params"].items() if re.fullmatch(r"-?\d+", v)}

    def _function(self):
        if self._fn is None:  # modules load lazily, once
            mod = ctypes.c_void_p()
            path = os.path.join(self.cat.dir, self.entry["file"]).encode()
            self.cat.lib.check(self.cat.lib.c.hkrt_module_load(self.cat.dev, path, ctypes.byref(mod)),
                               "loading " + self.entry["file"])
            fn = ctypes.c_void_p()
            self.cat.lib.check(self.cat.lib.c.hkrt_module_function(mod, self.name.encode(), ctypes.byref(fn)),
                               "kernel " + self.name)
            self._fn = fn
        return self._fn

    def pack(self, values):
        buf = bytearray(self.size)
        for a in self.args:
            if a["name"] not in values:
                raise HkrtError("%s: argument %s is missing" % (self.name, a["name"]))
            v = values[a["name"]]
            if "*" in a["type"]:
                v = v.data_ptr() if hasattr(v, "data_ptr") else int(v)
                if v == 0:
                    raise HkrtError("%s: argument %s is a null pointer" % (self.name, a["name"]))
                buf[a["offset"]:a["offset"] + 8] = int(v).to_bytes(8, "little")
            elif a["type"] == "float":
                buf[a["offset"]:a["offset"] + 4] = bytes(ctypes.c_float(float(v)))
            else:
                buf[a["offset"]:a["offset"] + a["size"]] = int(v).to_bytes(a["size"], "little", signed=True)
        extra = set(values) - {a["name"] for a in self.args} - set(self.entry["params"])
        if extra:
            raise HkrtError("%s: unknown arguments %s" % (self.name, sorted(extra)))
        return bytes(buf)

    def grid(self, values):
        params = dict(self._baked)
        for k, v in values.items():
            # Python and numpy integers (tensors, which also have __index__, are pointers)
            if hasattr(v, "__index__") and not hasattr(v, "data_ptr"):
                params[k] = operator.index(v)
        return [_eval(g, params) for g in self._grid]

    def __call__(self, stream=None, **values):
        args = self.pack(values)
        grid = self.grid(values)
        block = self.entry["block"]
        if stream is None and self.cat.backend == "cuda":
            try:
                import torch
                stream = torch.cuda.current_stream().cuda_stream
            except ImportError:
                stream = None
        g = (ctypes.c_uint * 3)(*grid)
        b = (ctypes.c_uint * 3)(*block)
        buf = ctypes.create_string_buffer(args, len(args))
        self.cat.lib.check(self.cat.lib.c.hkrt_launch_ex(self._function(), g, b, self.dynamic_lds, buf, len(args),
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
