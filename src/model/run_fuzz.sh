#!/usr/bin/env bash
# run_fuzz.sh BUILD_DIR SECONDS: fuzzes the model loader (hyperparameters, tensor shapes and
# types of edited synthetic models, then one forward pass) with model_fuzz for SECONDS seconds
# (scripts/run_fuzzer.sh does the work; scripts/test.sh runs every src/*/run_fuzz.sh).
exec "$(dirname "$0")/../../scripts/run_fuzzer.sh" model model_fuzz "$@"
