#!/usr/bin/env bash
# End-to-end checks of the kvengine CLI: exit statuses and messages on bad input, JSON fields,
# and the KV figures `run` reports. Usage: cli_test.sh KVENGINE_BINARY SCRATCH_DIR
set -uo pipefail
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
check() {  # check NAME EXPECTED_STATUS PATTERN -- command...
  local name="$1" want="$2" pattern="$3"
  shift 4
  local out status
  out=$("$@" 2>&1)
  status=$?
  if [ "$status" -ne "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: status $status (want $want), output:"
    echo "$out" | head -20
    failures=$((failures + 1))
  else
    pass "$name"
  fi
}

# Bad input: exit status 1 and one clear message, never a crash.
printf 'GGUF\003\000\000\000garbage' > "$scratch/truncated.gguf"
check bad_gguf 1 "^kvengine: .*(truncated|past|bytes)" -- "$bin" run -m "$scratch/truncated.gguf" -p hi
echo "not a model" > "$scratch/text.gguf"
check not_gguf 1 "^kvengine: .*magic" -- "$bin" plan -m "$scratch/text.gguf"
check missing_file 1 "^kvengine: " -- "$bin" run -m "$scratch/none.gguf" -p hi
check bad_dtype 1 "kv-dtype" -- "$bin" plan --kv-dtype int7
check bad_size 1 "size" -- "$bin" plan --mem 12XB
check no_prompt 1 "prompt" -- "$bin" run -m tiny
check bad_temp 1 "temperature" -- "$bin" run -m tiny -p hi --temp 9
# CLI11 rejects a value outside the listed choices (its exit status 105), as for --kv-policy.
check bad_step_policy 105 "step-policy: bogus not in \{mixed,prefill-first\}" -- "$bin" serve -m tiny --step-policy bogus

# The KV dtype map: --kv-dtype-map FILE, and its old spelling --kv-plan, give the same figures.
echo '{"default": "int8", "layers": {"0": "f16"}}' > "$scratch/dtype_map.json"
map_new=$("$bin" plan -m tiny --kv-dtype-map "$scratch/dtype_map.json" --json | grep -oE '"kv_bytes_per_token": [0-9]+')
map_old=$("$bin" plan -m tiny --kv-plan "$scratch/dtype_map.json" --json | grep -oE '"kv_bytes_per_token": [0-9]+')
int8_all=$("$bin" plan -m tiny --kv-dtype int8 --json | grep -oE '"kv_bytes_per_token": [0-9]+')
if [ -z "$map_new" ] || [ "$map_new" != "$map_old" ] || [ "$map_new" = "$int8_all" ]; then
  fail "kv_dtype_map: --kv-dtype-map '$map_new', --kv-plan '$map_old', all int8 '$int8_all'"
else
  pass kv_dtype_map
fi
check kv_dtype_map_missing 105 "kv-dtype-map" -- "$bin" plan --kv-dtype-map "$scratch/none.json"

# run --json on the tiny synthetic model; kv_bytes_per_token equals the planner's figure.
check run_json 0 '"output_token_ids":\[' -- "$bin" run -m tiny -p "hello world" -n 4 --json
plan_bpt=$("$bin" plan -m tiny --kv-dtype int8 --json | grep -oE '"kv_bytes_per_token": [0-9]+' | grep -oE '[0-9]+$')
check run_matches_plan 0 "\"kv_bytes_per_token\":$plan_bpt[,}]" -- "$bin" run -m tiny -p hi -n 2 --kv-dtype int8 --json
check top_logits 0 '"prompt_top_logits":\[\[\[' -- "$bin" run -m tiny --prompt-ids 1,300,301 -n 1 --json --top-logits 3
check force_isa_ref 0 '"kernel_target":"ref"' -- "$bin" run -m tiny -p hi -n 2 --json --isa ref
check bad_isa 1 "AVX|SCALAR|ref" -- "$bin" run -m tiny -p hi --isa NOPE

# demo on the tiny model: both runs, the report's figures, and JSON whose ratios say what the demo
# claims (prefix hits, paged peak below contiguous preallocation, int8 KV below f16).
check demo_text 0 "contiguous, f16 .*x the paged peak" -- "$bin" demo -m tiny -t 1
"$bin" demo -m tiny -t 1 --json > "$scratch/demo.json" 2> "$scratch/demo.err"
demo_status=$?
for pattern in '"prefix_hit_rate": 0\.[1-9]' '"contiguous_over_paged": ([2-9]|[1-9][0-9])' \
               '"int8_over_f16": 0\.[1-9]' '"preemptions": 0'; do
  if [ "$demo_status" -ne 0 ] || ! grep -qE -- "$pattern" "$scratch/demo.json"; then
    echo "FAIL demo_json: status $demo_status, no match for $pattern"
    head -20 "$scratch/demo.json" "$scratch/demo.err"
    failures=$((failures + 1))
  else
    pass "demo_json $pattern"
  fi
done
check demo_bad_model 1 "^kvengine: " -- "$bin" demo -m "$scratch/none.gguf"
check demo_short_ctx 1 "context of at least" -- "$bin" demo -m tiny -c 4

# The real model, when present: f16 640 bytes/token, int8 400 (llama.cpp cannot quantize its KV).
models="${KVENGINE_MODELS_DIR:-}"
if [ -n "$models" ] && [ -f "$models/stories260K.gguf" ]; then
  check stories_f16 0 '"kv_bytes_per_token":640' -- "$bin" run -m "$models/stories260K.gguf" -c 512 -p "Once upon a time" --temp 0 -n 8 --json
  check stories_int8 0 '"output_token_ids":\[432,383,286,261,376,298,315,421\].*"kv_bytes_per_token":400' -- "$bin" run -m "$models/stories260K.gguf" -c 512 -p "Once upon a time" --temp 0 -n 8 --kv-dtype int8 --json
elif [ "${CI:-}" = "true" ]; then
  echo "FAIL stories: no stories260K.gguf under KVENGINE_MODELS_DIR='$models'"
  failures=$((failures + 1))
else
  echo "skip stories: set KVENGINE_MODELS_DIR"
fi

[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
