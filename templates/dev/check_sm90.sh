#!/usr/bin/env bash
# templates/dev/check_sm90.sh - developer check of the sm_90a (Hopper) skeletons and hk_sm90.h.
#
# For every sample prologue templates/dev/<op>_*.m4 (written for gfx942):
# retarget it to sm_90a (arch sm90, header hk_sm90.h), expand with m4 the way
# gen/skel.c does (templates/<op>.sm90.hip.m4 when it exists, else
# templates/<op>.hip.m4), reject leftover macro words, compile with nvcc for
# sm_90a, print registers / shared memory / spills / stack (-Xptxas -v) and,
# for GEMM, count the tensor-core instructions (HMMA or HGMMA) in the SASS.
#
# Usage: templates/dev/check_sm90.sh [PROLOGUE...]    (run from anywhere)
# Output files (.cu, .cubin, .sass, logs) go to $HK_CHECK_OUT (default: a fresh temporary directory).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tpl="$top/templates"
out=${HK_CHECK_OUT:-$(mktemp -d /tmp/hkcheck_sm90.XXXXXX)}
mkdir -p "$out"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
cuobjdump=${CUOBJDUMP:-$(dirname "$nvcc")/cuobjdump}
# no cuobjdump (this CPU machine's CUDA 13.0 has none): count the PTX
# instructions instead and say so (column `tensor-core' then ends in `ptx')
[ -x "$cuobjdump" ] || cuobjdump=$(command -v cuobjdump || true)
nvflags=(-x cu --cubin -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xptxas -v)

# words that must never reach the output (gen/skel.c rejects the same): m4 builtins and hkm_ macros
leftover_re='(^|[^A-Za-z0-9_])(m4_|hkm_)'

if [ $# -gt 0 ]; then prologues=("$@"); else prologues=("$tpl"/dev/*_*.m4); fi

fail=0
printf '%-30s %5s %6s %6s %6s  %s\n' variant regs smem spill stack tensor-core
for pro in "${prologues[@]}"; do
    name=$(basename "$pro" .m4)
    op=${name%%_*}
    base="$out/${name}_sm_90a"
    skel="$tpl/$op.sm90.hip.m4"
    [ -f "$skel" ] || skel="$tpl/$op.hip.m4"
    sed -e 's/gfx942/sm_90a/g' -e 's/\[\[cdna3\]\]/[[sm90]]/' -e 's/hk_cdna\.h/hk_sm90.h/' "$pro" > "$base.prologue.m4"
    if ! m4 -P --fatal-warnings -I "$tpl" -I "$tpl/include" "$tpl/hk.m4" - "$skel" \
            < "$base.prologue.m4" > "$base.cu" 2> "$base.m4.err" || [ -s "$base.m4.err" ]; then
        echo "FAIL $name: m4"; cat "$base.m4.err"; fail=1; continue
    fi
    if grep -nE "$leftover_re" "$base.cu" > "$base.leftover"; then
        echo "FAIL $name: leftover macro words:"; head -5 "$base.leftover"; fail=1; continue
    fi
    if ! "$nvcc" "${nvflags[@]}" "$base.cu" -o "$base.cubin" > "$base.cc.log" 2>&1; then
        echo "FAIL $name: nvcc"; grep -v '^ptxas info' "$base.cc.log" | head -20; fail=1; continue
    fi
    grep -E 'warning|error' "$base.cc.log" | grep -v '^ptxas info' | head -5 | sed "s/^/WARN $name: /"
    regs=$(grep -o 'Used [0-9]* registers' "$base.cc.log" | grep -o '[0-9]*' | head -1)
    smem=$(grep -o '[0-9]* bytes smem' "$base.cc.log" | grep -o '^[0-9]*' | head -1)
    spill=$(grep -o '[0-9]* bytes spill stores' "$base.cc.log" | grep -o '^[0-9]*' | head -1)
    stack=$(grep -o '[0-9]* bytes stack frame' "$base.cc.log" | grep -o '^[0-9]*' | head -1)
    if [ -n "$cuobjdump" ]; then
        "$cuobjdump" -sass "$base.cubin" > "$base.sass"
        tc=$(grep -cE '\b(HMMA|HGMMA)\b' "$base.sass")
        lmem=$(grep -cE '\b(LDL|STL)\b' "$base.sass")
    else
        "$nvcc" -x cu --ptx -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 "$base.cu" -o "$base.ptx" 2>/dev/null
        tc="$(grep -cE '\b(mma\.sync|wgmma\.mma_async)' "$base.ptx") ptx"
        lmem=$(grep -cE '\b(ld|st)\.local' "$base.ptx")
    fi
    printf '%-30s %5s %6s %6s %6s  %s\n' "$name" "${regs:-?}" "${smem:-0}" "${spill:-?}" "${stack:-?}" "$tc"
    if [ "$op" = gemm ] && [ "${tc%% *}" -eq 0 ]; then echo "FAIL $name: no HMMA/HGMMA in the SASS"; fail=1; fi
    if [ "${spill:-1}" != 0 ] || [ "${stack:-1}" != 0 ] || [ "$lmem" != 0 ]; then
        echo "FAIL $name: spills/local memory (spill $spill bytes, stack $stack bytes, $lmem LDL/STL)"; fail=1
    fi
    if [ "${smem:-0}" -gt 49152 ]; then echo "FAIL $name: shared memory ${smem} > 48 KiB (static)"; fail=1; fi
done
echo "outputs in $out"
[ $fail = 0 ] && echo "check_sm90.sh: all passed" || echo "check_sm90.sh: FAILURES"
exit $fail
