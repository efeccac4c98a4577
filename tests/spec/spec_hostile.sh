#!/bin/sh
# spec_hostile.sh: generated hostile specs (deep nesting, huge files, NUL,
# invalid UTF-8, node and key floods) are refused with status 2 and a precise
# file:line:col, each within 30 s under ASan (about 2 s of CPU on the project's
# 2-core machine: the bound catches blow-ups, with room for a loaded machine).
. "$(dirname "$0")/../lib/lib.sh"

failures=0
bad() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# hostile NAME WANT_STATUS EXPECTED_LINE_OR_EMPTY: checks $T/NAME.yaml
hostile() {
  f=$T/$1.yaml
  rc=0
  start=$(date +%s)
  timeout 30 "$HKGEN" check "$f" >"$T/out" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  if [ "$rc" = 124 ]; then bad "$1: hkgen check did not finish within 30 s"; return; fi
  if [ "$rc" != "$2" ]; then bad "$1: exit status $rc, expected $2: $(head -c 600 "$T/out")"; return; fi
  if grep -q 'runtime error:\|AddressSanitizer\|LeakSanitizer' "$T/out"; then bad "$1: sanitizer report"; return; fi
  if [ -n "$3" ] && ! grep -qxF -- "$f$3" "$T/out"; then
    bad "$1: expected the line '$f$3', got: $(head -c 600 "$T/out")"
    return
  fi
  echo "ok   $1 (${secs} s)"
}

repeat() { # COUNT TEXT: TEXT COUNT times, no newline
  awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'
}

# 100k-deep nesting, flow and block style.
{ printf 'kernels: '; repeat 100000 '['; repeat 100000 ']'; echo; } >"$T/deep_seq.yaml"
hostile deep_seq 2 ":1:42: error: nesting deeper than 32 levels"
{ printf 'kernels: '; repeat 100000 '{a: '; echo; } >"$T/deep_map.yaml"
hostile deep_map 2 ":1:135: error: nesting deeper than 32 levels"
awk 'BEGIN { print "kernels:"; for (i = 1; i <= 100000; i++) { printf "%*s- \n", i * 2 - 2, "" } }' \
  | head -c 1000000 >"$T/deep_block.yaml"
hostile deep_block 2 ""
grep -q 'nesting deeper than 32 levels' "$T/out" || bad "deep_block: no nesting message"

# Size: 1 MiB is accepted, one byte more is refused before parsing.
{ printf 'kernels:\n  - op: gemm\n#'; repeat $((1048576 - 24)) 'x'; echo; } >"$T/exactly_1mib.yaml"
[ "$(wc -c <"$T/exactly_1mib.yaml")" = 1048576 ] || bad "exactly_1mib: generator wrote $(wc -c <"$T/exactly_1mib.yaml") bytes"
hostile exactly_1mib 0 ""
grep -qx 'ok: 2 kernels' "$T/out" || bad "exactly_1mib: expected 'ok: 2 kernels'"
{ cat "$T/exactly_1mib.yaml"; printf '\n'; } >"$T/over_1mib.yaml"
hostile over_1mib 2 ": error: spec is larger than 1048576 bytes"
{ printf 'kernels:\n  - op: gemm\n#'; repeat 3000000 'y'; echo; } >"$T/huge.yaml"
hostile huge 2 ": error: spec is larger than 1048576 bytes"

# Bytes that are not UTF-8 text: refused at their own line:col.
printf 'kernels:\n  - op: gemm\000\n' >"$T/nul.yaml"
hostile nul 2 ":2:13: error: NUL byte in spec: a spec is UTF-8 text"
printf 'kernels:\n  - op: g\377emm\n' >"$T/byte_ff.yaml"
hostile byte_ff 2 ":2:10: error: invalid UTF-8 byte 0xff: a spec is UTF-8 text"
printf 'kernels:\n  - op: g\303(mm\n' >"$T/bad_continuation.yaml"
hostile bad_continuation 2 ":2:10: error: invalid UTF-8 sequence: a spec is UTF-8 text"
printf 'kernels:\n  - op: gemm  # \303' >"$T/truncated.yaml"
hostile truncated 2 ":2:17: error: truncated UTF-8 sequence at end of file"
# Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not
# UTF-8 either (RFC 3629); they must be reported where they are, not at 1:1.
printf 'kernels:\n  - op: \340\200\200\n' >"$T/overlong.yaml"
hostile overlong 2 ""
grep -q 'overlong.yaml:2:9: error:' "$T/out" || bad "overlong: error not reported at 2:9: $(cat "$T/out")"
printf 'kernels:\n  - op: \355\240\200\n' >"$T/surrogate.yaml"
hostile surrogate 2 ""
grep -q 'surrogate.yaml:2:9: error:' "$T/out" || bad "surrogate: error not reported at 2:9: $(cat "$T/out")"
printf 'kernels:\n  - op: \364\220\200\200\n' >"$T/past_10ffff.yaml"
hostile past_10ffff 2 ""
grep -q 'past_10ffff.yaml:2:9: error:' "$T/out" || bad "past_10ffff: error not reported at 2:9: $(cat "$T/out")"

# Floods: too many nodes; one mapping with 49,999 keys (the node limit
# allows no more); a 900 kB name; an alias bomb.
{ printf 'kernels: ['; repeat 100001 '1,'; echo '1]'; } >"$T/many_nodes.yaml"
hostile many_nodes 2 ""
grep -q 'spec too large: more than 100000 YAML nodes' "$T/out" || bad "many_nodes: no node-limit message"
awk 'BEGIN { print "kernels:\n  - op: gemm\n    target: gfx942\nx:"; for (i = 0; i < 49990; i++) printf "  k%d: 1\n", i }' >"$T/many_keys.yaml"
hostile many_keys 2 ":4:1: error: unknown top-level key 'x'; allowed: hkgen, defaults, kernels, models"
{ printf 'kernels:\n  - op: gemm\n    name: '; repeat 900000 'k'; echo; } >"$T/long_name.yaml"
hostile long_name 2 ""
grep -q "'name' must be a C identifier of at most 48 characters (got 'kkkk" "$T/out" || bad "long_name: no name message"
[ "$(wc -c <"$T/out")" -lt 4096 ] || bad "long_name: the message echoes the whole 900 kB value"
cat >"$T/alias_bomb.yaml" <<'YAML'
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
kernels: [*d, *d, *d, *d, *d, *d, *d, *d, *d]
YAML
hostile alias_bomb 2 ":1:4: error: YAML anchors are not supported: use 'defaults:' to share values"
# 33,000 entries: 66,000 kernels with one name each per target, all duplicates.
awk 'BEGIN { print "kernels:"; for (i = 0; i < 33000; i++) print "  - {op: gemm}" }' >"$T/many_entries.yaml"
hostile many_entries 2 ""

[ "$failures" = 0 ] || { echo "spec_hostile: $failures failed" >&2; exit 1; }
echo "spec_hostile: all passed"
