#!/usr/bin/env bash
# Every test: installs dependencies, then
#   1. Release build (g++), all tests (labels fast, slow and soak);
#   2. clang-14 ASan+UBSan build, the fast tests and the server soak again (leak detection on),
#      and a bounded libFuzzer run per parser (side by side, up to KVENGINE_JOBS at a time).
# Fails if any step fails or if no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
export KVENGINE_MODELS_DIR="${KVENGINE_MODELS_DIR:-$(cd .. && pwd)/shared/models}"
jobs="${KVENGINE_JOBS:-$(nproc)}"
fuzz_seconds="${KVENGINE_FUZZ_SECONDS:-20}"

scripts/install-deps.sh

echo "== Layout: no C++ file over 600 lines, no function over 120 (scripts/check_sizes.py)"
# The engine-never-links-an-application check runs in every configure (kvengine_check_layers).
python3 scripts/check_sizes.py

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

echo "== Fuzzing (${fuzz_seconds}s per parser, up to $jobs at a time)"
# Each parser's fuzzer is one process on one core, so they run side by side; each one's output
# goes to build-asan/FOLDER_fuzz.log, printed in full if it failed, else its summary.
fuzz_one() {
  local log
  log="build-asan/$(basename "$(dirname "$1")")_fuzz.log"
  if bash "$1" build-asan "$fuzz_seconds" >"$log" 2>&1; then
    grep -E '^#[0-9]+[[:space:]]+DONE' "$log" || true
    tail -n 1 "$log"
  else
    cat "$log"
    echo "FAILED: $1 (log: $log)"
    return 1
  fi
}
fuzz_pids=()
fuzz_status=0
for script in src/*/run_fuzz.sh; do
  [ -e "$script" ] || continue
  if [ "${#fuzz_pids[@]}" -ge "$jobs" ]; then
    wait "${fuzz_pids[0]}" || fuzz_status=1
    fuzz_pids=("${fuzz_pids[@]:1}")
  fi
  fuzz_one "$script" &
  fuzz_pids+=($!)
done
for pid in "${fuzz_pids[@]}"; do
  wait "$pid" || fuzz_status=1
done
[ "$fuzz_status" -eq 0 ] || { echo "== Fuzzing found a failure (above)" >&2; exit 1; }
echo "== All tests passed"
