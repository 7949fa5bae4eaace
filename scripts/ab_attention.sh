#!/usr/bin/env bash
# Compares kvengine binaries on `kvengine bench attention` on a noisy machine: runs each binary in
# turn, ROUNDS times, and prints per binary and row (dtype, context, threads, layout, prefetch
# level / KV heads per item) the fastest us/token and every run's.
# Alternating the binaries spreads the machine's slow spells over all of them; the fastest run is
# the least disturbed (BENCHMARKS.md uses it where single runs moved by more than the change).
#
#   scripts/ab_attention.sh ROUNDS "BENCH ATTENTION FLAGS" BINARY...
#   scripts/ab_attention.sh 5 "--contexts 2k --kv-dtypes f16,int8 -t 1 --layouts paged \
#       --footprint 1MiB --min-time 0.2" /tmp/kvengine-old build/tools/kvengine
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
rounds="$1"
flags="$2"
shift 2
for _ in $(seq "$rounds"); do
  for bin in "$@"; do
    # shellcheck disable=SC2086  # The flags are split on purpose.
    "$bin" bench attention $flags 2>/dev/null |
      awk -v b="$bin" '$4 == "paged" || $4 == "contiguous" {
        # Binaries before the heads/item column (KV/token is a number and a unit) and after it.
        if ($7 == "MiB" || $7 == "KiB") print b, $1, $2, $3, $4, $5 "/-", $8
        else print b, $1, $2, $3, $4, $5 "/" $6, $9
      }'
  done
done | awk '{
  key = $1 " " $2 " " $3 " " $4 " " $5 " " $6
  if (!(key in best) || $7 < best[key]) best[key] = $7
  runs[key] = runs[key] " " $7
} END {
  for (key in best) print key, "fastest", best[key], "runs", runs[key]
}' | sort -k2,2 -k3,3n -k1,1
