#!/bin/sh
# build_fp8: the fp8 tile primitives of hk_cdna.h compile with clang-22 for
# gfx942 and gfx950 to the instructions they name (llvm-objdump-22: the four
# v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8}, v_cvt_pk_{fp8,bf8}_f32,
# v_cvt_pk_f32_{fp8,bf8}, v_cvt_f32_{fp8,bf8}, the saturating v_med3_f32, and
# the 8- and 16-byte loads of hk_global_load_b64/b128),
# and the same source compiles for the emulator (hk_emu.h). A format the target
# lacks is a compile error that names it: OCP on gfx942, FNUZ on gfx950, any
# fp8 on gfx90a, on the GPU and in the emulator alike.
. "$(dirname "$0")/../lib/lib.sh"
src=$TESTS_DIR/pipeline/fp8_prims.hip
CC=${HKGEN_CLANG:-clang-22}
dev() { # TARGET OUT [FLAGS...]: device object
  t=$1 o=$2
  shift 2
  "$CC" -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch="$t" -nogpulib -O3 -std=c++17 \
    -nogpuinc -Wall -Wextra -Werror -I"$TOP/templates/include" "$@" -c "$src" -o "$o"
}
emu() { # ARCH OUT [FLAGS...]: emulator module
  a=$1 o=$2
  shift 2
  "$CC" -x c++ -std=c++17 -O2 -fPIC -shared -Wall -Wextra -Werror -DHK_EMULATE -DHK_EMU_ARCH="$a" \
    -I"$TOP/runtime/include" "$@" "$src" -o "$o"
}
for t in gfx942 gfx950; do
  dev "$t" "$T/$t.o" >"$T/log" 2>&1 || { cat "$T/log"; fail "fp8_prims.hip does not compile for $t"; }
  llvm-objdump-22 -d --no-show-raw-insn --mcpu="$t" "$T/$t.o" >"$T/$t.dis" 2>&1 ||
    fail "llvm-objdump-22 failed on the $t object"
  for insn in v_mfma_f32_32x32x16_fp8_fp8 v_mfma_f32_32x32x16_fp8_bf8 v_mfma_f32_32x32x16_bf8_fp8 \
    v_mfma_f32_32x32x16_bf8_bf8 v_cvt_pk_fp8_f32 v_cvt_pk_bf8_f32 v_cvt_pk_f32_fp8 v_cvt_pk_f32_bf8 \
    v_cvt_f32_fp8 v_cvt_f32_bf8 v_med3_f32 global_load_dwordx2 global_load_dwordx4; do
    grep -q "^[[:space:]]*$insn\(_e32\|_e64\|_sdwa\)\?[[:space:]]" "$T/$t.dis" || fail "$t: no $insn in the object"
  done
  echo "ok   $t: fp8 primitives compile to the fp8/bf8 MFMAs and conversions"
done
for a in 3 4; do
  emu "$a" "$T/emu$a.so" >"$T/log" 2>&1 || { cat "$T/log"; fail "fp8_prims.hip does not compile for the emulator (HK_EMU_ARCH=$a)"; }
done
echo "ok   fp8 primitives compile for the emulator (gfx942, gfx950)"
# expect_refused WHAT WANT CMD...: CMD fails, and its errors include WANT
expect_refused() {
  what=$1 want=$2
  shift 2
  if "$@" >"$T/log" 2>&1; then fail "$what compiled"; fi
  grep -q "$want" "$T/log" || { cat "$T/log"; fail "$what: no error '$want'"; }
}
expect_refused "gfx942 with E4M3_OCP" "hk_fp8_to_f32_E4M3_OCP' is unavailable: hk_cdna.h: gfx942 has the FNUZ" \
  dev gfx942 "$T/x.o" -DFP8_ASK=E4M3_OCP
expect_refused "gfx950 with E5M2_FNUZ" "hk_fp8_to_f32_E5M2_FNUZ' is unavailable: hk_cdna.h: gfx950 has the OCP" \
  dev gfx950 "$T/x.o" -DFP8_ASK=E5M2_FNUZ
expect_refused "gfx90a with fp8" "is unavailable: hk_cdna.h: gfx90a has no fp8" dev gfx90a "$T/x.o"
expect_refused "emulated gfx942 with E5M2_OCP" "hk_fp8_to_f32_E5M2_OCP' is unavailable: hk_cdna.h: gfx942 has the FNUZ" \
  emu 3 "$T/x.so" -DFP8_ASK=E5M2_OCP
expect_refused "emulated gfx950 with E4M3_FNUZ" "hk_fp8_to_f32_E4M3_FNUZ' is unavailable: hk_cdna.h: gfx950 has the OCP" \
  emu 4 "$T/x.so" -DFP8_ASK=E4M3_FNUZ
expect_refused "emulated gfx90a with fp8" "is unavailable: hk_cdna.h: gfx90a has no fp8" emu 2 "$T/x.so"
echo "ok   a format the target lacks is a compile error naming it (gfx942, gfx950, gfx90a; GPU and emulator)"
