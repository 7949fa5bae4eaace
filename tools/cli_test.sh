#!/usr/bin/env bash
# End-to-end checks of the kvengine CLI: exit statuses and messages on bad input, JSON fields,
# and the KV figures `run` reports. Usage: cli_test.sh KVENGINE_BINARY SCRATCH_DIR
set -uo pipefail
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
check() { check_status "$@"; }  # check NAME EXPECTED_STATUS PATTERN -- command...
# A sanitizer build reserves terabytes of address space for its shadow memory: no ulimit -v there.
mem_limit=4194304
if grep -qa __asan_init "$bin"; then mem_limit=unlimited; fi
# refuse NAME STATUS PATTERN -- kvengine-args...: kvengine exits STATUS (1: unusable input or
# runtime failure, 2: malformed command line) within 5 s, under a 4 GiB address-space limit,
# with exactly one line on stdout and stderr together, "kvengine: ..." matching PATTERN, and
# never says "listening" (serve checks its flags and files before binding the port).
refuse() {
  local name="$1" want="$2" pattern="$3"
  shift 4
  local out status
  out=$(ulimit -v "$mem_limit"; timeout 5 "$bin" "$@" 2>&1)
  status=$?
  if [ "$status" -ne "$want" ] || [ "$(wc -l <<<"$out")" -ne 1 ] ||
     ! grep -qE -- "^kvengine: .*($pattern)" <<<"$out" || grep -q listening <<<"$out"; then
    echo "FAIL $name: status $status (want $want), output:"
    echo "$out" | head -5
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
check bad_isa_env 1 "AVX|SCALAR|ref" -- env KVENGINE_ISA=NOPE "$bin" run -m tiny -p hi -n 1

# A malformed command line exits 2 with one line (never CLI11's own statuses 105-109).
refuse unknown_command 2 "unknown command 'frob'" -- frob
refuse unknown_bench 2 "unknown command 'frob'.*attention" -- bench frob
refuse no_command 2 "a command is required" --
refuse unknown_flag 2 "--frob" -- plan --frob
refuse missing_value 2 "block-size" -- plan --block-size
refuse block_size_0 2 "block-size" -- plan --block-size 0
refuse bad_dtype 2 "kv-dtype" -- plan --kv-dtype int7
refuse bad_size 2 "size|mem" -- plan --mem 12XB
refuse bad_ctx 2 "ctx" -- plan -c 0
refuse plan_batch_0 2 "batch" -- plan -b 0
refuse plan_batch_huge 2 "batch" -- plan -b 99999999999
refuse no_prompt 2 "prompt" -- run -m tiny
refuse bad_temp 2 "temperature" -- run -m tiny -p hi --temp 9
refuse bad_prompt_ids 2 "prompt-ids" -- run -m tiny --prompt-ids 1,x
refuse bad_step_policy 2 "step-policy: bogus not in \{mixed,prefill-first\}" -- \
  serve -m tiny --step-policy bogus
refuse bad_kv_policy 2 "kv-policy" -- serve -m tiny --kv-policy bogus
# Thread counts: 0 (all cores) or 1..1024, checked before any thread starts.
refuse run_threads_100000 2 "threads" -- run -m tiny -p hi -t 100000
refuse run_threads_20000 2 "threads" -- run -m tiny -p hi -t 20000
refuse run_threads_negative 2 "threads" -- run -m tiny -p hi -t -1
refuse run_threads_text 2 "threads" -- run -m tiny -p hi -t many
refuse serve_threads 2 "threads" -- serve -m tiny --port 0 -t 100000
refuse demo_threads 2 "threads" -- demo -m tiny -t 5000
refuse decode_threads 2 "threads" -- bench decode -m tiny -t 100000
refuse attention_threads 2 "threads" -- bench attention -t 0
refuse tiers_threads 2 "threads" -- bench tiers -m tiny -t -1
refuse bench_serve_threads 2 "threads" -- bench-serve -m tiny -t 100000
# Threads the system refuses (here: no address space for 1024 stacks) are a runtime failure.
if [ "$mem_limit" != unlimited ]; then
  check threads_refused 1 "^kvengine: system error" -- \
    bash -c 'ulimit -v 1500000; exec timeout 5 "$@"' _ "$bin" run -m tiny -p hi -n 1 -t 1024
fi
# Every other count is bounded too.
refuse run_n_predict 2 "n-predict" -- run -m tiny -p hi -n 0
refuse run_top_logits 2 "top-logits" -- run -m tiny -p hi --top-logits 100000
refuse serve_max_num_seqs 2 "max-num-seqs" -- serve -m tiny --max-num-seqs 0
refuse serve_batched_tokens 2 "max-num-batched-tokens" -- serve -m tiny --max-num-batched-tokens 0
refuse serve_queue 2 "max-queued-requests" -- serve -m tiny --max-queued-requests -1
refuse serve_port 2 "port" -- serve -m tiny --port 70000
refuse serve_body 2 "max-body-bytes" -- serve -m tiny --max-body-bytes lots
refuse serve_swap 2 "swap-space" -- serve -m tiny --swap-space -1
refuse serve_tier_dtype 2 "kv-tier-dtype" -- serve -m tiny --kv-tier-dtype int7
refuse kv_requests_0 2 "requests" -- bench kv --requests 0
refuse kv_requests_huge 2 "requests" -- bench kv --requests 99999999999
refuse kv_turns 2 "turns" -- bench kv --turns 0
refuse kv_ctx 2 "ctx" -- bench kv -c 0
refuse decode_rounds 2 "rounds" -- bench decode -m tiny --rounds 0
refuse decode_steps 2 "steps" -- bench decode -m tiny --steps 0
refuse attention_heads 2 "heads" -- bench attention --heads 0
refuse tiers_repeat 2 "repeat" -- bench tiers -m tiny --repeat 0
refuse tiers_mem 2 "kv-cache-memory-bytes" -- bench tiers -m tiny --kv-cache-memory-bytes x
refuse bench_serve_prompts 2 "num-prompts" -- bench-serve -m tiny --num-prompts 0
refuse bench_serve_concurrency 2 "max-concurrency" -- bench-serve -m tiny --max-concurrency 0
refuse gen_model_flag 2 "--frob" -- gen-model --frob

# An unusable input exits 1 with one line: a file that is missing, not a regular file (a FIFO,
# a device, a directory: refused at once, never read), too large, or invalid.
rm -f "$scratch/fifo" "$scratch/fifo.svg"
mkfifo "$scratch/fifo" "$scratch/fifo.svg"
head -c 2000000 /dev/zero | tr '\0' ' ' > "$scratch/large.json"
echo '{"default": "int9"}' > "$scratch/bad_map.json"
refuse kv_dtype_map_missing 1 "kv-dtype-map.*none.json" -- plan --kv-dtype-map "$scratch/none.json"
refuse kv_plan_dev_zero 1 "kv-dtype-map.*/dev/zero.*not a regular file" -- \
  plan --kv-plan /dev/zero
refuse kv_plan_fifo 1 "FIFO" -- plan --kv-plan "$scratch/fifo"
refuse kv_plan_dir 1 "directory" -- plan --kv-plan "$scratch"
refuse kv_plan_large 1 "larger than 1" -- plan --kv-plan "$scratch/large.json"
refuse kv_plan_invalid 1 "bad_map.json" -- plan --kv-plan "$scratch/bad_map.json"
refuse run_kv_plan_dev_zero 1 "not a regular file" -- run -m tiny -p hi --kv-plan /dev/zero
refuse run_model_fifo 1 "model: .*FIFO" -- run -m "$scratch/fifo" -p hi
refuse run_model_dev_zero 1 "model: /dev/zero is a device" -- run -m /dev/zero -p hi
refuse plan_model_dir 1 "directory" -- plan -m "$scratch"
refuse plan_model_fifo 1 "FIFO" -- plan -m "$scratch/fifo"
refuse demo_model_fifo 1 "FIFO" -- demo -m "$scratch/fifo"
refuse decode_model_fifo 1 "FIFO" -- bench decode -m "$scratch/fifo"
refuse tiers_model_fifo 1 "FIFO" -- bench tiers -m "$scratch/fifo"
refuse tiers_map_fifo 1 "FIFO" -- bench tiers -m tiny --prompt-tokens 64 --kv-plan "$scratch/fifo"
refuse kv_svg_fifo 1 "FIFO" -- bench kv --requests 10 --svg "$scratch/fifo"
refuse gen_model_out_fifo 1 "FIFO" -- gen-model -m tiny -o "$scratch/fifo"
refuse unknown_preset 1 "no model|preset" -- run -m frob -p hi
# serve checks its flags and files before "listening on ...".
refuse serve_model_fifo 1 "FIFO" -- serve -m "$scratch/fifo" --port 0
refuse serve_model_dev_zero 1 "device" -- serve -m /dev/zero --port 0
refuse serve_map_dev_zero 1 "not a regular file" -- serve -m tiny --port 0 --kv-plan /dev/zero
refuse serve_unknown_preset 1 "preset" -- serve -m frob --port 0
refuse serve_batched_below_seqs 1 "max_num_batched_tokens" -- \
  serve -m tiny --port 0 --max-num-seqs 8 --max-num-batched-tokens 4
refuse serve_disk_path_device 1 "kv-disk-path.*not a directory" -- \
  serve -m tiny --port 0 --kv-disk-path /dev/zero
refuse serve_redis_endpoint 1 "kv-redis" -- serve -m tiny --port 0 --kv-redis nohost
refuse bench_serve_model_fifo 1 "FIFO" -- bench-serve -m "$scratch/fifo"
refuse bench_serve_out_fifo 1 "FIFO" -- bench-serve -m tiny --out "$scratch/fifo.svg"
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
