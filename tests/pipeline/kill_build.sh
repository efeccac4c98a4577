#!/bin/sh
# A build killed with SIGKILL at random moments never leaves a manifest that
# points at a missing or different file, and a build started again afterwards
# finishes with a valid catalogue. Delays are drawn fresh each run (printed).
. "$(dirname "$0")/../lib/lib.sh"
HKGEN=$TOP/build/hkgen   # the plain binary: ASan slows it and changes the timing

spec=$T/spec.yaml
cat >"$spec" <<'YAML'
kernels:
  - op: gemm
    name: kb
    layout: [nt, nn]
    tile_m: [64, 128]
    N: [64, 96]
  - op: rope
    name: kr
    style: [rotate_half, interleaved]
YAML

# check_catalogue DIR: no manifest, or one whose every file exists with its sha256.
check_catalogue() {
  [ -f "$1/manifest.json" ] || return 0
  { jsonq "$1/manifest.json" 'kernels.*.file' && jsonq "$1/manifest.json" 'kernels.*.source'; } >"$T/files" ||
    fail "manifest in $1: a kernel without file or source"
  [ -s "$T/files" ] || fail "manifest in $1 lists no files"
  while read -r f; do
    [ -f "$1/$f" ] || fail "manifest in $1 points at missing $f"
  done <"$T/files"
  jsonq "$1/manifest.json" 'kernels.*.sha256' >"$T/want" || fail "manifest in $1: a kernel without sha256"
  jsonq "$1/manifest.json" 'kernels.*.file' | while read -r f; do
    sha256sum "$1/$f" | cut -d' ' -f1
  done >"$T/got"
  cmp -s "$T/want" "$T/got" || fail "a file in $1 does not match the sha256 its manifest records"
}

out=$T/cat
# a complete catalogue of another spec first: killed builds start over a folder
# that already holds a manifest (which must never end up stale)
sed 's/N: \[64, 96\]/N: [80]/' "$spec" >"$T/first.yaml"
run_hk "$T/first" build -q --target gfx942 "$T/first.yaml" -o "$out"
expect_rc 0 "first build"
check_catalogue "$out"
seed=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
echo "delays from seed $seed"
i=0
killed=0
mkdir -p "$T/tmp"
while [ $i -lt 8 ]; do
  # delays between 0.05 and 1.6 s: before, during and after compiles
  ms=$(( (seed * (i + 7) * 7919) % 1550 + 50 ))
  TMPDIR=$T/tmp HKGEN_CACHE_DIR=$T/nocache-$i "$HKGEN" build -q --no-cache -j2 --target gfx942,gfx950 "$spec" -o "$out" >/dev/null 2>&1 &
  pid=$!
  sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
  if kill -KILL "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null || true
  check_catalogue "$out"
  i=$((i + 1))
done
echo "$killed of 8 builds were killed mid-way"
# their compilers die with them (PR_SET_PDEATHSIG): none still works in
# their temporary folders
sleep 1
if pgrep -f "$T/tmp/hkgen\." >/dev/null 2>&1; then
  fail "compilers of killed builds still run: $(pgrep -af "$T/tmp/hkgen\." | head -3)"
fi
[ "$killed" -ge 1 ] || fail "no build was killed: the delays are too long for this machine"

TMPDIR=$T/tmp run_hk "$T/final" build -q --target gfx942,gfx950 "$spec" -o "$out"
expect_rc 0 "build after the kills"
# the temporary folders of killed builds are swept by the next one (a
# killed compiler may still be finishing: give it a moment, then sweep again)
sleep 2
TMPDIR=$T/tmp run_hk "$T/again" build -q --target gfx942 "$T/first.yaml" -o "$T/other"
left=$(ls "$T/tmp" | grep -c '^hkgen' || true)
[ "$left" = 0 ] || fail "killed builds left $left temporary folders: $(ls "$T/tmp" | head -5)"
[ -f "$out/manifest.json" ] || fail "no manifest after a complete build"
check_catalogue "$out"
n=$(jsonq -c "$out/manifest.json" 'kernels.*')
[ "$n" -eq 20 ] || fail "final manifest lists $n kernels, expected 20"
echo "ok: killed builds left no bad manifest and no temporary folder; the final build is complete"
