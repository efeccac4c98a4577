#!/bin/sh
# hk_anchors_build.sh HK_DIR HK_CDNA3_DIR HIP_ROOT OUT_DIR: compiles the HipKittens kernels
# whose published MI355X / MI325X figures calibrate `hkgen inspect --estimate`
# (docs/MODEL.md), device code only, with clang-22, one object per kernel and
# problem, named as tools/calibrate.py expects.
#   HK_DIR   a checkout of HazyResearch/HipKittens (main, f09e968)
#   HK_CDNA3_DIR  its `cdna3` branch (the MI325X GEMM needs that branch's include/)
#   HIP_ROOT a folder laid out as a ROCm install for clang's --rocm-path:
#            include/hip (ROCm/HIP include/hip + ROCm/clr hipamd/include/hip,
#            a hip_version.h), include/rocrand (ROCm/rocRAND library/include),
#            amdgcn/bitcode (Debian's rocm-device-libs; oclc_isa_version_942/950
#            copied from 940), bin/.hipVersion
# HipKittens' Python glue is replaced by tools/hk_pyutils_stub/ (it only
# instantiates the bound kernels). Not part of CI: it needs HipKittens.
set -eu
hk=$1 hk3=$2 root=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
hk_cc() { # SRC OUT ARCH FLAGS...
  src=$1 obj=$2 arch=$3
  shift 3
  case $arch in
    gfx950) def="-DKITTENS_CDNA4 -DHIP_ENABLE_WARP_SYNC_BUILTINS -ffast-math" inc=$hk/include ;;
    *) def="-DKITTENS_CDNA3" inc=$hk3/include ;;
  esac
  [ -f "$out/$obj" ] && return 0
  # shellcheck disable=SC2086
  clang-22 -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch="$arch" -O3 -std=c++20 -w \
    -Wno-invalid-constexpr --rocm-path="$root" -I"$root/include/hip" -I"$root/include/rocrand" \
    -I"$here/hk_pyutils_stub" -I"$inc" -I"$(dirname "$src")" -D__HIP_PLATFORM_AMD__ \
    -mcode-object-version=5 -D__AMDGCN_WAVEFRONT_SIZE=64 $def "$@" "$src" -o "$out/$obj" || {
    echo "FAILED $obj" >&2
    return 0
  }
  echo "built $obj"
}
fwd=$hk/analysis/attn/fwd/benchmark
for n in 1024 4096 16384; do
  b=16; [ $n = 16384 ] && bg=15 || bg=16
  hk_cc $fwd/attn_fwd_non_causal.cpp attn_gqa_d128_n$n.hsaco gfx950 -DATTN_B=$bg -DATTN_H=64 -DATTN_H_KV=8 -DATTN_N=$n
  hk_cc $fwd/attn_fwd_causal.cpp attn_gqa_d128_causal_n$n.hsaco gfx950 -DATTN_B=$bg -DATTN_H=64 -DATTN_H_KV=8 -DATTN_N=$n
  hk_cc $fwd/attn_fwd_non_causal.cpp attn_mha_d128_n$n.hsaco gfx950 -DATTN_B=$b -DATTN_H=16 -DATTN_H_KV=16 -DATTN_N=$n
  # HipKittens' MHA causal 16K run is batch 15 too (1188 TFLOP/s at 13.89 ms); its non-causal one 16
  hk_cc $fwd/attn_fwd_causal.cpp attn_mha_d128_causal_n$n.hsaco gfx950 -DATTN_B=$bg -DATTN_H=16 -DATTN_H_KV=16 -DATTN_N=$n
  hk_cc $fwd/attn_fwd_non_causal_d64.cpp attn_gqa_d64_n$n.hsaco gfx950 -DATTN_B=$bg -DATTN_H=64 -DATTN_H_KV=8 -DATTN_N=$n -DATTN_D=64
  hk_cc $fwd/attn_fwd_causal_d64.cpp attn_gqa_d64_causal_n$n.hsaco gfx950 -DATTN_B=$bg -DATTN_H=64 -DATTN_H_KV=8 -DATTN_N=$n -DATTN_D=64
done
for n in 1024 2048 4096 8192 16384; do
  hk_cc $hk/analysis/bf16_gemm/mi350x/kernel_$n.cpp gemm_mi355x_n$n.hsaco gfx950
  hk_cc $hk3/analysis/bf16_gemm/mi325x/kernel_$n.cpp gemm_mi325x_n$n.hsaco gfx942
done
for n in 1024 4096 16384; do
  hk_cc $hk/analysis/layernorm/mi350x/kernel_$n.cpp layernorm_n$n.hsaco gfx950
  hk_cc $hk/analysis/rotary/mi350x/kernel_$n.cpp rotary_n$n.hsaco gfx950
done
