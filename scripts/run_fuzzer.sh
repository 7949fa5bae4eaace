#!/usr/bin/env bash
# run_fuzzer.sh FOLDER NAME BUILD_DIR SECONDS: writes the seed corpus with NAME_seeds, then runs
# the libFuzzer target NAME (both built in BUILD_DIR/src/FOLDER) for SECONDS seconds. Each
# parser's src/FOLDER/run_fuzz.sh calls this; scripts/test.sh runs every one of those. Needs a
# build configured with -DKVENGINE_FUZZ=ON (clang), e.g. scripts/build.sh asan.
#
# Exit status: 0 if no crash was found. On a crash libFuzzer exits non-zero and the input that
# caused it is left in BUILD_DIR/NAME_artifacts/ (replay: BUILD_DIR/src/FOLDER/NAME FILE). The
# growing corpus is kept in BUILD_DIR/NAME_corpus/ between runs.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 FOLDER NAME BUILD_DIR SECONDS" >&2
  exit 2
fi
folder=$1
name=$2
build_dir=$(cd "$3" && pwd)
seconds=$4
fuzzer="$build_dir/src/$folder/$name"
seeder="$build_dir/src/$folder/${name}_seeds"
for tool in "$fuzzer" "$seeder"; do
  if [[ ! -x "$tool" ]]; then
    echo "$tool not built (configure with -DKVENGINE_FUZZ=ON and build $name ${name}_seeds)" >&2
    exit 2
  fi
done

seeds="$build_dir/${name}_seed_corpus"
corpus="$build_dir/${name}_corpus"
artifacts="$build_dir/${name}_artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts"
"$seeder" "$seeds"

# New inputs go to the first directory (corpus); seeds are read only. Inputs are at most 64 KiB
# and the parsers allocate in proportion to them, so 2 GiB of RSS is plenty.
"$fuzzer" "$corpus" "$seeds" \
  -max_total_time="$seconds" \
  -max_len=65536 \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="$artifacts/"
echo "$name: no crash in ${seconds}s"
