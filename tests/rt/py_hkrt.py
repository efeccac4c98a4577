#!/usr/bin/env python3
"""py_hkrt.py CATALOG LIBHKRT: runtime/python/hkrt.py against an emulated catalogue
(CTest rt_python). Needs no torch: tensors are small objects with data_ptr() over
emulator memory. Checks a run-time nt GEMM and the baked one at odd shapes (fresh
random inputs, C poisoned with NaN bits, fp64 reference by relative L2, NaN fails),
that the grid comes from the C library, and that argument errors raise with
libhkrt's message."""
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


class Buf:
    """bf16 elements in emulator memory, with data_ptr() as torch tensors have."""

    def __init__(self, words):
        self.n = len(words)
        self.p = ctypes.c_void_p()
        cat.lib.check(c.hkrt_alloc(cat.dev, 2 * self.n, ctypes.byref(self.p)), "alloc")
        host = (ctypes.c_uint16 * self.n)(*words)
        cat.lib.check(c.hkrt_copy_to_device(cat.dev, self.p, host, 2 * self.n), "upload")

    def data_ptr(self):
        return self.p.value

    def words(self):
        host = (ctypes.c_uint16 * self.n)()
        cat.lib.check(c.hkrt_copy_to_host(cat.dev, host, self.p, 2 * self.n), "download")
        return list(host)


def bf16(x):
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    return (b + 0x7FFF + ((b >> 16) & 1)) >> 16


def f(w):
    return struct.unpack("<f", struct.pack("<I", w << 16))[0]


def gemm(name, M, N, K, baked):
    lda, ldb, ldc = K + random.choice((0, 3, 8)), K + random.choice((0, 5)), N + 2
    a = [bf16(random.uniform(-1, 1)) for _ in range(M * lda)]
    b = [bf16(random.uniform(-1, 1)) for _ in range(N * ldb)]
    A, B, C = Buf(a), Buf(b), Buf([0x7FC1] * (M * ldc))  # C poisoned with NaN
    k = cat.kernel(name, "gfx942")
    vals = dict(A=A, B=B, C=C, lda=lda, ldb=ldb, ldc=ldc, M=M)
    if not baked:
        vals.update(N=N, K=K)
    grid = k.grid(vals)
    check(grid[0] == -(-N // int(k.entry["params"]["tile_n"])) and grid[1] == -(-M // int(k.entry["params"]["tile_m"])),
          "%s grid %s" % (name, grid))
    k(**vals)
    cat.synchronize()
    got = C.words()
    num = den = 0.0
    nan = False
    for i in range(M):
        for j in range(N):
            r = sum(f(a[i * lda + q]) * f(b[j * ldb + q]) for q in range(K))
            g = f(got[i * ldc + j])
            nan |= math.isnan(g) or math.isinf(g)
            num += (g - r) ** 2
            den += r * r
        check(all(w == 0x7FC1 for w in got[i * ldc + N:(i + 1) * ldc]), "%s wrote past column N" % name)
    rel = math.sqrt(num / den) if den else float("inf")
    check(not nan and rel < 1e-2, "%s M=%d N=%d K=%d: rel L2 %.3e, NaN/Inf %s" % (name, M, N, K, rel, nan))
    print("%s M=%d N=%d K=%d lda=%d ldb=%d: rel L2 %.2e" % (name, M, N, K, lda, ldb, rel))
    return vals, k


random.seed()
vals, k = gemm("gemm_any_nt", 37, 29, 45, False)
gemm("rt_e2e_baked", 23, 96, 80, True)
# errors come from libhkrt, with its message
for bad, want in ((dict(vals, lda=10), "lda >= K does not hold: lda = 10, K = 45"), ({}, "missing"),
                  (dict(vals, bogus=1), "unknown argument 'bogus'")):
    try:
        k(**bad)
        check(False, "no error for %s" % want)
    except hkrt.HkrtError as e:
        check(want in str(e), "message %r lacks %r" % (str(e), want))
# the pre-packed path: the verified module's function, once
fn = k._function()
check(bool(fn.value) and k._function() is fn, "Kernel._function() gave no function, or a new one each call")
# the bound fast path: packed once, pointers patched per call, fresh inputs each time
M, N, K = 33, 29, 41
vals2, k2 = gemm("gemm_any_nt", M, N, K, False)
bound = k2.bind(**vals2)
for trial in range(2):
    lda, ldb, ldc = vals2["lda"], vals2["ldb"], vals2["ldc"]
    a = [bf16(random.uniform(-1, 1)) for _ in range(M * lda)]
    b = [bf16(random.uniform(-1, 1)) for _ in range(N * ldb)]
    A, B, C = Buf(a), Buf(b), Buf([0x7FC1] * (M * ldc))
    bound(A=A, B=B, C=C)
    cat.synchronize()
    got = C.words()
    num = den = 0.0
    for i in range(M):
        for j in range(N):
            r = sum(f(a[i * lda + q]) * f(b[j * ldb + q]) for q in range(K))
            g = f(got[i * ldc + j])
            num += (g - r) ** 2 if not math.isnan(g) else float("inf")
            den += r * r
    rel = math.sqrt(num / den) if den else float("inf")
    check(rel < 1e-2, "bound call %d: rel L2 %.3e" % (trial, rel))
    print("bound gemm_any_nt call %d: rel L2 %.2e" % (trial, rel))


class Odd(Buf):
    def data_ptr(self):
        return self.p.value + 1


for bad, want in ((dict(M=3), "argument M is not a pointer"), (dict(A=Odd([0] * 8)), "argument A: misaligned"),
                  (dict(C=Odd([0] * 8)), "argument C: misaligned")):
    try:
        bound(**bad)
        check(False, "bound call: no error for %s" % want)
    except hkrt.HkrtError as e:
        check(want in str(e), "bound call: message %r lacks %r" % (str(e), want))
# hkrt_kernel_set_pointer: the pointer lands at its slot of the packed bytes; bad ones are refused by name
lib = cat.lib.c
buf = ctypes.create_string_buffer(bound.size)
ctypes.memmove(buf, bound.buf, bound.size)
off = ctypes.c_size_t()
al = ctypes.c_size_t()
check(lib.hkrt_kernel_pointer_slot(k2._k, b"C", ctypes.byref(off), ctypes.byref(al)) == 0, "pointer_slot C")
target = C.data_ptr() + 2 * 8
check(lib.hkrt_kernel_set_pointer(k2._k, buf, bound.size, b"C", target) == 0, "set_pointer C")
check(ctypes.c_uint64.from_buffer(buf, off.value).value == target, "set_pointer wrote C's slot")
for name, p, want in ((b"C", C.data_ptr() + 1, "argument C: misaligned"), (b"M", C.data_ptr(), "not a pointer"),
                      (b"Q", C.data_ptr(), "no argument 'Q'")):
    st = lib.hkrt_kernel_set_pointer(k2._k, buf, bound.size, name, p)
    msg = lib.hkrt_error().decode()
    check(st != 0 and want in msg, "set_pointer %s: status %d, message %r lacks %r" % (name, st, msg, want))
check(lib.hkrt_kernel_set_pointer(k2._k, buf, bound.size - 1, b"C", target) != 0, "set_pointer: short buffer")
print("rt_python: %d failed" % failures)
sys.exit(1 if failures else 0)
