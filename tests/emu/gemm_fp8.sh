# gemm_fp8.sh (CTest emu_gemm_fp8): `hkgen test emu/gemm_fp8.yaml`, the fp8
# GEMM kernels (every scale mode, OCP on gfx950, FNUZ on gfx942, bf16 and
# fp32 output) on the emulator against an fp64 product of the dequantised
# inputs; asserts exactly EXPECTED_RUNS rows, all PASS. Then libhkrt refuses
# launches whose scale tensors do not have the mode's shape, and block scales
# on a K that is not a multiple of 128, naming the argument (hkrt.py on the
# emulator backend; nothing is launched).
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
HKGEN=${HKGEN:-$(cd "$EMU_DIR/../.." && pwd)/build/hkgen-asan}
. "$EMU_DIR/../lib/lib.sh"

EXPECTED_RUNS=37
run_hk "$T/out.txt" test -j 2 "$EMU_DIR/gemm_fp8.yaml"
cat "$T/out.txt"
expect_rc 0 "hkgen test emu/gemm_fp8.yaml"
rows=$(grep -c '  PASS' "$T/out.txt" || true)
[ "$rows" -eq "$EXPECTED_RUNS" ] || fail "$rows PASS rows, expected $EXPECTED_RUNS"
grep -q "^$EXPECTED_RUNS runs, 0 failed, 0 kernels not built or not run" "$T/out.txt" || fail "summary line"

# launch errors
cat >"$T/e.yaml" <<'EOS'
hkgen: 1
kernels:
  - op: gemm
    name: f8e
    target: gfx950
    dtype: fp8_e4m3
    scale: [row, block]
EOS
run_hk "$T/build.txt" build --emulate -q "$T/e.yaml" -o "$T/ecat"
expect_rc 0 "hkgen build --emulate (launch-error kernels)"
PYTHONPATH=$TOP/runtime/python HKRT_LIB=$TOP/build/libhkrt.so python3 - "$T/ecat" >"$T/py.txt" 2>&1 <<'EOP' || { cat "$T/py.txt"; fail "launch errors"; }
import sys
import hkrt
cat = hkrt.Catalog(sys.argv[1], backend="emu", target="gfx950")


class P:  # a device address that is never dereferenced: packing only
    def data_ptr(self):
        return 4096


def args(**v):
    d = dict(A=P(), B=P(), C=P(), scale_a=P(), scale_b=P(), lda=256, ldb=256, ldc=64, M=64, N=64, K=256)
    d.update(v)
    return d


good = {"f8e_row": dict(scale_a_rows=64, scale_a_cols=1, scale_b_rows=64, scale_b_cols=1),
        "f8e_block": dict(scale_a_rows=2, scale_a_cols=64, scale_b_rows=1, scale_b_cols=2)}
cases = [("f8e_row", dict(scale_a_rows=65), "scale_a is M x 1"),
         ("f8e_row", dict(scale_b_cols=2), "scale_b is N x 1"),
         ("f8e_block", dict(scale_a_cols=63), "scale_a is K/128 x M"),
         ("f8e_block", dict(scale_b_rows=2), "scale_b is cdiv(N,128) x K/128"),
         ("f8e_block", dict(K=200, lda=256, ldb=256), "K must be a multiple of 128")]
for name, g in good.items():
    cat.kernel(name, "gfx950").pack(args(**g))  # the right shapes pack
for name, bad, want in cases:
    v = dict(good[name])
    v.update(bad)
    try:
        cat.kernel(name, "gfx950").pack(args(**v))
    except hkrt.HkrtError as e:
        if want not in str(e):
            sys.exit("%s %s: the message lacks %r: %s" % (name, bad, want, e))
        print("refused:", e)
        continue
    sys.exit("%s %s: packed, not refused" % (name, bad))
EOP
cat "$T/py.txt"
[ "$(grep -c '^refused:' "$T/py.txt")" -eq 5 ] || fail "not 5 launches refused"
echo "ok: $EXPECTED_RUNS fp8 GEMM runs PASS; 5 bad scale launches refused"
