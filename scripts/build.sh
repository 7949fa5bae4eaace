#!/usr/bin/env bash
# Configures and builds one flavour of kvengine.
#   scripts/build.sh release [DIR]  -> build/        (g++, Release: what users and benchmarks run;
#                                                      the test sources alone at -O1, see below)
#   scripts/build.sh asan [DIR]     -> build-asan/   (clang-14, ASan+UBSan, libFuzzer targets)
# DIR, if given, replaces the default build directory.
#
# The release flavour compiles the test sources (not the libraries and tools they test, nor tests
# marked OPTIMIZED) at -O1: a quarter less CPU for them than -O3 (engine_server_test.cc 19.7 ->
# 13.2 s, gguf_test.cc 8.4 -> 5.8 s), and the code under test is the one users run.
#
# The asan flavour is built for what scripts/test.sh runs in it; it takes about 25% less CPU
# to compile than a plain RelWithDebInfo (-O2 -g) sanitizer build, its tests as long to run:
#   - libraries at -O1 (ASan's usual level; Highway code compiles about twice as fast as at
#     -O2), the test and tool sources at -O0 (KVENGINE_TEST/TOOL_COMPILE_OPTIONS): over half of
#     the compile time, while the tests spend their time in the libraries (tests marked
#     OPTIMIZED, whose own code does heavy work, keep -O1);
#   - line tables only (-gline-tables-only): sanitizer reports and stack traces keep function,
#     file and line; no variable or type debug info;
#   - Highway's SSSE3 and SSE4 targets left out (KVENGINE_HWY_DISABLED_TARGETS): the per-target
#     tests run the baseline EMU128 (16-byte vectors, like SSE4), AVX2 and AVX3 under the
#     sanitizers; the Release build compiles and tests every target;
#   - only the test binaries labelled fast or soak (KVENGINE_TEST_LABELS); no benchmarks.
#
# Both flavours are unity builds (KVENGINE_UNITY_BUILD, CMakeLists.txt): each target's sources
# compile in batches of 8, so the heavy headers are parsed once per batch (release 8 min 19 s ->
# 4 min 14 s on 2 cores, 2026-12-02). Highway's per-target files stay on their own.
#
# No precompiled headers. GoogleTest's, precompiled per test binary (measured 2026-12-02 in the
# release flavour), saved 63 s of CPU over the 102 test sources but took 145 s to build the 26
# headers (113 MB each): the build got slower. One header shared by every binary is not
# possible, because their definitions differ (_FILE_OFFSET_BITS, the libraries' own).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
jobs="${KVENGINE_JOBS:-$(nproc)}"
case "$flavour" in
  release)
    dir="${2:-build}"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DKVENGINE_TEST_COMPILE_OPTIONS=-O1 >/dev/null
    ninja -C "$dir" -j "$jobs"
    ;;
  asan)
    dir="${2:-build-asan}"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
      -DCMAKE_CXX_COMPILER=clang++-14 -DKVENGINE_SANITIZE=ON -DKVENGINE_FUZZ=ON \
      -DKVENGINE_BENCHMARKS=OFF -DKVENGINE_HWY_DISABLED_TARGETS="SSSE3;SSE4" \
      -DKVENGINE_TEST_LABELS="fast;soak" \
      -DKVENGINE_TEST_COMPILE_OPTIONS=-O0 -DKVENGINE_TOOL_COMPILE_OPTIONS=-O0 >/dev/null
    ninja -C "$dir" -j "$jobs"
    ;;
  *)
    echo "usage: $0 release|asan [DIR]" >&2
    exit 2
    ;;
esac
