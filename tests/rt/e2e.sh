# e2e.sh (CTest rt_emu_e2e): an emulated catalogue end to end through libhkrt's
# public API. `hkgen build --emulate --target gfx942,gfx950` builds run-time GEMMs
# (nt, nn) and one with N and K baked; rt_catalog e2e then opens the
# catalogue, selects a kernel per problem, launches GEMMs at odd shapes on
# fresh random inputs with poisoned outputs, and compares with fp64.
# Before `--emulate` existed the catalogue was built by hand: `hkgen gen`, each
# source compiled as tests/Makefile's EMU_KCC does, sources.json rewritten.
RT_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$RT_DIR/../.." && pwd)
# hkgen-asan when it is there and as new as hkgen (it is built by `make test` only)
if [ -z "${HKGEN:-}" ]; then
  HKGEN=$ROOT/build/hkgen
  for h in "$ROOT/build/hkgen-asan" "$ROOT/build/hkgen"; do
    if [ -x "$h" ] && "$h" --help 2>&1 | grep -q -- '--emulate'; then HKGEN=$h; break; fi
  done
fi
. "$RT_DIR/../lib/lib.sh"


if "$HKGEN" --help 2>&1 | grep -q -- '--emulate'; then
  run_hk "$T/build.txt" build --emulate --target gfx942,gfx950 "$RT_DIR/gemm.yaml" -o "$T/cat"
  expect_rc 0 "hkgen build --emulate"
else
  echo "hkgen has no --emulate: building the emulated catalogue by hand"
  run_hk "$T/build.txt" gen --target gfx942 "$RT_DIR/gemm.yaml" -o "$T/cat"
  expect_rc 0 "hkgen gen"
  for src in "$T"/cat/gfx942/*.hip; do
    ${EMU_CXX:-clang-22} -x c++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -DHK_EMULATE \
      -DHK_EMU_ARCH=3 -I"$ROOT/runtime/include" -o "${src%.hip}.emu.so" "$src" || fail "host build of $src"
  done
  python3 - "$T/cat/sources.json" "$T/cat/manifest.json" <<'PY' || fail "cannot turn sources.json into a manifest"
import json, sys
m = json.load(open(sys.argv[1]))
m["kind"], m["backend"] = "catalogue", "emulator"
for k in m["kernels"]:
    k["file"] = k["source"][: -len(".hip")] + ".emu.so"
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
fi
[ "$(jsonq "$T/cat/manifest.json" backend)" = emulator ] || fail "the manifest does not say \"backend\": \"emulator\""
"$RT_DIR/../build/rt_catalog" e2e "$T/cat" || fail "rt_catalog e2e"
