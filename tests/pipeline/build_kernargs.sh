#!/bin/sh
# build_kernargs: the kernel-argument layout is checked against the compiler.
# A copy of templates/ whose kernel takes one more parameter than the plan's
# struct fails the build, naming the kernel and both sizes (comgr's .args for
# gfx90a, clang's code object for gfx942, the cubin for sm_90a when nvcc is
# there); one that packs the struct differently trips the sources' own
# static_asserts; the real templates build with neither.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # compilers dominate; ASan adds nothing here
cat >"$T/spec.yaml" <<'SPEC'
hkgen: 1
defaults:
  dtype: bf16
kernels:
  - op: gemm
    name: g
    layout: nt
SPEC
targets=gfx942,gfx90a
NVCC=${HKGEN_NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$NVCC" ] || command -v nvcc >/dev/null 2>&1; then targets=$targets,sm_90a; fi

run_hk "$T/ok" build -q --no-cache --target "$targets" "$T/spec.yaml" -o "$T/cat0"
expect_rc 0 "the real templates"
grep -q "static_assert(sizeof(struct hk_args) == 48" "$T/cat0/gfx942/g.hip" || fail "no size assert in g.hip"
grep -q "static_assert(__builtin_offsetof(struct hk_args, K) == 44" "$T/cat0/gfx942/g.hip" || fail "no offset assert for K"

# one parameter more: the struct still matches the plan, the kernel does not
cp -r "$TOP/templates" "$T/extra"
sed -i 's/struct hk_args hk_a)$/struct hk_args hk_a, int hk_extra)/' "$T/extra/hk.m4"
grep -q 'int hk_extra)' "$T/extra/hk.m4" || fail "hk.m4: the kernel signature to alter is not there"
HKGEN_TEMPLATES=$T/extra run_hk "$T/out1" build -q --no-cache --target "$targets" "$T/spec.yaml" -o "$T/cat1"
expect_rc 1 "a kernel with an extra parameter"
for t in $(echo "$targets" | tr , ' '); do
  case $t in sm_90a) plan=448 ;; *) plan=48 ;; esac # sm_90a: tensor maps of A, B and C (epilogue tma)
  grep -q "kernel g for $t: the compiler laid out [0-9]* bytes of kernel arguments, the plan $plan" "$T/out1" || {
    head -c 3000 "$T/out1" >&2
    fail "$t: no kernel-argument size error"
  }
done
grep -q "kernel g for gfx942: the compiler laid out 52 bytes" "$T/out1" || fail "gfx942: expected 52 bytes (48 + an int)"

# wider ints in the struct: offsets and size differ from the plan's layout
cp -r "$TOP/templates" "$T/wide"
sed -i 's/^hkm_kernarg_struct$/#define int long\nhkm_kernarg_struct\n#undef int/' "$T/wide/hk.m4"
grep -q '^#define int long' "$T/wide/hk.m4" || fail "hk.m4: hkm_kernarg_struct line not found"
HKGEN_TEMPLATES=$T/wide run_hk "$T/out2" build -q --no-cache --target gfx942 "$T/spec.yaml" -o "$T/cat2"
expect_rc 1 "an argument struct of other types"
grep -q "kernel argument ldb at offset 28" "$T/out2" || { head -c 3000 "$T/out2" >&2; fail "no static_assert about ldb's offset"; }
# (the size's assert comes last, past the part of clang's log hkgen shows)
echo "ok: $targets"
