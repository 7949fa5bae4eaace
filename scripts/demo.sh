#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs `kvengine demo` — the engine in-process on
# the synthetic `small` model (no download): a short mixed workload through the real scheduler
# and KV manager with f16, then int8 KV, and a one-screen report — then the KV memory plans of a
# Llama-3-8B-shaped and a Mistral-7B-shaped model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
echo
echo "== kvengine demo"
build/tools/kvengine demo
echo
echo "== kvengine plan --mem 24GiB --ctx 8k"
build/tools/kvengine plan --mem 24GiB --ctx 8k
echo
echo "== kvengine plan -m mistral-7b --ctx 32k --kv-dtype int8 --mem 24GiB"
build/tools/kvengine plan -m mistral-7b --ctx 32k --kv-dtype int8 --mem 24GiB
models="$(cd .. && pwd)/shared/models"
if [ -f "$models/stories260K.gguf" ]; then
  echo
  echo "== kvengine demo on the real stories260K model (its 512-token context shrinks the workload)"
  build/tools/kvengine demo -m "$models/stories260K.gguf" -c 512 | sed -n '/^  scenario/,/^  prefix/p'
fi
echo
echo "(more: kvengine bench kv for the paged-vs-contiguous block-manager benchmark, kvengine run"
echo " -p TEXT to generate, kvengine --help for every command)"
