#!/usr/bin/env bash
# Prepares hkgen's H200 device suite HERE (the machine with nvcc and libyaml):
# builds build/libhkrt.so and build/hkgen with make, builds the sm_90a
# catalogue of tests/device/h200.yaml into build/h200cat, then prints the
# device `run` call that executes tests/device/check_bench.py THERE (the H200
# image has no libyaml or m4, so nothing is built there).
#
#   tests/device/run_h200.sh          from the working tree (build/, as above)
#   tests/device/run_h200.sh --head   from a clean export of HEAD (git archive)
#                                     into build/h200snap/, for when the tree
#                                     is mid-edit: libhkrt.so, hkrt.py and the
#                                     catalogue then all come from HEAD (the
#                                     spec and check_bench.py from this tree)
# The device run writes its log to $OUT/h200.log (build/device-logs/ when $OUT
# is unset). Logs are not committed: the figures go into docs/PERF.md.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
commit=$(git rev-parse --short HEAD)
if [ "${1:-}" = "--head" ]; then
    snap=build/h200snap
    rm -rf "$snap" && mkdir -p "$snap/src"
    git archive HEAD | tar -x -C "$snap/src"
    make -C "$snap/src" build/hkgen build/libhkrt.so
    mkdir -p "$snap/python"
    cp "$snap/src/build/libhkrt.so" "$snap/libhkrt.so"
    cp "$snap/src/runtime/python/hkrt.py" "$snap/python/"
    "$snap/src/build/hkgen" build --target sm_90a tests/device/h200.yaml -o "$snap/h200cat"
    lib=$snap/libhkrt.so py=$snap/python cat=$snap/h200cat
    tag="$commit (clean export of HEAD; tests/device/* from the working tree)"
    carry="[\"$lib\", \"$py\", \"$cat\"]"
    hkc=$commit
else
    make build/hkgen build/libhkrt.so
    ./build/hkgen build --target sm_90a tests/device/h200.yaml -o build/h200cat
    lib=build/libhkrt.so py=runtime/python cat=build/h200cat
    dirty=$(git status --porcelain | grep -q . && echo "+dirty" || true)
    tag="$commit$dirty"
    carry="[\"$lib\", \"$cat\"]"
    hkc=$commit$dirty
fi
echo
echo "catalogue: $cat ($(grep -c '"kernarg"' "$cat/manifest.json") kernels), commit $tag"
echo "device call (tool run, kind nvidia-h200, timeout_s 600):"
cat <<EOC
  carry:   $carry
  command: set -o pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=$py HKRT_LIB=$lib HK_COMMIT=$hkc; nvidia-smi -L; python3 tests/device/check_bench.py $cat 2>&1 | tee \$OUT/h200.stdout
EOC
