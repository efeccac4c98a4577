#!/usr/bin/env python3
"""tune_select.py LIB CATALOG BACKEND TARGET PROBLEM...: hkrt_select on a
catalogue opened on a device of BACKEND (1 emulator, 3 CUDA; TARGET: the
emulated target, "-" for a GPU's own), one problem per argument
("layout=nt,M=4096,..."),
printing the chosen kernel's name per line (or "ERROR <message>"). Through
libhkrt's C calls by ctypes, as any caller would."""
import ctypes
import sys


class Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class Problem(ctypes.Structure):
    _fields_ = [("op", ctypes.c_char_p), ("target", ctypes.c_char_p),
                ("params", ctypes.POINTER(Param)), ("nparams", ctypes.c_size_t)]


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.hkrt_error.restype = ctypes.c_char_p
    lib.hkrt_kernel_name.restype = ctypes.c_char_p
    dev, cat = ctypes.c_void_p(), ctypes.c_void_p()
    backend, target = int(sys.argv[3]), None if sys.argv[4] == "-" else sys.argv[4].encode()
    if lib.hkrt_device_open(backend, target, ctypes.byref(dev)) or \
            lib.hkrt_catalog_open(dev, sys.argv[2].encode(), ctypes.byref(cat)):
        print("ERROR", lib.hkrt_error().decode())
        return
    for text in sys.argv[5:]:
        pairs = [p.split("=", 1) for p in text.split(",")]
        params = (Param * len(pairs))(*[Param(n.encode(), v.encode()) for n, v in pairs])
        pb = Problem(b"gemm", None, params, len(pairs))
        k = ctypes.c_void_p()
        if lib.hkrt_select(cat, ctypes.byref(pb), ctypes.byref(k)):
            print("ERROR", lib.hkrt_error().decode())
        else:
            print(lib.hkrt_kernel_name(k).decode())
    lib.hkrt_catalog_close(cat)
    lib.hkrt_device_close(dev)


main()
