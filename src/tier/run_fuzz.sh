#!/usr/bin/env bash
# run_fuzz.sh BUILD_DIR SECONDS: writes the seed corpus with tier_fuzz_seeds, then runs tier_fuzz
# for SECONDS. BUILD_DIR must be configured with clang, -DKVENGINE_FUZZ=ON -DKVENGINE_SANITIZE=ON
# and have tier_fuzz and tier_fuzz_seeds built, e.g.
#   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DKVENGINE_FUZZ=ON \
#       -DKVENGINE_SANITIZE=ON -DKVENGINE_BENCHMARKS=OFF
#   ninja -C build-fuzz tier_fuzz tier_fuzz_seeds
#   src/tier/run_fuzz.sh build-fuzz 30
# Exits non-zero when the fuzzer finds a crash, leak, timeout or sanitizer report; the input that
# caused it is left in BUILD_DIR/tier_fuzz_artifacts/ (replay: BUILD_DIR/src/tier/tier_fuzz FILE).
# The growing corpus is kept in BUILD_DIR/tier_fuzz_corpus/ between runs.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
seconds=$2
fuzzer="$build_dir/src/tier/tier_fuzz"
seeder="$build_dir/src/tier/tier_fuzz_seeds"
for tool in "$fuzzer" "$seeder"; do
  if [[ ! -x "$tool" ]]; then
    echo "$tool not built (configure with -DKVENGINE_FUZZ=ON and build tier_fuzz tier_fuzz_seeds)" >&2
    exit 2
  fi
done

seeds="$build_dir/tier_fuzz_seed_corpus"
corpus="$build_dir/tier_fuzz_corpus"
artifacts="$build_dir/tier_fuzz_artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts"
"$seeder" "$seeds"

# New inputs go to the first directory (corpus); seeds are read only. 2 jobs' worth of memory is
# plenty: inputs are at most 64 KiB and the reader allocates in proportion to them.
"$fuzzer" "$corpus" "$seeds" \
  -max_total_time="$seconds" \
  -max_len=65536 \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="$artifacts/"
echo "tier_fuzz: no crash in ${seconds}s"
