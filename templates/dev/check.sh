#!/usr/bin/env bash
# templates/dev/check.sh - developer check of the m4 skeletons and hk_cdna.h.
#
# For every sample prologue templates/dev/<op>_*.m4 and every target gfx90a,
# gfx942, gfx950: expand with m4 the way gen/ does, reject leftover macro
# words, compile with clang-22, print VGPR/AGPR/SGPR/spills/LDS from the code
# object notes, and (GEMM) check the target's MFMA instruction is there.
# Optionally (HK_CHECK_COMGR=1) also compile gfx90a through comgr 2.4.
#
# Usage: templates/dev/check.sh [PROLOGUE...]    (run from anywhere)
# Output files go to $HK_CHECK_OUT (default: a fresh temporary directory).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tpl="$top/templates"
out=${HK_CHECK_OUT:-$(mktemp -d /tmp/hkcheck.XXXXXX)}
mkdir -p "$out"
targets=${HK_CHECK_TARGETS:-"gfx90a gfx942 gfx950"}

declare -A arch=([gfx90a]=cdna2 [gfx942]=cdna3 [gfx950]=cdna4)
declare -A mfma=([gfx90a]='v_mfma_f32_32x32x8bf16_1k' [gfx942]='v_mfma_f32_32x32x8_bf16' [gfx950]='v_mfma_f32_32x32x16_bf16')

# Words that must never reach the output: m4 builtins, parameters, and every
# macro the prologue or the templates define (a name left in quoted text).
macro_words=$( { grep -ho 'm4_define(\[hk_[A-Za-z0-9_]*' "$tpl"/*.m4 "$tpl"/dev/*.m4 | sed 's/.*\[//'; } | sort -u)
leftover_re="m4_|\\bhk_p_[A-Za-z0-9_]*|\\b($(echo $macro_words | tr ' ' '|'))\\b"

if [ $# -gt 0 ]; then prologues=("$@"); else prologues=("$tpl"/dev/*_*.m4); fi

fail=0
printf '%-30s %-7s %5s %5s %5s %6s %6s %6s  %s\n' variant target vgpr agpr sgpr vspill sspill lds mfma
for pro in "${prologues[@]}"; do
    name=$(basename "$pro" .m4)
    op=${name%%_*}
    for t in $targets; do
        base="$out/${name}_$t"
        # the prologue is written for gfx942; retarget it
        sed -e "s/gfx942/$t/g" -e "s/\[\[cdna3\]\]/[[${arch[$t]}]]/" "$pro" > "$base.prologue.m4"
        if ! m4 -P -I "$tpl" -I "$tpl/include" "$tpl/hk.m4" - "$tpl/$op.hip.m4" \
                < "$base.prologue.m4" > "$base.hip" 2> "$base.m4.err"; then
            echo "FAIL $name $t: m4"; cat "$base.m4.err"; fail=1; continue
        fi
        if grep -nE "$leftover_re" "$base.hip" > "$base.leftover"; then
            echo "FAIL $name $t: leftover macro words:"; head -5 "$base.leftover"; fail=1; continue
        fi
        if ! clang-22 -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch="$t" \
                -nogpulib -nogpuinc -O3 -std=c++17 -Wall -Wno-unused-variable \
                "$base.hip" -o "$base.hsaco" 2> "$base.cc.err"; then
            echo "FAIL $name $t: clang-22"; head -20 "$base.cc.err"; fail=1; continue
        fi
        [ -s "$base.cc.err" ] && { echo "WARN $name $t:"; head -10 "$base.cc.err"; }
        llvm-readelf-22 --notes "$base.hsaco" > "$base.notes"
        note() { grep -m1 -E "^[ -]*\\.$1: " "$base.notes" | sed 's/.*: *//'; }
        vgpr=$(note vgpr_count); agpr=$(note agpr_count); sgpr=$(note sgpr_count)
        vsp=$(note vgpr_spill_count); ssp=$(note sgpr_spill_count)
        lds=$(note group_segment_fixed_size); priv=$(note private_segment_fixed_size)
        mf=-
        if [ "$op" = gemm ]; then
            llvm-objdump-22 -d --mcpu="$t" "$base.hsaco" > "$base.s"
            mf=$(grep -c "${mfma[$t]}" "$base.s")
            [ "$mf" -gt 0 ] || { echo "FAIL $name $t: no ${mfma[$t]}"; fail=1; }
        fi
        printf '%-30s %-7s %5s %5s %5s %6s %6s %6s  %s\n' "$name" "$t" "$vgpr" "$agpr" "$sgpr" "$vsp" "$ssp" "$lds" "$mf"
        if [ "$vsp" != 0 ] || [ "$ssp" != 0 ] || [ "$priv" != 0 ]; then
            echo "FAIL $name $t: spills (vgpr $vsp, sgpr $ssp, private $priv bytes)"; fail=1
        fi
        if [ "$lds" -gt 49152 ]; then echo "FAIL $name $t: LDS $lds > 48 KiB"; fail=1; fi
    done
done

# Optional: gfx90a through comgr 2.4 (LLVM 15), the compiler gen/ uses for it.
if [ "${HK_CHECK_COMGR:-0}" = 1 ]; then
    drv="$out/comgr_compile"
    if cc -O1 -o "$drv" "$tpl/dev/comgr_compile.c" -lamd_comgr 2> "$out/comgr_build.err"; then
        for f in "$out"/*_gfx90a.hip; do
            if "$drv" gfx90a "$f" "${f%.hip}.comgr.hsaco" > "${f%.hip}.comgr.log" 2>&1; then
                notes=$(llvm-readelf-22 --notes "${f%.hip}.comgr.hsaco")
                cv=$(echo "$notes" | grep -m1 -E '^[ -]*\.vgpr_count: ' | sed 's/.*: *//')
                cs=$(echo "$notes" | grep -m1 -E '^[ -]*\.vgpr_spill_count: ' | sed 's/.*: *//')
                echo "comgr 2.4 gfx90a ok: $(basename "$f" .hip)  vgpr $cv  vspill $cs"
                [ "$cs" = 0 ] || { echo "FAIL comgr gfx90a: spills"; fail=1; }
            else
                echo "FAIL comgr 2.4 gfx90a: $(basename "$f")"; head -20 "${f%.hip}.comgr.log"; fail=1
            fi
        done
    else
        echo "SKIP comgr check: driver did not build"; head -5 "$out/comgr_build.err"
    fi
fi

echo "outputs in $out"
[ $fail = 0 ] && echo "check.sh: all passed" || echo "check.sh: FAILURES"
exit $fail
