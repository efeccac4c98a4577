#!/bin/sh
# build_cases.sh CASE: build tests (they need templates/ and the compilers).
#   all          every spec in specs/ builds for gfx90a,gfx942,gfx950 with exit
#                0 and no spills (hkgen inspect); the catalogues stay in
#                tests/build/work/ for mfma, manifest and inspect (CTest fixture)
#   determinism  two --no-cache builds into two folders: identical trees
#   cache        a second build with the same HKGEN_CACHE_DIR: "0 compiled"
#   mfma         GEMM objects hold their target's MFMA (llvm-objdump-22)
#   manifest     every file the manifest lists exists with its sha256
#   failure      a broken template: exit 1, template file:line, no manifest;
#                likewise a header that does not compile, HKGEN_CLANG that does
#                not run, a compiler killed by a signal
#   lock         a held lock refuses a build; two builds at once leave a valid
#                catalogue
#   inspect      hkgen inspect on one .hsaco prints its kernel's row; hot-loop
#                columns: GEMM loops hold MFMAs, RoPE's none, and the figures
#                match a count with llvm-objdump-22 + awk on the same object
#   stale        gen then build (and build then gen) into one folder leave no
#                manifest.json / sources.json that lists other sources
. "$(dirname "$0")/../lib/lib.sh"
TARGETS=gfx90a,gfx942,gfx950
# gfx90a compiles through comgr in process; LLVM there replaces the threads'
# sigaltstack and ASan then fails to unmap its own at thread exit (see
# CTestTestfile.cmake). The CTest environment sets this too.
case ${ASAN_OPTIONS:-} in
*use_sigaltstack*) ;;
*) export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}use_sigaltstack=0" ;;
esac
WORK=$TESTS_DIR/build/work
# the GEMM's 16x16 bf16 MFMA of each target (templates/gemm.hip.m4)
MFMA_gfx90a=v_mfma_f32_16x16x16bf16_1k
MFMA_gfx942=v_mfma_f32_16x16x16_bf16
MFMA_gfx950=v_mfma_f32_16x16x32_bf16

# A small spec: two GEMMs (one all run-time) and a RoPE, 9 kernels on 3 targets.
# sources_listed DIR FILE CMD: when DIR/FILE exists, every source it lists has
# the sha256 it gives (after `hkgen CMD` rewrote the sources, a stale FILE
# would list the old ones).
sources_listed() {
  [ -f "$1/$2" ] || return 0
  python3 -c 'import json, sys
for k in json.load(open(sys.argv[1]))["kernels"]: print(k["source_sha256"] + "  " + k["source"])' \
    "$1/$2" >"$T/sums"
  (cd "$1" && sha256sum --quiet -c "$T/sums") >"$T/sumcheck" 2>&1 ||
    fail "after 'hkgen $3' rewrote the sources, $2 still lists the old ones: $(cat "$T/sumcheck")"
}

small_spec() {
  cat >"$1" <<'YAML'
kernels:
  - op: gemm
    name: t_gemm
    layout: [nt, nn]
    N: 256
    K: 512
    tile_m: 64
  - op: rope
    name: t_rope
    head_dim: 128
    heads_q: 8
    heads_k: 2
YAML
}

# kernel_count SPEC: the number of kernels `hkgen check` reports.
kernel_count() {
  run_hk "$T/check.out" check --target "$TARGETS" "$1"
  expect_rc 0 "hkgen check $1"
  sed -n 's/^ok: \([0-9]*\) kernels\{0,1\}$/\1/p' "$T/check.out"
}

# check_manifest DIR: every "source" and "file" of DIR/manifest.json exists
# and matches its recorded sha256 (sha256sum -c).
check_manifest() {
  dir=$1
  [ -f "$dir/manifest.json" ] || fail "$dir/manifest.json is missing"
  python3 -m json.tool "$dir/manifest.json" >/dev/null || fail "$dir/manifest.json is not JSON"
  python3 - "$dir/manifest.json" >"$T/sums" <<'PY' || fail "$dir/manifest.json: a kernel lacks file/sha256/source"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["kind"] == "catalogue", m["kind"]
for k in m["kernels"]:
    print(k["sha256"] + "  " + k["file"])
    print(k["source_sha256"] + "  " + k["source"])
PY
  [ -s "$T/sums" ] || fail "$dir/manifest.json lists no kernel"
  (cd "$dir" && sha256sum --quiet --strict -c "$T/sums") >"$T/sumcheck" 2>&1 ||
    fail "$dir: files differ from the manifest: $(head -20 "$T/sumcheck")"
  # and the other way round: every object in the folder is listed
  nobj=$(find "$dir" -name '*.hsaco' | wc -l)
  nlisted=$(grep -c '\.hsaco$' "$T/sums")
  [ "$nobj" = "$nlisted" ] || fail "$dir holds $nobj .hsaco files, its manifest lists $nlisted"
}

# The catalogues of case_all are compiled by the release build: comgr runs
# inside the hkgen process, and under ASan it is ~3.6x slower (30 gfx90a
# kernels of specs/models.yaml: 100 s against 28 s), too slow for ~160
# kernels in CTest's budget. Every other build case runs hkgen-asan, and
# case_all checks the result with hkgen-asan (inspect). HKGEN_BULK overrides.
HKGEN_BULK=${HKGEN_BULK:-$TOP/build/hkgen}

case_all() {
  [ -x "$HKGEN_BULK" ] || fail "$HKGEN_BULK is missing: run make first"
  rm -rf "$WORK"
  mkdir -p "$WORK/catalog"
  export HKGEN_CACHE_DIR="$WORK/cache"
  n=0
  for spec in "$TOP"/specs/*.yaml; do
    name=$(basename "$spec" .yaml)
    out=$WORK/catalog/$name
    want=$(kernel_count "$spec")
    rc=0
    "$HKGEN_BULK" build --target "$TARGETS" -o "$out" "$spec" >"$T/build.out" 2>&1 || rc=$?
    hk_out=$T/build.out
    expect_rc 0 "$HKGEN_BULK build $spec"
    grep -q "^hkgen: $want kernels\{0,1\} into $out: " "$T/build.out" ||
      fail "$spec: no summary line for $want kernels: $(tail -3 "$T/build.out")"
    run_hk "$T/inspect.out" inspect "$out"
    expect_rc 0 "hkgen inspect $out"
    # The spills column, found by its header; every row must say 0.
    awk -v want="$want" -v spec="$spec" '
      NR == 1 { for (i = 1; i <= NF; i++) if ($i == "spills") col = i; next }
      /^[0-9]+ kernels?$/ { total = $1; done = 1; next }
      done { next } # the estimates of baked kernels follow the table
      { rows++; if ($col != "0") { print spec ": " $1 " (" $2 ") spills " $col; bad = 1 } }
      END {
        if (!col) { print spec ": no spills column"; exit 1 }
        if (rows != want || total != want) { print spec ": " rows " rows, " total " in total, expected " want; exit 1 }
        exit bad }' "$T/inspect.out" >&2 || fail "$spec: spills or kernel count wrong (above); table: $(cat "$T/inspect.out")"
    echo "ok   $name: $want kernels, no spills"
    n=$((n + 1))
  done
  [ "$n" -ge 1 ] || fail "no spec in $TOP/specs"
}

case_determinism() {
  spec=$TOP/specs/llama3-8b-tp1.yaml
  for i in 1 2; do
    run_hk "$T/build$i.out" build --no-cache --target "$TARGETS" -o "$T/cat$i" "$spec"
    expect_rc 0 "build $i with --no-cache"
    grep -q ' 0 from cache' "$T/build$i.out" || fail "build $i: --no-cache used the cache: $(tail -1 "$T/build$i.out")"
  done
  diff -r "$T/cat1" "$T/cat2" >"$T/diff" 2>&1 || fail "two --no-cache builds differ: $(head -30 "$T/diff")"
  [ -n "$(find "$T/cat1" -name '*.hsaco')" ] || fail "no code objects were built"
  [ ! -e "$HKGEN_CACHE_DIR" ] || [ -z "$(ls -A "$HKGEN_CACHE_DIR")" ] || fail "--no-cache filled the cache"
  echo "ok   two --no-cache builds are byte-identical ($(find "$T/cat1" -type f | wc -l) files)"
}

case_cache() {
  small_spec "$T/small.yaml"
  want=$(kernel_count "$T/small.yaml")
  run_hk "$T/b1.out" build --target "$TARGETS" -o "$T/c1" "$T/small.yaml"
  expect_rc 0 "first build"
  grep -q ": $want compiled, 0 from cache" "$T/b1.out" || fail "first build with an empty cache: $(tail -1 "$T/b1.out")"
  run_hk "$T/b2.out" build --target "$TARGETS" -o "$T/c2" "$T/small.yaml"
  expect_rc 0 "second build"
  grep -q ": 0 compiled, $want from cache" "$T/b2.out" || fail "second build did not come from the cache: $(tail -1 "$T/b2.out")"
  diff -r "$T/c1" "$T/c2" >"$T/diff" 2>&1 || fail "cached build differs from the compiled one: $(head -20 "$T/diff")"
  ncache=$(find "$HKGEN_CACHE_DIR" -type f | wc -l)
  [ "$ncache" -ge "$want" ] || fail "the cache holds $ncache files, expected at least one per kernel ($want)"
  echo "ok   second build: 0 compiled, $want from cache"
  # entries that are not what was stored: one object truncated, one replaced
  # by another kernel's, one sum missing: each is compiled again, and the
  # catalogue is the same as the first
  set -- $(ls "$HKGEN_CACHE_DIR"/*.obj)
  [ $# -ge 3 ] || fail "fewer than 3 cached objects ($#)"
  head -c 100 "$1" >"$1.cut" && mv "$1.cut" "$1"
  cp "$3" "$2"
  rm "${3%.obj}.sum"
  run_hk "$T/b3.out" build --target "$TARGETS" -o "$T/c3" "$T/small.yaml"
  expect_rc 0 "build over a damaged cache"
  grep -q ": 3 compiled, $((want - 3)) from cache" "$T/b3.out" ||
    fail "a damaged cache entry was used: $(tail -1 "$T/b3.out")"
  [ "$(grep -c 'does not match its checksum' "$T/b3.out")" = 2 ] || fail "the damaged entries were not reported"
  diff -r "$T/c1" "$T/c3" >"$T/diff" 2>&1 || fail "a build over a damaged cache differs: $(head -20 "$T/diff")"
  echo "ok   damaged cache entries (truncated, swapped, unsummed) are compiled again"
}

case_outdir() {
  small_spec "$T/small.yaml"
  # a folder hkgen did not make: refused with status 2, the user's files untouched
  mkdir -p "$T/mine"
  echo '{"my": "data"}' >"$T/mine/manifest.json"
  echo 'notes' >"$T/mine/sources.json"
  run_hk "$T/o1.out" build --target gfx942 -o "$T/mine" "$T/small.yaml"
  expect_rc 2 "a build into a folder hkgen did not write"
  grep -q "which hkgen did not write" "$T/o1.out" || fail "no reason given: $(cat "$T/o1.out")"
  [ "$(cat "$T/mine/manifest.json")" = '{"my": "data"}' ] && [ "$(cat "$T/mine/sources.json")" = notes ] ||
    fail "the user's files were changed"
  echo hi >"$T/other.txt" && mkdir -p "$T/mine2" && cp "$T/other.txt" "$T/mine2/"
  run_hk "$T/o2.out" build --target gfx942 -o "$T/mine2" "$T/small.yaml"
  expect_rc 2 "a build into a folder with foreign files"
  # a finished catalogue keeps no lock file, and may be built over again
  run_hk "$T/o3.out" build --target gfx942 -o "$T/cat" "$T/small.yaml"
  expect_rc 0 "a build into a new folder"
  [ ! -e "$T/cat/.hkgen.lock" ] || fail "a finished catalogue keeps .hkgen.lock"
  run_hk "$T/o4.out" build --target gfx942 -o "$T/cat" "$T/small.yaml"
  expect_rc 0 "a build over a catalogue"
  echo "ok   foreign folders refused (status 2, files untouched), no stale lock in a finished catalogue"
}

case_mfma() {
  cat=$WORK/catalog
  [ -d "$cat" ] || fail "$cat is missing: the build_all test must run first"
  for t in gfx90a gfx942 gfx950; do
    eval "m=\$MFMA_$t"
    ngemm=0
    for hip in "$cat"/*/"$t"/*.hip; do
      [ -f "$hip" ] || continue
      obj=${hip%.hip}.hsaco
      llvm-objdump-22 -d --mcpu="$t" "$obj" >"$T/dis" 2>&1 || fail "llvm-objdump-22 failed on $obj: $(head -5 "$T/dis")"
      if grep -q "^// kernel [A-Za-z0-9_]*: op gemm, target $t\$" "$hip"; then
        grep -Eq "^[[:space:]]+$m[[:space:]]" "$T/dis" ||
          fail "$obj (gemm, $t) has no $m; MFMAs there: $(grep -o 'v_mfma[a-z0-9_]*' "$T/dis" | sort -u | tr '\n' ' ')"
        ngemm=$((ngemm + 1))
      elif grep -q "^// kernel [A-Za-z0-9_]*: op rope, target $t\$" "$hip"; then
        # RoPE is element-wise: an MFMA there would mean a mixed-up object
        ! grep -q 'v_mfma' "$T/dis" || fail "$obj (rope) holds MFMA instructions"
      fi
    done
    [ "$ngemm" -ge 1 ] || fail "no GEMM object for $t under $cat"
    echo "ok   $t: $ngemm GEMM objects hold $m"
  done
}

case_manifest() {
  cat=$WORK/catalog
  [ -d "$cat" ] || fail "$cat is missing: the build_all test must run first"
  for dir in "$cat"/*/; do
    check_manifest "${dir%/}"
    echo "ok   $(basename "$dir"): $(wc -l <"$T/sums") files match manifest.json"
  done
}

case_failure() {
  TPL_SRC=${HKGEN_TEMPLATES:-$TOP/templates}
  cp -r "$TPL_SRC" "$T/tpl"
  small_spec "$T/small.yaml"
  out=$T/cat
  # A good build first, so that there is a manifest to lose.
  HKGEN_TEMPLATES=$T/tpl run_hk "$T/good.out" build --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 0 "build with the intact template copy"
  [ -f "$out/manifest.json" ] || fail "the good build wrote no manifest"
  # Break gemm.hip.m4 at a known line with the templates' own error macro.
  line=$(grep -n 'check_one_of(' "$T/tpl/gemm.hip.m4" | head -1 | cut -d: -f1)
  [ -n "$line" ] || line=$(($(wc -l <"$T/tpl/gemm.hip.m4") / 2))
  sed -i "${line}i m4_errprint(m4___file__:m4___line__[: deliberately broken])m4_m4exit(1)" "$T/tpl/gemm.hip.m4"
  HKGEN_TEMPLATES=$T/tpl run_hk "$T/bad.out" build --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 1 "build with a broken gemm.hip.m4"
  grep -q "gemm.hip.m4:$line:.*deliberately broken" "$T/bad.out" ||
    fail "the error does not name gemm.hip.m4:$line: $(head -5 "$T/bad.out")"
  [ ! -e "$out/manifest.json" ] || fail "a failed build left manifest.json in place"
  echo "ok   broken template: exit 1 at gemm.hip.m4:$line, no manifest left"

  # A template that leaves a macro word in the output: refused, exit 1.
  cp "$TPL_SRC/gemm.hip.m4" "$T/tpl/gemm.hip.m4"
  HKGEN_TEMPLATES=$T/tpl run_hk "$T/good.out" build --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 0 "build with the template restored"
  ob=$(grep -n 'output_begin()' "$T/tpl/gemm.hip.m4" | head -1 | cut -d: -f1)
  [ -n "$ob" ] || fail "cannot find the output_begin() line of gemm.hip.m4"
  sed -i "${ob}a [// m4_bogus_word]m4_dnl" "$T/tpl/gemm.hip.m4"
  HKGEN_TEMPLATES=$T/tpl run_hk "$T/left.out" build --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 1 "build with a leftover macro word in the output"
  grep -q "suspicious 'm4_bogus_word" "$T/left.out" || fail "no message about the leftover word: $(head -5 "$T/left.out")"
  [ ! -e "$out/manifest.json" ] || fail "a failed build left manifest.json in place"
  echo "ok   leftover macro word: exit 1, reported, no manifest"

  # A compile error: exit 1, the compiler's message, no manifest.
  cp "$TPL_SRC/gemm.hip.m4" "$T/tpl/gemm.hip.m4"
  HKGEN_TEMPLATES=$T/tpl run_hk "$T/good.out" build --no-cache --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 0 "build with the template restored"
  cp "$TPL_SRC/include/hk_cdna.h" "$T/tpl/include/hk_cdna.h"
  printf '\nstatic_assert(false, "deliberately broken header");\n' >>"$T/tpl/include/hk_cdna.h"
  HKGEN_TEMPLATES=$T/tpl run_hk "$T/cc.out" build --no-cache --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 1 "build with a header that does not compile"
  grep -q 'deliberately broken header' "$T/cc.out" || fail "the compiler's message is not shown: $(head -5 "$T/cc.out")"
  [ ! -e "$out/manifest.json" ] || fail "a failed compile left manifest.json in place"
  echo "ok   compile error: exit 1, message shown, no manifest"

  # HKGEN_CLANG that does not run: an error naming it (not a silent search
  # elsewhere); a compiler killed by a signal: the signal named.
  HKGEN_CLANG=$T/no-such-clang run_hk "$T/nocc.out" build --no-cache --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 1 "build with HKGEN_CLANG pointing nowhere"
  grep -q "HKGEN_CLANG=$T/no-such-clang does not run as clang" "$T/nocc.out" ||
    fail "the error does not name HKGEN_CLANG: $(head -3 "$T/nocc.out")"
  printf '#!/bin/sh\ncase "$*" in *--version*) echo "clang version 22.1.8 (a test double)"; exit 0 ;; esac\nkill -SEGV $$\n' >"$T/crash-clang"
  chmod +x "$T/crash-clang"
  HKGEN_CLANG=$T/crash-clang run_hk "$T/crash.out" build --no-cache --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 1 "build with a compiler that crashes"
  grep -q "crash-clang was killed by signal 11" "$T/crash.out" ||
    fail "the compiler's death is not reported: $(head -3 "$T/crash.out")"
  [ ! -e "$out/manifest.json" ] || fail "a crashed compile left manifest.json in place"
  echo "ok   HKGEN_CLANG nowhere / a crashing compiler: exit 1, named, no manifest"
}

case_lock() {
  small_spec "$T/small.yaml"
  out=$T/cat
  run_hk "$T/first.out" build --target gfx942 -o "$out" "$T/small.yaml"
  expect_rc 0 "a first build"
  sha_before=$(sha256sum <"$out/manifest.json")
  # 1. A build while another holds the folder's lock is refused at once,
  #    and leaves the catalogue it found (manifest included) alone.
  command -v flock >/dev/null || fail "flock (util-linux) is missing"
  # One process holds the lock (exec: killing it frees the lock).
  (
    exec 9>"$out/.hkgen.lock"
    flock 9
    exec sleep 30
  ) >/dev/null 2>&1 &
  holder=$!
  i=0
  while flock -n "$out/.hkgen.lock" true 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { kill "$holder"; fail "could not take the lock for the test"; }
    sleep 0.1
  done
  run_hk "$T/locked.out" build --target gfx942 -o "$out" "$T/small.yaml"
  kill "$holder" 2>/dev/null || true
  wait "$holder" 2>/dev/null || true
  expect_rc 1 "build into a locked folder"
  grep -q 'another hkgen build' "$T/locked.out" || fail "no message about another build: $(cat "$T/locked.out")"
  [ -f "$out/manifest.json" ] || fail "the refused build removed the manifest of the build before"
  [ "$(sha256sum <"$out/manifest.json")" = "$sha_before" ] || fail "the refused build changed the manifest"
  echo "ok   held lock: build refused with 'another hkgen build', old manifest intact"
  # 2. Two real builds at once: one is refused and one succeeds, or both
  #    succeed; the catalogue left is valid either way. The plain binary: this
  #    checks the lock, and LeakSanitizer's exit-time scan was seen to crash
  #    (SIGSEGV in its tracer) while comgr's threads wound down in a parallel
  #    gfx90a build, failing a build that had succeeded.
  plain=$TOP/build/hkgen
  "$plain" build --no-cache --target "$TARGETS" -o "$out" "$T/small.yaml" >"$T/a.out" 2>&1 &
  pa=$!
  "$plain" build --no-cache --target "$TARGETS" -o "$out" "$T/small.yaml" >"$T/b.out" 2>&1 &
  pb=$!
  ra=0; wait "$pa" || ra=$?
  rb=0; wait "$pb" || rb=$?
  for x in a:$ra b:$rb; do
    r=${x#*:}
    f=$T/${x%%:*}.out
    case $r in
    0) ;;
    1) grep -q 'another hkgen build' "$f" || fail "build ${x%%:*} failed without the lock message: $(cat "$f")" ;;
    *) fail "build ${x%%:*} exited $r: $(cat "$f")" ;;
    esac
  done
  [ "$ra" = 0 ] || [ "$rb" = 0 ] || fail "both concurrent builds failed"
  check_manifest "$out"
  echo "ok   two builds at once: statuses $ra and $rb, valid catalogue"
}

# `hkgen gen` and `hkgen build` into one folder: whatever index is left
# (manifest.json, sources.json) must describe the files that are there.
case_stale() {
  small_spec "$T/a.yaml"
  sed 's/N: 256/N: 512/' "$T/a.yaml" >"$T/b.yaml"
  out=$T/cat
  run_hk "$T/1.out" build --target gfx942 -o "$out" "$T/a.yaml"
  expect_rc 0 "build of spec a"
  run_hk "$T/2.out" gen --target gfx942 -o "$out" "$T/b.yaml"
  expect_rc 0 "gen of spec b into the same folder"
  sources_listed "$out" manifest.json gen
  echo "ok   gen after build: no stale manifest.json"
  run_hk "$T/3.out" build --target gfx942 -o "$out" "$T/a.yaml"
  expect_rc 0 "build of spec a again"
  sources_listed "$out" sources.json build
  check_manifest "$out"
  echo "ok   build after gen: no stale sources.json"
}

# hot_loop_awk: llvm-objdump's output -> "insts mfma 0xstart-0xend" of the hot
# loop by the plain rule (every backward branch is a loop, one per target up
# to its last branch back; innermost; most MFMAs, fewest instructions, lowest
# address), or "- - -". Addresses from the "// ADDR:" comments, branch targets
# from the "<sym+0xOFF>" notes (hkgen decodes the branch's operand instead).
HOT_LOOP_AWK='
function hex(s,   v, i) {
  v = 0; s = tolower(s)
  for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
  return v
}
/^[0-9a-f]+ <[^>]*>:$/ { base = hex($1); next }
/\/\/ [0-9A-F]+:/ {
  match($0, /\/\/ [0-9A-F]+:/); a = hex(substr($0, RSTART + 3, RLENGTH - 4))
  n++; addr[n] = a; mf[n] = ($1 ~ /^v_(mfma|smfmac)/); br[n] = -1
  if ($1 ~ /^s_(cbranch_[a-z0-9]+|branch)$/ && match($0, /<[^>+]*(\+0x[0-9a-f]+)?>/)) {
    s = substr($0, RSTART, RLENGTH); t = base
    if (s ~ /\+0x/) { sub(/.*\+0x/, "", s); sub(/>/, "", s); t = base + hex(s) }
    br[n] = t
    if (t <= a && (!(t in last) || last[t] < a)) last[t] = a
  }
}
END {
  if (range != "") {  # count in a given range; its last instruction must branch back to its first
    split(range, r, "-"); rs = hex(substr(r[1], 3)); re = hex(substr(r[2], 3)); c = 0; m = 0; back = 0
    for (x = 1; x <= n; x++) if (addr[x] >= rs && addr[x] <= re) { c++; m += mf[x]; if (addr[x] == re && br[x] == rs) back = 1 }
    if (back) printf "%d %d %s\n", c, m, range; else print "not a backward branch"
    exit
  }
  nl = 0
  for (k in last) { nl++; ls[nl] = k + 0; le[nl] = last[k] }
  best = 0
  for (i = 1; i <= nl; i++) {
    inner = 1
    for (j = 1; j <= nl; j++) if (j != i && ls[j] >= ls[i] && le[j] <= le[i]) inner = 0
    if (!inner) continue
    c = 0; m = 0
    for (x = 1; x <= n; x++) if (addr[x] >= ls[i] && addr[x] <= le[i]) { c++; m += mf[x] }
    if (!best || m > bm || (m == bm && (c < bc || (c == bc && ls[i] < bs)))) { best = 1; bm = m; bc = c; bs = ls[i]; be = le[i] }
  }
  if (best) printf "%d %d 0x%x-0x%x\n", bc, bm, bs, be; else print "- - -"
}'

# inspect_hot_loop OBJ TARGET OP: hkgen inspect's hot-loop columns (found by
# their header) against llvm-objdump-22 + awk. GEMM: MFMAs of the target's
# kind, share in (0,1], the same counts in the same range. RoPE and attention:
# the plain rule picks the same loop (GEMM objects hold jumps back from
# out-of-line blocks, which hkgen does not take for loops); RoPE has no MFMA.
inspect_hot_loop() {
  obj=$1 t=$2 op=$3
  run_hk "$T/hot.out" inspect "$obj"
  expect_rc 0 "hkgen inspect $obj"
  got=$(awk 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    NR == 2 { print $c["loop"], $c["MFMA"], $c["at"], $c["share"], $c["mnemonics"] }' "$T/hot.out")
  set -- $got
  [ $# = 5 ] || fail "$obj: no hot-loop columns: $(cat "$T/hot.out")"
  loop=$1 mfma=$2 at=$3 share=$4 mn=$5
  llvm-objdump-22 -d --no-show-raw-insn --mcpu="$t" "$obj" >"$T/dis" 2>&1 ||
    fail "llvm-objdump-22 failed on $obj: $(head -5 "$T/dis")"
  case $op in
  gemm)
    [ "$mfma" != - ] && [ "$mfma" -gt 0 ] || fail "$obj (gemm): hot loop without MFMA: $(cat "$T/hot.out")"
    awk -v s="$share" -v l="$loop" -v m="$mfma" 'BEGIN { d = m / l - s; exit !(s > 0 && s <= 1 && d < 0.001 && d > -0.001) }' ||
      fail "$obj (gemm): share $share is not $mfma/$loop in (0,1]"
    eval "want=\$MFMA_$t"
    [ "$mn" = "$want" ] || fail "$obj (gemm): hot-loop MFMA $mn, expected $want"
    indep=$(awk -v range="$at" "$HOT_LOOP_AWK" "$T/dis")
    ;;
  rope)
    [ "$mfma" = 0 ] || [ "$mfma" = - ] || fail "$obj (rope): $mfma MFMAs in its hot loop"
    indep=$(awk "$HOT_LOOP_AWK" "$T/dis")
    ;;
  *) indep=$(awk "$HOT_LOOP_AWK" "$T/dis") ;;
  esac
  [ "$indep" = "$loop $mfma $at" ] ||
    fail "$obj ($op): hkgen inspect says '$loop $mfma $at', llvm-objdump + awk '$indep'"
}

case_inspect() {
  cat=$WORK/catalog
  [ -d "$cat" ] || fail "$cat is missing: the build_all test must run first"
  for t in gfx90a gfx942 gfx950; do
    obj=$(ls "$cat"/*/"$t"/*.hsaco 2>/dev/null | head -1)
    [ -n "$obj" ] || fail "no .hsaco for $t under $cat"
    k=$(basename "$obj" .hsaco)
    run_hk "$T/ins.out" inspect "$obj"
    expect_rc 0 "hkgen inspect $obj"
    awk -v k="$k" -v t="$t" '$1 == k && $2 == t { found = 1 } END { exit !found }' "$T/ins.out" ||
      fail "hkgen inspect $obj printed no row for $k ($t): $(cat "$T/ins.out")"
    [ "$(wc -l <"$T/ins.out")" = 2 ] || fail "expected a header and one row: $(cat "$T/ins.out")"
    echo "ok   inspect $t/$k.hsaco"
  done
  for t in gfx90a gfx942 gfx950; do
    ngemm=0 nrope=0 nattn=0
    for hip in "$cat"/*/"$t"/*.hip; do
      op=$(sed -n 's/^\/\/ kernel [A-Za-z0-9_]*: op \([a-z_]*\), target .*/\1/p' "$hip" | head -1)
      case $op in gemm) [ "$ngemm" -lt 3 ] || continue ;; rope) [ "$nrope" -lt 2 ] || continue ;;
      attn_fwd) [ "$nattn" -lt 3 ] || continue ;; *) continue ;; esac
      inspect_hot_loop "${hip%.hip}.hsaco" "$t" "$op"
      case $op in gemm) ngemm=$((ngemm + 1)) ;; rope) nrope=$((nrope + 1)) ;; *) nattn=$((nattn + 1)) ;; esac
    done
    [ "$ngemm" -ge 1 ] && [ "$nrope" -ge 1 ] || fail "$t: expected GEMM and RoPE objects under $cat"
    echo "ok   $t hot loops: $ngemm GEMM, $nrope RoPE, $nattn attention objects agree with llvm-objdump + awk"
  done
  # Not a code object: exit 1 with a message, no crash.
  printf 'not an ELF\n' >"$T/junk.hsaco"
  run_hk "$T/junk.out" inspect "$T/junk.hsaco"
  expect_rc 1 "hkgen inspect on junk"
  grep -q 'not an AMDGPU code object' "$T/junk.out" || fail "no message for junk: $(cat "$T/junk.out")"
  run_hk "$T/missing.out" inspect "$T/nothing-here"
  expect_rc 2 "hkgen inspect on a missing path"
  echo "ok   inspect refuses junk (1) and a missing path (2)"
}

[ $# = 1 ] || fail "usage: build_cases.sh all|determinism|cache|mfma|manifest|failure|lock|inspect|stale|outdir"
case $1 in
all | determinism | cache | mfma | manifest | failure | lock | inspect | stale | outdir) "case_$1" ;;
*) fail "unknown case $1" ;;
esac
