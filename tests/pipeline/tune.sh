#!/bin/sh
# hkgen tune with the estimate (no GPU here): a gfx950 GEMM spec with tile
# lists, two problems; each problem's "tuned" entry names the candidate with
# the least estimated time, records every candidate and the method, and
# hkrt_select then picks it (on an emulated build of the same spec carrying
# that list) while a problem without an entry selects as before. Error
# paths of tune and bench: no GPU (status 1, said), an sm_90a catalogue
# (neither measured nor estimated here: 1), bad --shape, unknown kernel,
# unknown part (2, naming them), a tuned entry naming a missing kernel.
. "$(dirname "$0")/../lib/lib.sh"
cat >"$T/g.yaml" <<'Y'
kernels:
  - op: gemm
    name: tg
    target: gfx950
    tile_m: 128
    tile_n: [128, 256]
Y
P1=layout=nt,M=4096,N=4096,K=4096
P2=layout=nt,M=256,N=8192,K=1024
run_hk "$T/tune.txt" tune "$T/g.yaml" -o "$T/cat" -j2 --shape $P1 --shape $P2
expect_rc 0 "tune with the estimate"
M="$T/cat/manifest.json"
[ "$(jsonq -c "$M" tuned.*)" = 2 ] || fail "two tuned entries expected"
for i in 0 1; do
  [ "$(jsonq "$M" tuned.$i.method)" = estimate ] || fail "entry $i: method"
  [ "$(jsonq "$M" tuned.$i.part)" = MI355X ] || fail "entry $i: the target's largest part"
  [ "$(jsonq -c "$M" tuned.$i.candidates.*)" = 2 ] || fail "entry $i: two candidates"
  [ "$(jsonq -c "$M" "tuned.$i.candidates[us>0]")" = 2 ] || fail "entry $i: a positive time per candidate"
  best=$(python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['tuned'][$i]; print(min(e['candidates'], key=lambda c: c['us'])['kernel'])" "$M")
  [ "$(jsonq "$M" tuned.$i.kernel)" = "$best" ] || fail "entry $i: the winner is not the fastest candidate"
done
[ "$(jsonq "$M" tuned.0.problem.M)" = 4096 ] || fail "entry 0 records its problem"
grep -q "<- tuned" "$T/tune.txt" || fail "tune prints the winner"

# hkrt_select prefers the winner: the same spec emulated, with the tuned list
# (the kernels' "cost" removed from both: an estimate's costs already rank as an estimate's tune
# does, amd_select.sh; here the tuned list must decide on its own)
run_hk "$T/emu.txt" build "$T/g.yaml" --emulate -o "$T/emu"
expect_rc 0 "emulated build"
python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
assert all('cost' in k for k in m['kernels'])
for k in m['kernels']: del k['cost'], k['cost_part']
json.dump(m, open(sys.argv[1], 'w'), indent=1)" "$T/emu/manifest.json"
cp -r "$T/emu" "$T/emu_tuned"
python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['tuned']
m = json.load(open(sys.argv[2]))
m['tuned'] = t
json.dump(m, open(sys.argv[2], 'w'), indent=1)" "$M" "$T/emu_tuned/manifest.json"
SEL="python3 $TESTS_DIR/rt/tune_select.py $TOP/build/libhkrt.so"
sel() { d=$1; shift; $SEL "$d" 1 gfx950 "$@"; }
P3=layout=nt,M=512,N=512,K=512
sel "$T/emu" $P1 $P2 $P3 >"$T/before.txt"
sel "$T/emu_tuned" $P1 $P2 $P3 >"$T/after.txt"
grep -q ERROR "$T/before.txt" "$T/after.txt" && fail "selection failed: $(cat "$T/before.txt" "$T/after.txt")"
[ "$(sed -n 1p "$T/after.txt")" = "$(jsonq "$M" tuned.0.kernel)" ] || fail "problem 1: hkrt_select did not pick the tuned kernel"
[ "$(sed -n 2p "$T/after.txt")" = "$(jsonq "$M" tuned.1.kernel)" ] || fail "problem 2: hkrt_select did not pick the tuned kernel"
[ "$(sed -n 3p "$T/after.txt")" = "$(sed -n 3p "$T/before.txt")" ] || fail "an untuned problem selects differently"
# the test means something only if tuning changed a choice
[ "$(sed -n 1,2p "$T/after.txt")" != "$(sed -n 1,2p "$T/before.txt")" ] || fail "the winners are what selection picked anyway"
# a tuned entry naming a kernel the catalogue lacks: the open fails, naming it
sed 's/"kernel": "tg_tn128"/"kernel": "tg_gone"/' "$T/emu_tuned/manifest.json" >"$T/m.json"
mkdir -p "$T/emu_bad" && cp -r "$T/emu/gfx950" "$T/emu_bad/" && mv "$T/m.json" "$T/emu_bad/manifest.json"
grep -q tg_gone "$T/emu_bad/manifest.json" || fail "test set-up: no entry renamed"
sel "$T/emu_bad" $P1 | grep -q "ERROR .*tuned entry .*no gemm kernel tg_gone for gfx950" || fail "a bad tuned entry was not refused"

# timing needs a device clock: the emulator refuses events and the L2 flush, by name
python3 - "$TOP/build/libhkrt.so" <<'PY' || fail "the emulator's timing calls did not refuse clearly"
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.hkrt_error.restype = ctypes.c_char_p
dev, ev = ctypes.c_void_p(), ctypes.c_void_p()
assert lib.hkrt_device_open(1, b"gfx950", ctypes.byref(dev)) == 0
assert lib.hkrt_event_create(dev, ctypes.byref(ev)) == 1 and b"no device clock" in lib.hkrt_error()
assert lib.hkrt_flush_l2(dev, None, None) == 1 and b"hkrt_flush_l2: the emulator backend has no device clock" in lib.hkrt_error()
lib.hkrt_device_close(dev)
PY

# --catalog: tune again in place (replaces the list)
run_hk "$T/re.txt" tune --catalog "$T/cat" --shape $P3 --part MI350X
expect_rc 0 "tune --catalog"
[ "$(jsonq -c "$M" tuned.*)" = 1 ] || fail "tune --catalog replaces the list"
[ "$(jsonq "$M" tuned.0.part)" = MI350X ] || fail "--part"

# error paths
run_hk "$T/e1.txt" tune --catalog "$T/cat" --shape M=4096,N=4096,K=4096
expect_rc 2 "a problem no kernel serves (layout left out)"
grep -q "no kernel of .* serves this problem" "$hk_out" || fail "no clear message for an unserved problem"
run_hk "$T/e2.txt" tune --catalog "$T/cat" --shape layout=nt,M=x,N=1,K=1
expect_rc 2 "bad --shape"
grep -q "shape M=x: M takes an integer" "$hk_out" || fail "bad --shape not named"
run_hk "$T/e3.txt" tune --catalog "$T/cat" --shape $P3 --part MI999
expect_rc 2 "unknown part"
grep -q "part: 'MI999'" "$hk_out" || fail "unknown part not named"
run_hk "$T/e4.txt" bench "$T/cat"
expect_rc 1 "bench without a GPU"
grep -q "hkgen bench: no GPU here (CUDA: .*; HIP: " "$hk_out" || fail "bench: no clear message without a GPU"
run_hk "$T/e5.txt" bench "$T/cat" --kernel nope
expect_rc 2 "bench: unknown kernel"
grep -q "no kernel nope in this catalogue" "$hk_out" || fail "bench: unknown kernel not named"
run_hk "$T/e6.txt" bench "$T/cat" --shape M=-3
expect_rc 2 "bench: bad --shape"
grep -q "shape M=-3" "$hk_out" || fail "bench: bad --shape not named"
run_hk "$T/e7.txt" bench "$T/nothing"
expect_rc 2 "bench: no catalogue"

# sm_90a without a GPU: neither measured nor estimated, said so (status 1)
cat >"$T/h.yaml" <<'Y'
kernels:
  - op: gemm
    name: th
    target: sm_90a
Y
run_hk "$T/h.txt" tune "$T/h.yaml" -o "$T/cat90" --shape $P3
expect_rc 1 "tune sm_90a without a GPU"
grep -q "sm_90a kernels cannot be tuned here: there is no GPU here" "$hk_out" || fail "sm_90a: no clear message"
python3 -c "import json,sys; sys.exit('tuned' in json.load(open(sys.argv[1])))" "$T/cat90/manifest.json" ||
  fail "a tuned list was written on failure"
echo "PASS tune"
