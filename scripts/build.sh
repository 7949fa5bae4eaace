#!/usr/bin/env bash
# Configures and builds one flavour of kvengine.
#   scripts/build.sh release   -> build/        (g++, Release: what users and benchmarks run)
#   scripts/build.sh asan      -> build-asan/   (clang-14, ASan+UBSan, libFuzzer targets)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
jobs="${KVENGINE_JOBS:-$(nproc)}"
case "$flavour" in
  release)
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C build -j "$jobs"
    ;;
  asan)
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER=clang++-14 -DKVENGINE_SANITIZE=ON -DKVENGINE_FUZZ=ON \
      -DKVENGINE_BENCHMARKS=OFF >/dev/null
    ninja -C build-asan -j "$jobs"
    ;;
  *)
    echo "usage: $0 release|asan" >&2
    exit 2
    ;;
esac
