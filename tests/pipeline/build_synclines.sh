#!/bin/sh
# build_synclines: a compiler error in a template names the template line
# (templates/<file>.m4:LINE), through the #line directives of the generated
# source. A copy of templates/ gets an undeclared identifier on a known line
# of gemm.hip.m4 (clang for gfx942, comgr for gfx90a) and, when nvcc is
# there, of attn_fwd.sm90.hip.m4, and of attn_common.m4 (a file the attention
# skeletons include; gfx942); the message must name exactly that line.
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen # compilers dominate; ASan adds nothing here
cp -r "$TOP/templates" "$T/tpl"
export HKGEN_TEMPLATES="$T/tpl"

# break_at FILE ANCHOR: inserts a bad statement on the line below ANCHOR (a
# whole line inside a function body); prints that line's number.
break_at() {
  a=$(grep -n -x -F "$2" "$T/tpl/$1" | head -1 | cut -d: -f1)
  [ -n "$a" ] || fail "$1: no line '$2' to break"
  sed -i "$((a + 1))i\\    int hk_broken_line = hk_no_such_name;" "$T/tpl/$1"
  echo $((a + 1))
}

# below the kernel's opening: after every multi-line expansion (banner, tile
# header, struct, bindings) and the template's own conditionals
g=$(break_at gemm.hip.m4 ']hkm_kernel_begin()[')
cat >"$T/spec.yaml" <<'SPEC'
hkgen: 1
defaults:
  dtype: bf16
kernels:
  - op: gemm
    name: g
    layout: nt
    tile_m: 64
    tile_n: 64
SPEC

# expect_line OUT FILE LINE WHAT: the message names FILE:LINE (clang) or
# FILE(LINE) (nvcc), never another line of it, and no absolute path.
expect_line() {
  grep -q "hk_no_such_name" "$1" || { head -c 3000 "$1" >&2; fail "$4: no error about the broken line"; }
  grep -q -e "templates/$2:$3:" -e "templates/$2($3)" "$1" || { head -c 3000 "$1" >&2; fail "$4: the error does not name templates/$2:$3"; }
  if grep -E "templates/$2(:|\()[0-9]+" "$1" | grep -v -q -e "templates/$2:$3:" -e "templates/$2($3)"; then
    head -c 3000 "$1" >&2
    fail "$4: a message names another line of $2"
  fi
  grep -q "$T/tpl/$2" "$1" && fail "$4: the message names the template copy's absolute path"
  return 0
}

run_hk "$T/out1" build -q --no-cache --target gfx942 "$T/spec.yaml" -o "$T/cat1"
expect_rc 1 "broken gemm.hip.m4, gfx942"
expect_line "$T/out1" gemm.hip.m4 "$g" "clang, gfx942"

run_hk "$T/out2" build -q --no-cache --target gfx90a "$T/spec.yaml" -o "$T/cat2"
if grep -q "hk_no_such_name" "$T/out2"; then
  expect_line "$T/out2" gemm.hip.m4 "$g" "comgr, gfx90a"
else
  echo "note: gfx90a not compiled here (no comgr?): $(head -c 200 "$T/out2")"
fi

# a file the skeleton includes (attn_common.m4) names its own lines
c=$(break_at attn_common.m4 '    const int diag = Sk - Sq;')
cat >"$T/attn_amd.yaml" <<'SPEC'
hkgen: 1
defaults:
  dtype: bf16
kernels:
  - op: attn_fwd
    name: aa
    head_dim: 64
    causal: false
SPEC
run_hk "$T/out5" build -q --no-cache --target gfx942 "$T/attn_amd.yaml" -o "$T/cat5"
expect_rc 1 "broken attn_common.m4, gfx942"
expect_line "$T/out5" attn_common.m4 "$c" "clang, gfx942, included file"

NVCC=${HKGEN_NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$NVCC" ] || command -v nvcc >/dev/null 2>&1; then
  s=$(break_at attn_fwd.sm90.hip.m4 '    const int warp = hk_wave_id();')
  cat >"$T/attn.yaml" <<'SPEC'
hkgen: 1
defaults:
  dtype: bf16
  target: sm_90a
kernels:
  - op: attn_fwd
    name: a
    head_dim: 128
    causal: false
SPEC
  run_hk "$T/out3" build -q --no-cache "$T/attn.yaml" -o "$T/cat3"
  expect_rc 1 "broken attn_fwd.sm90.hip.m4, sm_90a"
  expect_line "$T/out3" attn_fwd.sm90.hip.m4 "$s" "nvcc, sm_90a"
else
  echo "note: no nvcc, sm_90a not checked"
fi

# the unbroken sources carry no absolute path in their directives
run_hk "$T/out4" gen --target gfx942,sm_90a "$TOP/specs/gemm-any.yaml" -o "$T/gen"
expect_rc 0 "hkgen gen"
grep -h '^#line' -r "$T/gen" | grep -v -E '^#line [0-9]+ "(templates/[a-z0-9_./]+|[a-z0-9_]+\.hip)"$' &&
  fail "a #line directive names something other than templates/... or the source itself"
echo "ok: gemm.hip.m4:$g, attn_common.m4:$c${s:+, attn_fwd.sm90.hip.m4:$s}"
