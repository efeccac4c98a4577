# py_torchops.sh (CTest rt_torchops): the torch-free part of hkrt.py's torch
# ops (argument checks, hkrt_select, launch arguments, bound launches) on an
# emulated catalogue; py_torchops.py says what is checked.
RT_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$RT_DIR/../.." && pwd)
HKGEN=${HKGEN:-$ROOT/build/hkgen}
. "$RT_DIR/../lib/lib.sh"
command -v python3 >/dev/null || fail "python3 is missing (make deps installs it)"
run_hk "$T/build.txt" build --emulate --target gfx942 "$RT_DIR/torchops.yaml" -o "$T/cat"
expect_rc 0 "hkgen build --emulate"
python3 "$RT_DIR/py_torchops.py" "$T/cat" "$ROOT/build/libhkrt.so" "$ROOT/runtime/python" || fail "py_torchops.py"
