#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs kvengine on its built-in defaults —
# the KV memory plan of a Llama-3-8B-shaped model and the paged-vs-contiguous workload benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
echo
echo "== kvengine plan --mem 24GiB --ctx 8k"
build/tools/kvengine plan --mem 24GiB --ctx 8k
echo
echo "== kvengine plan -m mistral-7b --ctx 32k --kv-dtype int8 --mem 24GiB"
build/tools/kvengine plan -m mistral-7b --ctx 32k --kv-dtype int8 --mem 24GiB
echo
echo "== kvengine bench kv"
build/tools/kvengine bench kv --svg build/bench-kv.svg
echo "(chart: build/bench-kv.svg)"
