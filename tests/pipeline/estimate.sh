#!/bin/sh
# estimate.sh: `hkgen inspect --estimate` (gen/estimate.c). Bad input gets a
# message and exit status 2, never a number: an unknown part, a part of
# another target, a cubin, a kernel without a hot loop or without the matrix
# work the problem asks, a missing or unknown --shape value. Sanity of the
# model on synthetic kernels compiled here (clang-22) and on a generated
# GEMM: an MFMA-bound loop reports the MFMA pipe, doubling the work doubles
# the time, no rate above the part's peak. A hand-written loop split by
# labels (the shape of AITER's assembly) is found whole. No predicted number
# is hard-coded.
. "$(dirname "$0")/../lib/lib.sh"

CLANG=${HKGEN_CLANG:-clang-22}
command -v "$CLANG" >/dev/null || fail "no $CLANG (install clang-22)"

cat >"$T/k.hip" <<'SRC'
typedef float f4 __attribute__((ext_vector_type(4)));
typedef __bf16 b8 __attribute__((ext_vector_type(8)));
#define ID __builtin_amdgcn_workitem_id_x()
#define KERNEL extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(256, 256))) void
/* four independent MFMAs per trip, nothing else */
KERNEL mfma_loop(f4 *out, const b8 *in, int n) {
  b8 a = in[ID];
  f4 c0 = {0, 0, 0, 0}, c1 = c0, c2 = c0, c3 = c0;
  for (int i = 0; i < n; i++) {
    c0 = __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, a, c0, 0, 0, 0);
    c1 = __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, a, c1, 0, 0, 0);
    c2 = __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, a, c2, 0, 0, 0);
    c3 = __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, a, c3, 0, 0, 0);
  }
  out[ID] = c0 + c1 + c2 + c3;
}
/* one MFMA, no loop */
KERNEL mfma_once(f4 *out, const b8 *in) {
  f4 c = {0, 0, 0, 0};
  out[ID] = __builtin_amdgcn_mfma_f32_16x16x32_bf16(in[ID], in[ID], c, 0, 0, 0);
}
/* a copy loop: memory, no matrix instructions */
KERNEL copy_loop(float *out, const float *in, int n) {
  for (int i = 0; i < n; i++) out[i * 256 + ID] = in[i * 256 + ID];
}
SRC
"$CLANG" -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch=gfx950 -nogpulib -nogpuinc -O3 \
  -std=c++17 "$T/k.hip" -o "$T/k.hsaco" || fail "clang could not compile the synthetic kernels"

# est OUT OBJ PART SHAPE: one estimate; rc set.
est() { run_hk "$1" inspect "$2" --estimate "$3" --shape "$4"; }
# field OUT KERNEL N: the N-th column of KERNEL's row.
field() { awk -v k="$2" -v n="$3" '$1 == k { print $n }' "$1"; }
# seconds OUT KERNEL: the predicted time in seconds.
seconds() { awk -v k="$2" '$1 == k { print ($7 == "ms" ? $6 / 1e3 : $6 / 1e6) }' "$1"; }
expect_msg() { grep -q "$2" "$1" || { cat "$1" >&2; fail "expected the message '$2'"; }; }
ratio_in() { awk -v a="$1" -v b="$2" -v lo="$3" -v hi="$4" 'BEGIN { r = b / a; exit !(r >= lo && r <= hi) }'; }

# ---- bad input -------------------------------------------------------------
est "$T/o" "$T/k.hsaco" MI999X blocks=1
expect_rc 2 "unknown part"
expect_msg "$T/o" "unknown AMD part 'MI999X'; allowed: MI210, MI250X, MI300X, MI325X, MI350X, MI355X"
est "$T/o" "$T/k.hsaco" H200 blocks=1
expect_rc 2 "an NVIDIA part"
expect_msg "$T/o" "unknown AMD part 'H200'"
est "$T/o" "$T/k.hsaco" MI325X blocks=1
expect_rc 2 "a part of another target"
expect_msg "$T/o" "a gfx950 object cannot run on MI325X (a gfx942 part)"
printf '\177ELF\002\001\001\063\007\000\000\000\000\000\000\000\002\000\276\000' >"$T/fake.cubin"
head -c 200 /dev/zero >>"$T/fake.cubin"
est "$T/o" "$T/fake.cubin" MI355X blocks=1
expect_rc 2 "a cubin"
expect_msg "$T/o" "not an AMD code object: the estimate reads AMD code objects only (this is a CUDA cubin)"
run_hk "$T/o" inspect "$T/k.hsaco" --estimate MI355X
expect_rc 2 "an object without its problem"
expect_msg "$T/o" "needs --shape blocks=N"
est "$T/o" "$T/k.hsaco" MI355X blocks=1024,mma_flops=1e12,flops=1e12
expect_rc 2 "matrix work on kernels without a matrix loop"
expect_msg "$T/o" "kernel mfma_once has no hot loop with matrix instructions, and its straight-line code does"
expect_msg "$T/o" "kernel copy_loop has no matrix instructions, but the problem has matrix work"
est "$T/o" "$T/k.hsaco" MI355X blocks=1024,bytes=1e9,colour=3
expect_rc 2 "an unknown --shape name"
expect_msg "$T/o" "shape colour: no kernel estimated here takes it"
est "$T/o" "$T/k.hsaco" MI355X blocks=x
expect_rc 2 "a --shape value that is no number"
expect_msg "$T/o" "shape blocks: 'x' is not a number"
if grep -q 'TFLOP/s\|TB/s' "$T/o"; then fail "a number was printed for bad input"; fi

# ---- the model on the synthetic loop ---------------------------------------
# 1024 workgroups of 4 waves, each trip 4 MFMAs of 16384 FLOPs per wave
f1=$(awk 'BEGIN { printf "%.0f", 1024 * 4 * 4 * 16384 * 20000 }')
f2=$(awk -v f="$f1" 'BEGIN { printf "%.0f", 2 * f }')
run_hk "$T/a" inspect "$T/k.hsaco" --estimate MI355X --shape "blocks=1024,flops=$f1,mma_flops=$f1"
rc_a=$rc
grep -q '^mfma_loop ' "$T/a" || { cat "$T/a" >&2; fail "no estimate row for mfma_loop (status $rc_a)"; }
[ "$(field "$T/a" mfma_loop 5)" = 20000 ] || fail "mfma_loop: trips $(field "$T/a" mfma_loop 5), expected 20000"
grep '^mfma_loop ' "$T/a" | grep -q 'MFMA pipe$' || { cat "$T/a" >&2; fail "mfma_loop is not reported MFMA-bound"; }
run_hk "$T/b" inspect "$T/k.hsaco" --estimate MI355X --shape "blocks=1024,flops=$f2,mma_flops=$f2"
ratio_in "$(seconds "$T/a" mfma_loop)" "$(seconds "$T/b" mfma_loop)" 1.8 2.2 ||
  fail "twice the work: $(seconds "$T/a" mfma_loop) s then $(seconds "$T/b" mfma_loop) s"
awk '$1 == "mfma_loop" { exit !($8 > 0 && $8 <= 2517) }' "$T/a" || fail "mfma_loop: a rate above MI355X's peak"
# the copy loop: trips from the bytes, memory-bound
run_hk "$T/c" inspect "$T/k.hsaco" --estimate MI355X --shape "blocks=8192,bytes=8e9"
grep '^copy_loop ' "$T/c" | grep -q 'TB/s  \(HBM\|L2\) bandwidth$\|TB/s  latency$' ||
  { cat "$T/c" >&2; fail "copy_loop is not memory- or latency-bound"; }

# ---- hand-written assembly (AITER's shape) ----------------------------------
# A loop split by a label, its branches naming labels: llvm-objdump starts a
# header at each label and prints the label as the branch's operand. The hot
# loop runs from hk_top to the s_branch back, both halves' MFMAs in it.
cat >"$T/asm.hip" <<'SRC'
typedef float f4 __attribute__((ext_vector_type(4)));
typedef __bf16 b8 __attribute__((ext_vector_type(8)));
extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(256, 256)))
void labelled_loop(f4 *out, const b8 *in, int n) {
  f4 c = {0, 0, 0, 0};
  b8 a = in[__builtin_amdgcn_workitem_id_x()];
  asm volatile("s_mov_b32 s20, 0\n"
               "hk_top:\n"
               "v_mfma_f32_16x16x32_bf16 %0, %1, %1, %0\n"
               "v_mfma_f32_16x16x32_bf16 %0, %1, %1, %0\n"
               "s_add_u32 s20, s20, 1\n"
               "s_cmp_lt_u32 s20, %2\n"
               "s_cbranch_scc0 hk_exit\n"
               "hk_mid:\n"
               "v_mfma_f32_16x16x32_bf16 %0, %1, %1, %0\n"
               "v_mfma_f32_16x16x32_bf16 %0, %1, %1, %0\n"
               "s_branch hk_top\n"
               "hk_exit:\n"
               : "+v"(c) : "v"(a), "s"(n) : "s20", "scc");
  out[__builtin_amdgcn_workitem_id_x()] = c;
}
SRC
"$CLANG" -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch=gfx950 -nogpulib -nogpuinc -O3 \
  -std=c++17 "$T/asm.hip" -o "$T/asm.hsaco" || fail "clang could not compile the labelled asm loop"
top=$(llvm-objdump-22 -t "$T/asm.hsaco" | awk '$NF == "hk_top" { sub(/^0+/, "", $1); print $1 }')
back=$(llvm-objdump-22 -d --mcpu=gfx950 "$T/asm.hsaco" | awk '$1 == "s_branch" && $2 == "hk_top" {
  for (i = 1; i <= NF; i++) if ($i == "//") { a = $(i + 1); sub(/:$/, "", a); sub(/^0+/, "", a); print tolower(a) } }')
[ -n "$top" ] && [ -n "$back" ] || fail "the labelled loop's labels are not in the object (hk_top '$top', s_branch '$back')"
run_hk "$T/o" inspect "$T/asm.hsaco"
expect_rc 0 "inspect of the labelled loop"
row=$(awk '$1 == "labelled_loop" { print $10, $11, $13 }' "$T/o")
[ "$row" = "8 4 0x$top-0x$back" ] || { cat "$T/o" >&2; fail "labelled loop: '$row', expected '8 4 0x$top-0x$back'"; }
run_hk "$T/o" inspect "$T/asm.hsaco" --estimate MI355X --shape "blocks=1024,flops=$f1,mma_flops=$f1"
expect_rc 0 "estimate of the labelled loop"
[ "$(field "$T/o" labelled_loop 5)" = 20000 ] || { cat "$T/o" >&2; fail "labelled loop: trips not 20000"; }

# ---- a generated GEMM from a catalogue -------------------------------------
cat >"$T/gemm.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: gemm
    name: g
    layout: nt
    tile_m: 128
    tile_n: 128
    target: gfx950
SPEC
run_hk "$T/build" build "$T/gemm.yaml" -o "$T/cat" -q
expect_rc 0 "hkgen build"
run_hk "$T/g1" inspect "$T/cat" --estimate MI355X --shape M=8192,N=8192,K=2048
expect_rc 0 "estimate of the catalogue"
run_hk "$T/g2" inspect "$T/cat" --estimate MI355X --shape M=16384,N=8192,K=2048
expect_rc 0 "estimate of twice the problem"
k=$(awk 'NR == 2 { print $1 }' "$T/g1")
ratio_in "$(seconds "$T/g1" "$k")" "$(seconds "$T/g2" "$k")" 1.6 2.4 ||
  fail "gemm, twice M: $(seconds "$T/g1" "$k") s then $(seconds "$T/g2" "$k") s"
awk -v k="$k" '$1 == k { exit !($8 > 0 && $8 <= 2517) }' "$T/g1" || fail "gemm: a rate above MI355X's peak"
run_hk "$T/o" inspect "$T/cat" --estimate MI355X --shape M=4096,N=4096
expect_rc 2 "a run-time parameter missing"
expect_msg "$T/o" "K is a run-time parameter: give it with --shape K=V"
run_hk "$T/o" inspect "$T/cat" --estimate MI300X --shape M=8192,N=8192,K=2048
expect_rc 2 "a catalogue without the part's target"
expect_msg "$T/o" "no gfx942 kernel in this catalogue to estimate on MI300X"
run_hk "$T/o" inspect "$T/cat" --shape M=1
expect_rc 2 "--shape without --estimate"
expect_msg "$T/o" "shape goes with --estimate PART"

# a baked kernel: a row saying it does not serve another problem; explain's estimate line
cat >"$T/baked.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: gemm
    name: gb
    layout: nt
    M: 4096
    N: 4096
    K: 4096
    target: gfx950
SPEC
run_hk "$T/build" build "$T/baked.yaml" -o "$T/bcat" -q
expect_rc 0 "hkgen build (baked)"
run_hk "$T/o" inspect "$T/bcat" --estimate MI355X --shape M=1024
expect_rc 2 "no kernel serves the problem"
expect_msg "$T/o" "gb .* not this problem: M is 4096 in the kernel, not 1024"
expect_msg "$T/o" "no kernel in this catalogue serves the problem"
# plain inspect estimates the kernel whose every parameter is baked, on its
# target's biggest part, and points to --estimate for the run-time ones
run_hk "$T/o" inspect "$T/bcat"
expect_rc 0 "hkgen inspect (baked)"
grep -q '^estimates (kernels with every parameter baked' "$T/o" || { cat "$T/o" >&2; fail "inspect: no estimates"; }
grep -Eq '^gb +gfx950 +MI355X .* TFLOP/s  ' "$T/o" || { cat "$T/o" >&2; fail "inspect: no estimate row of gb"; }
run_hk "$T/o" inspect "$T/cat"
grep -q 'with run-time parameters: hkgen inspect DIR --estimate PART --shape' "$T/o" ||
  { cat "$T/o" >&2; fail "inspect: no pointer to --estimate for run-time kernels"; }
run_hk "$T/o" explain "$T/baked.yaml" "$T/gemm.yaml"
expect_rc 0 "hkgen explain"
[ "$(grep -c '^  estimate on MI355X: .* TFLOP/s  ' "$T/o")" = 1 ] ||
  { cat "$T/o" >&2; fail "explain: one estimate line expected (the baked, cached kernel only)"; }

# attention and RoPE through their descriptors' work: a causal mask halves the
# time of a long sequence; RoPE's rate is in TB/s
cat >"$T/attn.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_fwd
    name: a
    head_dim: 64
    causal: [true, false]
    target: gfx950
  - op: rope
    name: r
    target: gfx950
SPEC
run_hk "$T/build" build "$T/attn.yaml" -o "$T/acat" -q
expect_rc 0 "hkgen build (attention, rope)"
run_hk "$T/a" inspect "$T/acat" --estimate MI355X \
  --shape batch=4,seqlen_q=8192,seqlen_k=8192,heads_q=32,heads_k=8,seq_len=4096,head_dim=128
expect_rc 0 "head_dim baked in attention, given for RoPE: RoPE is estimated"
expect_msg "$T/a" "a_c1 .* not this problem: head_dim is 64 in the kernel, not 128"
grep -q '^r .* TB/s  ' "$T/a" || { cat "$T/a" >&2; fail "rope: no estimate in TB/s"; }
run_hk "$T/a" inspect "$T/acat" --estimate MI355X --shape batch=4,seqlen_q=8192,seqlen_k=8192,heads_q=32,heads_k=8,seq_len=4096,head_dim=64
expect_rc 0 "estimate of attention and rope"
ratio_in "$(seconds "$T/a" a_c0)" "$(seconds "$T/a" a_c1)" 0.4 0.7 ||
  fail "causal against full attention: $(seconds "$T/a" a_c1) s against $(seconds "$T/a" a_c0) s"
# a run-time sliding window: the estimate counts only the key blocks the
# window leaves (256 keys against 8192: under a sixth of the time); decode:
# its pages are the work, so twice the table row takes about twice the time
cat >"$T/win.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_fwd
    name: w
    head_dim: 64
    causal: true
    window_left: any
    target: gfx950
SPEC
cat >"$T/dec.yaml" <<'SPEC'
hkgen: 1
kernels:
  - op: attn_decode
    name: d
    head_dim: 128
    heads_q: 32
    heads_k: 8
    q_tokens: 1
    target: gfx950
SPEC
run_hk "$T/build" build "$T/win.yaml" -o "$T/wcat" -q
expect_rc 0 "hkgen build (window)"
run_hk "$T/build" build "$T/dec.yaml" -o "$T/dcat" -q
expect_rc 0 "hkgen build (decode)"
sh_w="batch=4,seqlen_q=8192,seqlen_k=8192,heads_q=32,heads_k=8"
run_hk "$T/w1" inspect "$T/wcat" --estimate MI355X --shape "$sh_w,window_left=8192"
expect_rc 0 "estimate of the window kernel"
run_hk "$T/w2" inspect "$T/wcat" --estimate MI355X --shape "$sh_w,window_left=256"
expect_rc 0 "estimate with a 256-key window"
ratio_in "$(seconds "$T/w1" w)" "$(seconds "$T/w2" w)" 0.01 0.17 ||
  fail "a 256-key window: $(seconds "$T/w2" w) s against $(seconds "$T/w1" w) s for 8192"
run_hk "$T/d1" inspect "$T/dcat" --estimate MI355X --shape batch=64,max_blocks=256,num_blocks=65536
expect_rc 0 "estimate of the decode kernel"
run_hk "$T/d2" inspect "$T/dcat" --estimate MI355X --shape batch=64,max_blocks=512,num_blocks=65536
expect_rc 0 "estimate of decode, twice the pages"
ratio_in "$(seconds "$T/d1" d)" "$(seconds "$T/d2" d)" 1.6 2.4 ||
  fail "decode, twice the pages: $(seconds "$T/d1" d) s then $(seconds "$T/d2" d) s"
echo "PASS estimate"
