#!/usr/bin/env bash
# run_fuzz.sh BUILD_DIR SECONDS: fuzzes tokenizer vocabularies (tokenizer.ggml.* metadata) and
# tokenization with vocab_fuzz for SECONDS seconds (scripts/run_fuzzer.sh does the work;
# scripts/test.sh runs every src/*/run_fuzz.sh).
exec "$(dirname "$0")/../../scripts/run_fuzzer.sh" tokenizer vocab_fuzz "$@"
