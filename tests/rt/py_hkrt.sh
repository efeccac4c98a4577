# py_hkrt.sh (CTest rt_python): runtime/python/hkrt.py over libhkrt.so on an
# emulated catalogue (py_hkrt.py says what is checked).
RT_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$RT_DIR/../.." && pwd)
HKGEN=${HKGEN:-$ROOT/build/hkgen}
. "$RT_DIR/../lib/lib.sh"
command -v python3 >/dev/null || fail "python3 is missing (make deps installs it)"
run_hk "$T/build.txt" build --emulate --target gfx942 "$RT_DIR/gemm.yaml" -o "$T/cat"
expect_rc 0 "hkgen build --emulate"
python3 "$RT_DIR/py_hkrt.py" "$T/cat" "$ROOT/build/libhkrt.so" "$ROOT/runtime/python" || fail "py_hkrt.py"
