#!/bin/sh
# escape_cli.sh: user text that looks like m4 never runs as m4.
# 1. A spec whose file name holds m4_syscmd(touch PWNED), brackets, quotes
#    and $1 (and one holding hk_fatal(...)) goes through `hkgen gen` (m4 only):
#    status 0, the generated banner shows the name verbatim, no PWNED file.
# 2. A value N: "m4_esyscmd(touch PWNED2)" is refused with status 2.
. "$(dirname "$0")/../lib/lib.sh"

cd "$T"
cat >spec.txt <<'YAML'
kernels:
  - op: gemm
    name: evil_gemm
    N: 64
    K: 64
    target: gfx942
YAML

gen_named() { # FILE-NAME: runs hkgen gen on a copy of spec.txt named so
  name=$1
  rm -rf out
  cp spec.txt "$name"
  run_hk "$T/gen.out" gen -o out "$name"
  expect_rc 0 "hkgen gen on a spec named $name"
  hip=out/gfx942/evil_gemm.hip
  [ -f "$hip" ] || fail "$hip was not written (spec named $name)"
  banner=$(grep -m1 '^// spec: ' "$hip" || true)
  base=$(basename "$name")
  [ "$banner" = "// spec: $base:2" ] || fail "banner of $hip is '$banner', expected '// spec: $base:2' (the entry is on line 2)"
  # Outside the banner's spec line (the user's text), no macro word remains.
  if grep -v '^// spec: ' "$hip" | grep -q 'm4_\|hkm_'; then
    fail "$hip holds an m4_/hkm_ word: $(grep -n 'm4_\|hkm_' "$hip" | grep -v ':// spec: ' | head -3)"
  fi
  [ -f out/sources.json ] || fail "hkgen gen wrote no sources.json"
  for f in PWNED "$TESTS_DIR/PWNED" out/PWNED; do
    [ ! -e "$f" ] || fail "$f exists: m4 ran a command named in the spec's file name"
  done
  echo "ok   spec named $name"
}

gen_named 'm4_syscmd(touch PWNED)[x]'"'"'q"$1@{m4_dnl}.yaml'
gen_named 'hk_fatal([boom])hkm_banner$@.yaml'
gen_named 'm4_esyscmd(touch PWNED).yaml'

printf 'kernels:\n  - op: gemm\n    N: "m4_esyscmd(touch PWNED2)"\n    target: gfx942\n' >value.yaml
run_hk "$T/val.out" gen -o out2 value.yaml
expect_rc 2 "a spec value holding m4_esyscmd"
want="value.yaml:3:8: error: bad value 'm4_esyscmd(touch PWNED2)' for 'N'; allowed: an integer in [1, 2147483647], or any (run-time argument)"
grep -qxF "$want" "$T/val.out" || fail "expected the line: $want; got: $(cat "$T/val.out")"
[ ! -e PWNED2 ] || fail "PWNED2 exists: a spec value ran as m4"
[ ! -e out2/manifest.json ] && [ ! -e out2/sources.json ] || fail "a refused spec left a manifest in out2"
echo "ok   value m4_esyscmd(...) refused"
