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
echo
echo "== kvengine run (synthetic 'small' model: random weights, so the text is noise; the figures are real)"
build/tools/kvengine run -p "Once upon a time" -n 32 --kv-dtype int8
models="$(cd .. && pwd)/shared/models"
if [ -f "$models/stories260K.gguf" ]; then
  echo
  echo "== kvengine run on the real stories260K model, int4 KV"
  build/tools/kvengine run -m "$models/stories260K.gguf" -c 512 -p "Once upon a time" -n 48 --temp 0 --kv-dtype int4
fi
