#!/usr/bin/env bash
# Every test: installs dependencies, then
#   1. Release build (g++), all tests (labels fast, slow and soak);
#   2. clang-14 ASan+UBSan build, the fast tests and the server soak again (leak detection on),
#      and a bounded libFuzzer run per parser.
# Fails if any step fails or if no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
export KVENGINE_MODELS_DIR="${KVENGINE_MODELS_DIR:-$(cd .. && pwd)/shared/models}"
jobs="${KVENGINE_JOBS:-$(nproc)}"
fuzz_seconds="${KVENGINE_FUZZ_SECONDS:-20}"

scripts/install-deps.sh

echo "== Release build and all tests"
scripts/build.sh release
ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs"

echo "== ASan+UBSan build and the fast tests"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L fast --output-on-failure --no-tests=error -j "$jobs"

echo "== The server soak under ASan+UBSan (KVENGINE_SOAK_SECONDS, default 20)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L soak --output-on-failure --no-tests=error

echo "== Fuzzing (${fuzz_seconds}s per target)"
for script in src/*/run_fuzz.sh; do
  [ -e "$script" ] || continue
  bash "$script" build-asan "$fuzz_seconds"
done
echo "== All tests passed"
