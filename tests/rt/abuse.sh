# abuse.sh (CTest rt_abuse): arguments no kernel can serve, refused before
# launch with the rule that fails (the manifest's "checks", written by each
# op's descriptor): tests/rt/abuse.yaml built with --emulate, then
# rt_catalog abuse. Then code objects that are not the manifest's: changed,
# truncated, or reached through a symbolic link (in or out of the folder),
# each refused at load with the process alive (rt_catalog load). Then six
# threads on one emulated device (rt_catalog threads), and eight under
# ThreadSanitizer (rt_tsan). Last, a program linked without libm runs an
# emulated attention kernel (rt_nolibm).
RT_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$RT_DIR/../.." && pwd)
HKGEN=${HKGEN:-$ROOT/build/hkgen}
. "$RT_DIR/../lib/lib.sh"
run_hk "$T/build.txt" build --emulate --target gfx942 "$RT_DIR/abuse.yaml" -o "$T/cat"
expect_rc 0 "hkgen build --emulate"
"$RT_DIR/../build/rt_catalog" abuse "$T/cat" || fail "rt_catalog abuse"
RC="$RT_DIR/../build/rt_catalog"
obj="$T/cat/gfx942/ab_gemm.emu.so"
"$RC" load "$T/cat" - || fail "the unchanged catalogue"
cp "$obj" "$T/good.so"
printf 'x' >>"$obj"
"$RC" load "$T/cat" "does not match the manifest's sha256" || fail "a changed object was loaded"
head -c 1000 "$T/good.so" >"$obj"
"$RC" load "$T/cat" "does not match the manifest's sha256" || fail "a truncated object was loaded"
rm "$obj" && ln -s "$T/good.so" "$obj"
"$RC" load "$T/cat" "a symbolic link" || fail "an object linked from outside the folder was loaded"
rm "$obj" && cp "$T/good.so" "$obj" && mv "$T/cat/gfx942" "$T/real942" && ln -s "$T/real942" "$T/cat/gfx942"
"$RC" load "$T/cat" "a symbolic link" || fail "a linked target folder was followed"
rm "$T/cat/gfx942" && mv "$T/real942" "$T/cat/gfx942"
"$RC" load "$T/cat" - || fail "the restored catalogue"
"$RC" threads "$T/cat" || fail "threads sharing one emulated device"
"$RT_DIR/../build/rt_tsan" "$T/cat" || fail "rt_tsan: a data race between threads on one device and catalogue"
"$RT_DIR/../build/rt_nolibm" "$T/cat" || fail "a program without libm could not run an emulated attention kernel"
