# jobs.sh (CTest emu_jobs): `hkgen test -j N` runs kernels on N emulated
# devices at once and prints the same rows, in the same order, as -j 1 with
# the same seed; `hkgen test --device` on a machine without a GPU says so
# (status 1) and names both backends it tried.
. "$(dirname "$0")/../lib/lib.sh"
spec=$TESTS_DIR/rt/gemm.yaml
run_hk "$T/j1.txt" test -j 1 --seed 12345 --target gfx942,gfx950 "$spec"
expect_rc 0 "hkgen test -j 1"
run_hk "$T/j3.txt" test -j 3 --seed 12345 --target gfx942,gfx950 "$spec"
expect_rc 0 "hkgen test -j 3"
grep -q ", 3 workers$" "$T/j3.txt" || fail "hkgen test -j 3 does not say it ran 3 workers"
rows() { grep -E ' (PASS|FAIL)' "$1"; }
[ "$(rows "$T/j1.txt" | wc -l)" -ge 10 ] || fail "too few runs in hkgen test -j 1"
rows "$T/j1.txt" >"$T/r1"
rows "$T/j3.txt" >"$T/r3"
cmp -s "$T/r1" "$T/r3" || { diff "$T/r1" "$T/r3" >&2; fail "-j 3 printed other rows than -j 1 with the same seed"; }
if ! ls /dev/nvidia0 /dev/kfd >/dev/null 2>&1; then
  run_hk "$T/dev.txt" test --device "$spec"
  expect_rc 1 "hkgen test --device without a GPU"
  grep -q "no GPU here (CUDA: .*; HIP: " "$T/dev.txt" || fail "hkgen test --device: no clear message without a GPU"
else
  echo "this machine has a GPU: the no-GPU message of --device is not checked here"
fi
run_hk "$T/ds.txt" test --device --stats "$spec"
expect_rc 2 "hkgen test --device --stats"
echo "emu_jobs: $(rows "$T/j1.txt" | wc -l) runs alike at -j 1 and -j 3"
