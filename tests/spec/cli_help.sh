# cli_help.sh (CTest cli_help): every command answers --help, -h and
# `hkgen help CMD` with its usage (exit 0, one text), unknown commands and
# options are usage errors (2), and docs/hkgen.1 is what `hkgen --man`
# prints today (all of it comes from gen/usage.c's one table).
. "$(dirname "$0")/../lib/lib.sh"

run_hk "$T/overview.txt" --help
expect_rc 0 "hkgen --help"
cmds=$(awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}' "$T/overview.txt")
[ "$(echo "$cmds" | wc -w)" -ge 9 ] || fail "hkgen --help lists too few commands: $cmds"
for c in $cmds; do
  run_hk "$T/$c.help" "$c" --help
  expect_rc 0 "hkgen $c --help"
  head -1 "$T/$c.help" | grep -q "^usage: hkgen" || fail "hkgen $c --help does not start with its usage"
  grep -q "^exit status: 0 success" "$T/$c.help" || fail "hkgen $c --help gives no exit statuses"
  run_hk "$T/$c.h" "$c" -h
  cmp -s "$T/$c.help" "$T/$c.h" || fail "hkgen $c -h differs from --help"
  run_hk "$T/$c.hh" help "$c"
  cmp -s "$T/$c.help" "$T/$c.hh" || fail "hkgen help $c differs from hkgen $c --help"
done
run_hk "$T/x.txt" help frobnicate
expect_rc 2 "hkgen help frobnicate"
grep -q "help takes one command name" "$T/x.txt" || fail "hkgen help frobnicate: no clear message"
run_hk "$T/x.txt" test --frobnicate
expect_rc 2 "hkgen test --frobnicate"
grep -q "unknown option '--frobnicate'" "$T/x.txt" || fail "hkgen test --frobnicate: no clear message"
run_hk "$T/man.txt" --man
expect_rc 0 "hkgen --man"
cmp -s "$T/man.txt" "$TOP/docs/hkgen.1" ||
  fail "docs/hkgen.1 is not what hkgen --man prints: run build/hkgen --man > docs/hkgen.1"
echo "cli_help: $(echo "$cmds" | wc -w) commands ok"
