#!/bin/sh
# decode_h200.sh: the device bundle's run.sh for tests/device/decode_h200.py
# (copied into build/devbundle by tests/device/decode_bundle.sh).
cd "$(dirname "$0")" || exit 2
export PYTHONPATH="$PWD" HKRT_LIB="$PWD/libhkrt.so"
echo "commit $(cat COMMIT), $(date -u '+%Y-%m-%d %H:%M UTC')"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader 2>/dev/null
python3 decode_h200.py "$(cat CATS)" "${MODE:-all}" "${DEC_LIMIT:-85}" >"${OUT:-.}/decode.log" 2>&1
rc=$?
cat "${OUT:-.}/decode.log"
exit $rc
