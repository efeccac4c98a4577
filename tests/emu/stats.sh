# stats.sh: `hkgen test --stats` (CTest emu_stats_report) on the GEMM and
# RoPE kernels of emu/stats.yaml for gfx942 and gfx950, one shape each.
# Asserts: exit status 0; every result row PASS and followed by its
# "stats:" line; the target's bank count in it; per run and per call site,
# bank cycles >= conflict-free cycles and line bytes >= requested bytes;
# the GEMM's MFMA operand reads (gemm.hip.m4, 16 bytes per lane on every
# target) and its global loads are reported, and every LDS site of the GEMM
# (256 x 256 tiles, XOR-swizzled rows) is conflict-free; the attention
# kernels' LDS likewise (below); without --stats, no statistics are
# printed. The figures are printed for the log.
EMU_DIR=$(cd "$(dirname "$0")" && pwd)
. "$EMU_DIR/../lib/lib.sh"

for target in gfx942 gfx950; do
  case $target in gfx942) banks=32 ab=16 ;; gfx950) banks=64 ab=16 ;; esac
  run_hk "$T/$target.txt" test --stats --seed 7 --target "$target" \
    --shape M=256,N=256,K=192,batch=2,seq_len=33,heads_q=4,heads_k=2,head_dim=128 "$EMU_DIR/stats.yaml"
  cat "$T/$target.txt"
  expect_rc 0 "hkgen test --stats --target $target emu/stats.yaml"
  expect_emu_runs "$target" "$T/$target.txt" 2 "emu_stats_report $target"
  awk -v banks="$banks" -v ab="$ab" '
    function bad(m) { print "FAIL: " m; failed = 1 }
    $2 ~ /^gfx/ && / PASS/ { rows++; want = 1; next }
    /^  stats: / {
      if (!want) bad("a stats line without its result row: " $0)
      want = 0; stats++
      if (index($0, "; " banks " banks x 4 B)") == 0) bad("not " banks " banks: " $0)
      match($0, /lds [0-9]+ insts, [0-9]+ bank cycles, [0-9]+ conflict-free/)
      split(substr($0, RSTART, RLENGTH), f, " ")
      if (f[4] + 0 < f[7] + 0) bad("fewer bank cycles than conflict-free ones: " $0)
      match($0, /[0-9]+ B requested, [0-9]+ B in/)
      split(substr($0, RSTART, RLENGTH), g, " ")
      if (g[1] + 0 <= 0 || g[4] + 0 < g[1] + 0) bad("line bytes below requested bytes: " $0)
      next
    }
    /^    [^ ]+:[0-9]+ +lds / {
      if ($6 + 0 < $8 + 0) bad("site: fewer cycles than conflict-free: " $0)
      if ($1 ~ /^gemm\.hip\.m4:/ && $3 == "read" && $4 == ab) ab_seen = 1
      if ($1 ~ /^gemm\.hip\.m4:/ && $6 + 0 != $8 + 0) bad("GEMM LDS site with bank conflicts: " $0)
      next
    }
    /^    [^ ]+:[0-9]+ +global / {
      if ($9 + 0 < $6 + 0) bad("site: line bytes below requested: " $0)
      if ($1 ~ /^gemm\.hip\.m4:/ && $3 == "read") g_seen = 1
      next
    }
    END {
      if (want) bad("the last result row has no stats line")
      if (stats != rows || rows != 2) bad(stats " stats lines for " rows " result rows")
      if (!ab_seen) bad("no GEMM MFMA operand read of " ab " bytes from gemm.hip.m4")
      if (!g_seen) bad("no GEMM global read site")
      exit failed
    }' "$T/$target.txt" || fail "$target: the --stats report is wrong (above)"
done

# Attention (emu/stats_attn.yaml, emu/stats_dec.yaml): every LDS site of the
# forward and the decode kernels is conflict-free (16-byte K reads, V^T rows
# padded by attn_vt_pitch), and each backward run stays within 1.20x of the
# conflict-free count (gfx942: 1.18x at d128 and 1.17x at d64 in the
# 2026-12-02 figures of docs/AMD.md, its row-major stores still 2x).
attn_check() { # FILE WHAT RUNS
  awk -v runs="$3" '
    function bad(m) { print "FAIL: " m; failed = 1 }
    $2 ~ /^gfx/ && / PASS/ { k = $1; rows++; next }
    /^  stats: / {
      match($0, /lds [0-9]+ insts, [0-9]+ bank cycles, [0-9]+ conflict-free/)
      split(substr($0, RSTART, RLENGTH), f, " ")
      if (f[7] + 0 <= 0) bad(k ": no LDS accesses counted: " $0)
      if (k ~ /^st_bwd/ && f[4] > 1.20 * f[7]) bad(k ": backward LDS over 1.20x the conflict-free cycles: " $0)
      next
    }
    /^    [^ ]+:[0-9]+ +lds / {
      if (k !~ /^st_bwd/ && $6 + 0 != $8 + 0) bad(k ": attention LDS site with bank conflicts: " $0)
      next
    }
    END { if (rows != runs) bad(rows " passing runs, expected " runs); exit failed }' "$1" || fail "$2: attention LDS conflicts (above)"
}
for target in gfx942 gfx950; do
  run_hk "$T/attn_$target.txt" test --stats --seed 7 --target "$target" \
    --shape batch=1,seqlen_q=256,seqlen_k=512,heads_q=2,heads_k=1 "$EMU_DIR/stats_attn.yaml"
  cat "$T/attn_$target.txt"
  expect_rc 0 "hkgen test --stats --target $target emu/stats_attn.yaml"
  attn_check "$T/attn_$target.txt" "$target stats_attn" 3
  run_hk "$T/dec_$target.txt" test --stats --seed 7 --target "$target" "$EMU_DIR/stats_dec.yaml"
  cat "$T/dec_$target.txt"
  expect_rc 0 "hkgen test --stats --target $target emu/stats_dec.yaml"
  attn_check "$T/dec_$target.txt" "$target stats_dec" "$(grep -c ' PASS' "$T/dec_$target.txt")"
done

run_hk "$T/plain.txt" test --seed 7 --target gfx942 --shape M=64,N=64,K=64,batch=1,seq_len=5 "$EMU_DIR/stats.yaml"
expect_rc 0 "hkgen test without --stats"
! grep -q "stats:" "$T/plain.txt" || fail "statistics printed without --stats"
echo "emu_stats_report: PASS"
