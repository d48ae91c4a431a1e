#!/usr/bin/env bash
# Sweep memory against the number of points (issue 19 item 6; docs/sweeps.md, "Memory"): runs
# `coda sweep` on a cheap spec (one 64x64x64 GEMM on the TPU-like 128x128 WS preset, four axes,
# random sampling) at each point count and reports the peak resident memory (GNU time's maximum
# RSS), the wall time and the points per second, each against the smallest count measured in
# the same run. A reported figure, not a test: flat memory means the ratios stay near 1 while
# the point counts grow 10x and 100x.
#
#   bench/sweep_memory.sh                  # 10000 100000 1000000 points
#   POINTS="10000 100000" bench/sweep_memory.sh
#   CODA=build/coda OUT=/tmp/sweep_memory bench/sweep_memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
coda=${CODA:-build/coda}
out=${OUT:-$(mktemp -d)}
points=${POINTS:-"10000 100000 1000000"}
[ -x "$coda" ] || { echo "bench/sweep_memory.sh: $coda not built (scripts/setup.sh)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench/sweep_memory.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
mkdir -p "$out"
printf 'Layer, M, N, K,\nfc1, 64, 64, 64,\n' > "$out/gemm.csv"

base_rss="" base_rate=""
printf '%10s %14s %10s %12s %10s %10s\n' points "peak RSS (MB)" "wall (s)" "points/s" "RSS ratio" "rate ratio"
for n in $points; do
  cat > "$out/spec_$n.yaml" <<EOF
schema_version: 1
name: memory-$n
arch: $(pwd)/configs/arch/tpu_like_128x128_ws.yaml
workloads:
  - {name: gemm, file: gemm.csv}
axes:
  array.rows: {from: 8, to: 256, step: 8}
  array.cols: {from: 8, to: 256, step: 8}
  sram.ifmap: {from: 64 KiB, to: 4 MiB, factor: 2}
  dram.bandwidth: {from: 10 GB/s, to: 20480 GB/s, factor: 2}
sampling: {method: random, points: $n, seed: 1}
EOF
  rm -rf "$out/run_$n"
  /usr/bin/time -f '%M %e' -o "$out/time_$n" "$coda" sweep "$out/spec_$n.yaml" --out "$out/run_$n" \
    > "$out/log_$n" 2>&1
  read -r rss_kb wall < "$out/time_$n"
  rate=$(awk -v n="$n" -v w="$wall" 'BEGIN { printf "%.0f", (w > 0 ? n / w : 0) }')
  [ -n "$base_rss" ] || { base_rss=$rss_kb; base_rate=$rate; }
  awk -v n="$n" -v r="$rss_kb" -v w="$wall" -v p="$rate" -v br="$base_rss" -v bp="$base_rate" \
    'BEGIN { printf "%10d %14.1f %10.1f %12d %10.2f %10.2f\n", n, r / 1024, w, p, r / br, p / bp }'
  rm -rf "$out/run_$n"  # the store of a million points is about 1.5 GB
done
