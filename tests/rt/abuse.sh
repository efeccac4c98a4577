# abuse.sh (CTest rt_abuse): arguments no kernel can serve, refused before
# launch with the rule that fails (the manifest's "checks", written by each
# op's descriptor): tests/rt/abuse.yaml built with --emulate, then
# rt_catalog abuse.
RT_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$RT_DIR/../.." && pwd)
HKGEN=${HKGEN:-$ROOT/build/hkgen}
. "$RT_DIR/../lib.sh"
run_hk "$T/build.txt" build --emulate --target gfx942 "$RT_DIR/abuse.yaml" -o "$T/cat"
expect_rc 0 "hkgen build --emulate"
"$RT_DIR/../build/rt_catalog" abuse "$T/cat" || fail "rt_catalog abuse"
