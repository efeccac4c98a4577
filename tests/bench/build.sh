#!/bin/sh
# Build-throughput benchmark (not a test): a cold build of a >= 500-kernel
# catalogue with an empty cache, then a no-op rebuild of it. Prints kernels per
# second per core and the no-op time; docs/PERF.md records the figures.
# Usage: tests/bench/build.sh [SPEC] (from the project root, after make)
set -eu
spec=${1:-tests/bench/catalog500.yaml}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cores=$(nproc)
n=$(./build/hkgen check "$spec" | sed -n 's/^ok: \([0-9]*\) kernel.*/\1/p')
now() { date +%s.%N; }
t0=$(now)
HKGEN_CACHE_DIR="$tmp/cache" ./build/hkgen build -q -j "$cores" "$spec" -o "$tmp/cat"
t1=$(now)
HKGEN_CACHE_DIR="$tmp/cache" ./build/hkgen build -q -j "$cores" "$spec" -o "$tmp/cat"
t2=$(now)
echo "spec $spec: $n kernels, $cores cores, $(uname -m), $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
awk -v n="$n" -v c="$cores" -v a="$t0" -v b="$t1" -v d="$t2" 'BEGIN {
  printf "cold build: %.1f s, %.2f kernels/s, %.2f kernels/s per core\n", b - a, n / (b - a), n / (b - a) / c
  printf "no-op rebuild: %.2f s\n", d - b }'
