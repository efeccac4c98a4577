#!/bin/sh
# spec_cases.sh: `hkgen check` on every spec under spec/bad and spec/good.
#
# Each NAME.yaml has NAME.expect:
#   args: OPTIONS      options given before the spec (optional)
#   status: N          expected exit status (default 2 in bad/, 0 in good/)
#   errors: N          number of "error:" lines (default: the number of exact
#                      lines below that are errors, when there are any)
#   ~ TEXT             TEXT must occur somewhere in the output (FILE too)
#   any other line     must be a whole line of the output; FILE stands for
#                      the spec's path
# Every case runs under `timeout 10`: hostile input must be refused quickly.
. "$(dirname "$0")/../lib/lib.sh"
cd "$TESTS_DIR"

failures=0
cases=0
case_fail() {
  echo "FAIL: $1: $2" >&2
  echo "--- output:" >&2
  head -c 3000 "$T/out" >&2
  echo "---" >&2
  failures=$((failures + 1))
}

run_case() { # SPEC DEFAULT_STATUS
  spec=$1
  exp=${spec%.yaml}.expect
  cases=$((cases + 1))
  [ -f "$exp" ] || { echo "FAIL: $spec has no $exp" >&2; failures=$((failures + 1)); return; }
  args=$(sed -n 's/^args: //p' "$exp")
  want=$(sed -n 's/^status: //p' "$exp")
  want=${want:-$2}
  werr=$(sed -n 's/^errors: //p' "$exp")
  rc=0
  # shellcheck disable=SC2086 # args is a word list on purpose
  timeout 10 "$HKGEN" check $args "$spec" >"$T/out" 2>&1 || rc=$?
  if [ "$rc" = 124 ]; then case_fail "$spec" "hkgen check took more than 10 s"; return; fi
  if [ "$rc" != "$want" ]; then case_fail "$spec" "exit status $rc, expected $want"; return; fi
  if grep -q 'runtime error:\|AddressSanitizer\|LeakSanitizer' "$T/out"; then
    case_fail "$spec" "sanitizer report"; return
  fi
  nexact=0
  while IFS= read -r line; do
    case $line in
    '' | '#'* | 'args: '* | 'status: '* | 'errors: '*) continue ;;
    '~ '*)
      text=$(printf '%s\n' "${line#\~ }" | sed "s|FILE|$spec|g")
      grep -qF -- "$text" "$T/out" || { case_fail "$spec" "no output contains: $text"; return; }
      ;;
    *)
      full=$(printf '%s\n' "$line" | sed "s|FILE|$spec|g")
      grep -qxF -- "$full" "$T/out" || { case_fail "$spec" "no output line is exactly: $full"; return; }
      case $full in *': error: '*) nexact=$((nexact + 1)) ;; esac
      ;;
    esac
  done <"$exp"
  [ -n "$werr" ] || [ "$nexact" = 0 ] || werr=$nexact
  if [ -n "$werr" ]; then
    got=$(grep -c ': error: ' "$T/out" || true)
    [ "$got" = "$werr" ] || { case_fail "$spec" "$got error lines, expected $werr"; return; }
  fi
  if [ "$want" = 0 ] && grep -q ': error: ' "$T/out"; then case_fail "$spec" "error reported with status 0"; fi
}

for f in spec/bad/*.yaml; do run_case "$f" 2; done
for f in spec/good/*.yaml; do run_case "$f" 0; done
# The example specs the project ships are all valid.
for f in ../specs/*.yaml; do
  cases=$((cases + 1))
  rc=0
  timeout 10 "$HKGEN" check "$f" >"$T/out" 2>&1 || rc=$?
  [ "$rc" = 0 ] && grep -q '^ok: [1-9][0-9]* kernels\{0,1\}$' "$T/out" || case_fail "$f" "example spec not accepted (status $rc)"
done
# A spec need not be a regular file: one read from a pipe is checked as the
# file is; a directory or an empty stream is refused (2) with a clear message.
cases=$((cases + 1))
rc=0
cat ../specs/llama3-8b-tp1.yaml | timeout 10 "$HKGEN" check /dev/stdin >"$T/out" 2>&1 || rc=$?
timeout 10 "$HKGEN" check ../specs/llama3-8b-tp1.yaml >"$T/file" 2>&1 || true
[ "$rc" = 0 ] && cmp -s "$T/out" "$T/file" || case_fail "spec on stdin" "not checked as the file (status $rc)"
for s in spec /dev/null; do
  cases=$((cases + 1))
  rc=0
  timeout 10 "$HKGEN" check "$s" </dev/null >"$T/out" 2>&1 || rc=$?
  want="cannot read spec: Is a directory"
  [ "$s" = /dev/null ] && want="empty spec: expected a mapping with 'kernels:'"
  [ "$rc" = 2 ] && grep -q "^$s: error: $want" "$T/out" || case_fail "$s as the spec" "not refused with '$want' (status $rc)"
done
# Every expectation belongs to a spec (a renamed spec must not leave its case unchecked).
for e in spec/bad/*.expect spec/good/*.expect; do
  [ -f "${e%.expect}.yaml" ] || { echo "FAIL: $e has no spec" >&2; failures=$((failures + 1)); }
done
[ "$cases" -ge 40 ] || fail "only $cases spec cases found (is spec/ complete?)"
echo "spec_cases: $cases cases, $failures failed"
[ "$failures" = 0 ] || exit 1
