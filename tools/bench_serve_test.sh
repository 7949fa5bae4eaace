#!/usr/bin/env bash
# End-to-end checks of `kvengine bench-serve` on the tiny synthetic model: in-process runs of
# each workload (JSON figures, prefix-cache hits where the workload shares prefixes), the
# report files, a run against a separate `kvengine serve` through --url, and clean errors.
# Usage: bench_serve_test.sh KVENGINE_BINARY SCRATCH_DIR
set -uo pipefail
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
# field NAME < json: the number after "NAME": (empty when null or absent).
field() { grep -oE "\"$1\": -?[0-9][0-9.e+-]*" | head -1 | awk '{print $2}'; }
# check_json NAME JSON EXPR...: each EXPR is "field op value" (op: == > >= <=), compared as numbers.
check_json() {
  local name="$1" json="$2" ok=1
  shift 2
  for expr in "$@"; do
    read -r f op want <<<"$expr"
    local got
    got=$(field "$f" <<<"$json")
    if [ -z "$got" ] || ! awk -v a="$got" -v b="$want" -v op="$op" 'BEGIN {
        if (op == "==") exit !(a == b); if (op == ">") exit !(a > b);
        if (op == ">=") exit !(a >= b); if (op == "<=") exit !(a <= b); exit 1 }'; then
      fail "$name: $f = '${got}', want $op $want"
      ok=0
    fi
  done
  [ "$ok" -eq 1 ] && pass "$name"
}

# sharegpt, 12 requests, 4 at a time.
out=$("$bin" bench-serve -m tiny --num-prompts 12 --max-concurrency 4 --max-output-tokens 24 \
  --metrics-interval-ms 5 --json 2>"$scratch/sharegpt.err")
status=$?
[ "$status" -eq 0 ] || { fail "sharegpt: status $status"; head -20 "$scratch/sharegpt.err"; }
check_json sharegpt "$out" "completed == 12" "failed == 0" "max_concurrency == 4" \
  "mean_ttft_ms > 0" "p99_ttft_ms >= 0" "median_tpot_ms > 0" "p90_itl_ms > 0" "mean_e2el_ms > 0" \
  "request_throughput > 0" "output_throughput > 0" "total_output_tokens <= 288" \
  "total_output_tokens >= 12" "peak_kv_cache_usage > 0" "peak_running_requests >= 1" \
  "peak_running_requests <= 4" "metrics_samples >= 1"

# shared_prefix: every request after the first finds the system prompt in the prefix cache.
out=$("$bin" bench-serve -m tiny --workload shared_prefix --num-prompts 8 --max-concurrency 2 \
  --max-output-tokens 4 --system-prompt-tokens 128 --json 2>"$scratch/shared.err")
[ $? -eq 0 ] || { fail "shared_prefix: status"; head -20 "$scratch/shared.err"; }
check_json shared_prefix "$out" "completed == 8" "prefix_cache_hit_rate > 0.5" \
  "usage_cached_fraction > 0.5" "system_prompt_tokens == 128"

# multi_turn: each later turn resends its history (prompt + generated tokens), which hits.
out=$("$bin" bench-serve -m tiny --workload multi_turn --turns 3 --num-prompts 6 \
  --max-concurrency 2 --max-output-tokens 20 --json --out "$scratch/multi.svg" 2>"$scratch/multi.err")
[ $? -eq 0 ] || { fail "multi_turn: status"; head -20 "$scratch/multi.err"; }
check_json multi_turn "$out" "completed == 6" "conversations == 2" "turns == 3" \
  "prefix_cache_hit_rate > 0.2"
if head -c 5 "$scratch/multi.svg" | grep -q "<svg" && grep -q "</svg>" "$scratch/multi.svg"; then
  echo "ok   svg_report"
else
  fail "svg_report: $scratch/multi.svg"
fi

# Text report and an HTML report, with prefix caching off: no lookups, no cached tokens.
out=$("$bin" bench-serve -m tiny --workload shared_prefix --num-prompts 4 --max-output-tokens 2 \
  --no-enable-prefix-caching --out "$scratch/report.html" 2>"$scratch/text.err")
if grep -q "Successful requests: *4$" <<<"$out" && grep -q "Prefix cache hit rate (%): *n/a$" <<<"$out" &&
  grep -q "Cached prompt tokens in usage (%): *0.0$" <<<"$out" &&
  grep -q "<table>" "$scratch/report.html" && grep -q "<svg" "$scratch/report.html"; then
  echo "ok   text_and_html"
else
  fail "text_and_html:"
  echo "$out" | head -40
fi

# --url: a separate `kvengine serve` on an ephemeral port.
"$bin" serve -m tiny --port 0 2>"$scratch/serve.err" &
serve_pid=$!
port=""
for _ in $(seq 1 300); do
  if grep -q "ready" "$scratch/serve.err" 2>/dev/null; then
    port=$(grep -oE "listening on http://127.0.0.1:[0-9]+" "$scratch/serve.err" | grep -oE "[0-9]+$")
    break
  fi
  sleep 0.1
done
if [ -z "$port" ]; then
  fail "url: serve did not start"
  cat "$scratch/serve.err"
else
  out=$("$bin" bench-serve --url "http://127.0.0.1:$port" --num-prompts 4 --max-output-tokens 3 \
    --request-rate 50 --json 2>"$scratch/url.err")
  [ $? -eq 0 ] || { fail "url: status"; head -20 "$scratch/url.err"; }
  check_json url "$out" "completed == 4" "vocab_size == 512" "max_model_len == 512" \
    "request_rate == 50"
fi
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null

# Clean errors.
expect_error() {  # expect_error NAME PATTERN -- command...
  local name="$1" pattern="$2"
  shift 3
  local msg status
  msg=$("$@" 2>&1 >/dev/null)
  status=$?
  if [ "$status" -ne 0 ] && grep -qE -- "$pattern" <<<"$msg"; then
    pass "$name"
  else
    fail "$name: status $status, message: $msg"
  fi
}
expect_error unreachable "^kvengine: cannot reach a server at http://127.0.0.1:1" -- \
  "$bin" bench-serve --url http://127.0.0.1:1
expect_error bad_out "must end in .svg or .html" -- "$bin" bench-serve -m tiny --out "$scratch/x.png"
expect_error bad_rate "request-rate" -- "$bin" bench-serve -m tiny --request-rate 0
expect_error url_with_engine_flag "excludes" -- "$bin" bench-serve --url http://127.0.0.1:1 -m tiny
expect_error bad_workload "workload" -- "$bin" bench-serve -m tiny --workload chat

[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
