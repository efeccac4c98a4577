#!/bin/sh
# build_gemm_fp8: the fp8 GEMM kernels compile for their targets. AMD: the
# three scale modes at 8192^3 for gfx942 (FNUZ) and gfx950 (OCP) build with
# clang-22 without spills, an fp8 MFMA hot loop each, and `hkgen inspect
# --estimate` gives each an estimate. sm_90a: tests/device/h200_fp8.yaml
# (every dtype, mode and output) builds with nvcc, no spills, tensor maps of
# 1-byte elements. The bf16 kernels of the same specs keep their skeleton.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # the compilers dominate; ASan adds nothing here
# fp8_e4m3 is OCP (gfx950), fp8_e5m2_fnuz FNUZ (gfx942): a spec each, as
# --target would ask each target for the other's encoding too
for t in gfx950:fp8_e4m3:fp8_fp8 gfx942:fp8_e5m2_fnuz:bf8_bf8; do
  tgt=${t%%:*} rest=${t#*:}
  dt=${rest%%:*} mf=${rest#*:}
  cat >"$T/$tgt.yaml" <<SPEC
hkgen: 1
kernels:
  - op: gemm
    name: f8
    dtype: $dt
    scale: [tensor, row, block]
    M: 8192
    N: 8192
    K: 8192
SPEC
  expect_mfma_build "$tgt" "$T/$tgt.yaml" "$T/$tgt" gemm 3 "$tgt fp8 GEMM"
  [ "$(grep -c " v_mfma_f32_32x32x16_$mf" "$T/inspect")" -eq 3 ] || fail "not 3 $mf MFMA loops on $tgt"
done
for t in gfx950:MI355X gfx942:MI325X; do
  run_hk "$T/est" inspect "$T/${t%%:*}" --estimate "${t#*:}"
  expect_rc 0 "hkgen inspect --estimate ${t#*:}"
  [ "$(grep -c 'TFLOP/s' "$T/est")" -eq 3 ] || fail "not 3 fp8 estimates for ${t#*:}"
done
run_hk "$T/out" build -q --target sm_90a "$TESTS_DIR/device/h200_fp8.yaml" -o "$T/sm90"
expect_rc 0 "hkgen build --target sm_90a tests/device/h200_fp8.yaml"
m=$T/sm90/manifest.json
n=$(jsonq -c "$m" 'kernels.*')
[ "$n" -eq 31 ] || fail "$n sm_90a fp8 kernels, expected 31"
[ "$(jsonq -c "$m" 'kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]')" -eq "$n" ] || fail "an sm_90a fp8 kernel spills"
[ "$(jsonq -c "$m" 'kernels.*.kernarg.args[name=A][type=const hk_fp8 *]')" -eq "$n" ] || fail "A is not an fp8 pointer"
[ "$(jsonq -c "$m" 'kernels.*.kernarg.args[name=tmap_b]')" -eq "$n" ] || fail "a kernel lacks tmap_b"
grep -q 'wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." #F' "$TOP/templates/include/hk_sm90.h" || fail "hk_sm90.h lacks the fp8 wgmma"
echo "ok: 3 + 3 AMD fp8 GEMMs at 8192^3 and $n sm_90a fp8 GEMMs build without spills"
