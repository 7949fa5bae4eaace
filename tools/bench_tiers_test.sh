#!/usr/bin/env bash
# Smoke test of `kvengine bench tiers` on the tiny model (a few seconds): the JSON has the five
# scenarios in order, the recompute row computed the whole prompt and every tier row less of it
# (and read bytes from its tier), the disk directory and Redis keys of the run are gone at the
# end, and bad flags fail with a message. Run without Redis (row (e) skipped), against a Redis
# that is down (row (e) not served, the run still succeeds), and against a real redis-server
# started here on a unix socket and killed at exit. Without redis-server the Redis part is
# skipped, unless CI is set (not "", "0" or "false"): then it fails.
# Usage: bench_tiers_test.sh KVENGINE_BINARY SCRATCH_DIR
set -uo pipefail
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
rm -rf "$scratch"
mkdir -p "$scratch"
in_ci() { [ -n "${CI:-}" ] && [ "${CI}" != "0" ] && [ "${CI}" != "false" ]; }

prompt=256
mkdir -p "$scratch/disk"
small=(-m tiny -t 1 --prompt-tokens "$prompt" --repeat 1 --raw-passes 1 --kv-disk-path "$scratch/disk")
# common_checks NAME FILE: what holds with or without Redis.
common_checks() {
  local n="$1" json="$2"
  expect "${n}_scenarios" '[.[].scenario] == ["recompute", "pool", "ram", "disk", "redis"]' "$json"
  expect "${n}_fields" 'all(.[]; has("ttft_s") and has("speedup_vs_recompute")
    and has("tier_gb_per_s") and has("raw_gb_per_s") and has("fraction_of_raw") and has("blocks")
    and has("bytes") and has("prompt_tokens_computed"))' "$json"
  expect "${n}_recompute" ".[0].prompt_tokens_computed == $prompt and .[0].ttft_s > 0
    and .[0].served" "$json"
  expect "${n}_pool" ".[1].served and .[1].prompt_tokens_computed < $prompt and .[1].blocks == 15" "$json"
  expect "${n}_ram_disk" "[.[2], .[3]] | all(.[]; .served and .prompt_tokens_computed < $prompt
    and .ttft_s > 0 and .blocks == 15 and .bytes > 0 and .tier_gb_per_s > 0 and .raw_gb_per_s > 0
    and (.fraction_of_raw - .tier_gb_per_s / .raw_gb_per_s | fabs) < 1e-9)" "$json"
  expect "${n}_raw_methods" '.[2].raw_method == "memcpy"
    and (.[3].raw_method | test("O_DIRECT|FADV_DONTNEED"))' "$json"
  if [ -z "$(ls -A "$scratch/disk")" ]; then pass "${n}_disk_dir_removed"
  else fail "${n}_disk_dir_removed: $(ls "$scratch/disk")"; fi
}

# 1. No Redis: row (e) skipped.
json="$scratch/no-redis.json"
if "$bin" bench tiers "${small[@]}" --json > "$json" 2> "$scratch/no-redis.err"; then
  pass no_redis_runs
else
  fail "no_redis_runs: $(tail -3 "$scratch/no-redis.err")"
fi
common_checks no_redis "$json"
expect no_redis_skipped '.[4].skipped and (.[4].note | test("--kv-redis"))' "$json"
if grep -q "^bench tiers: (c) ram run 1/1" "$scratch/no-redis.err"; then pass progress_lines
else fail "progress_lines: $(head -3 "$scratch/no-redis.err")"; fi

text=$("$bin" bench tiers "${small[@]}" 2>/dev/null)
check_text text_report "$text" "targets \(offload tiers\)" "^\(e\) redis +skipped" "^\(d\) disk "

svg="$scratch/tiers.svg"
# TTFT of 4 rows; ram and disk, tier and raw.
check_svg svg_chart "$svg" 8 -- "$bin" bench tiers "${small[@]}" --svg "$svg"
check_error svg_unwritable "cannot write" -- "$bin" bench tiers "${small[@]}" \
  --svg "$scratch/no/such/dir/t.svg"

# 2. A Redis that is down: misses, not a failure.
json="$scratch/redis-down.json"
if "$bin" bench tiers "${small[@]}" --kv-redis "unix:$scratch/none.sock" --json > "$json" \
    2> "$scratch/redis-down.err"; then
  pass redis_down_runs
  expect redis_down_not_served '.[4].served == false and .[4].skipped == false
    and .[4].prompt_tokens_computed == '"$prompt" "$json"
  expect redis_down_others_fine '[.[1], .[2], .[3]] | all(.[]; .served)' "$json"
else
  fail "redis_down_runs: $(tail -3 "$scratch/redis-down.err")"
fi

check_error bad_prompt "prompt-tokens" -- "$bin" bench tiers -m tiny --prompt-tokens 8
check_error prompt_beyond_context "context" -- "$bin" bench tiers -m tiny --prompt-tokens 4k
check_error bad_redis "kv-redis" -- "$bin" bench tiers -m tiny --prompt-tokens 64 --kv-redis nohost
check_error bad_disk_path "kv-disk-path" -- "$bin" bench tiers -m tiny --prompt-tokens 64 \
  --kv-disk-path /nonexistent/dir

# 3. A real redis-server on a unix socket.
if ! command -v redis-server > /dev/null; then
  if in_ci; then
    fail "redis-server not found (CI is set: scripts/install-deps.sh installs it)"
  else
    echo "skip redis part: redis-server not found"
  fi
else
  rdir=$(mktemp -d /tmp/kvbt.XXXXXX)  # Short: unix socket paths are limited to 107 bytes.
  sock="$rdir/redis.sock"
  redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no --daemonize no \
    --dir "$rdir" > "$rdir/redis.log" 2>&1 &
  redis_pid=$!
  trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; rm -rf "$rdir"' EXIT
  for _ in $(seq 100); do
    [ -S "$sock" ] && break
    sleep 0.1
  done
  if [ ! -S "$sock" ]; then
    fail "redis-server did not open $sock: $(tail -3 "$rdir/redis.log")"
  else
    json="$scratch/redis.json"
    if "$bin" bench tiers "${small[@]}" --kv-redis "unix:$sock" --json > "$json" \
        2> "$scratch/redis.err"; then
      pass redis_runs
    else
      fail "redis_runs: $(tail -3 "$scratch/redis.err")"
    fi
    common_checks redis "$json"
    expect redis_served ".[4].served and .[4].skipped == false
      and .[4].prompt_tokens_computed < $prompt and .[4].blocks == 15 and .[4].bytes > 0
      and .[4].tier_gb_per_s > 0 and .[4].raw_gb_per_s > 0
      and .[4].raw_method == \"pipelined GET\"" "$json"
    # Records (a 96-byte header each) on disk and in Redis; payloads in RAM.
    expect redis_record_bytes '.[4].bytes == .[3].bytes and .[3].bytes == .[2].bytes + 15 * 96' "$json"
    if command -v redis-cli > /dev/null; then
      left=$(redis-cli -s "$sock" --scan --pattern 'kvengine:bench-tiers:*' | wc -l)
      if [ "$left" -eq 0 ]; then pass redis_keys_deleted; else fail "redis_keys_deleted: $left left"; fi
    fi
  fi
fi
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
