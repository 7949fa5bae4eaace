# Helpers shared by the end-to-end shell tests (curl_test.sh, tiers_test.sh), sourced with the
# test's own arguments KVENGINE_BINARY SCRATCH_DIR: sets `bin`, `scratch` (emptied and created),
# KVENGINE_CACHE (unless set, into the scratch directory) and `failures=0`.
# shellcheck shell=bash
bin="$1"
scratch="$2"
rm -rf "$scratch"
mkdir -p "$scratch"
export KVENGINE_CACHE="${KVENGINE_CACHE:-$scratch/cache}"
failures=0

# Fails the test at once when a tool is missing (scripts/install-deps.sh installs them).
require_tools() {
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "FAIL: $tool is not installed (scripts/install-deps.sh)"
      exit 1
    fi
  done
}

# Every curl call is bounded: a server that stops answering fails the row that asked (curl exits
# 28) instead of hanging the test until CTest's timeout. No request of these tests takes more
# than a few seconds. A config file ($scratch/.curlrc, read through CURL_HOME), not a wrapper
# function: `curl ... &` of a function is a subshell, and the rows that kill a client by PID
# would kill the subshell and leave curl connected.
printf 'max-time = 120\n' >"$scratch/.curlrc"
export CURL_HOME="$scratch"

ok() { echo "ok   $1"; }
fail() {
  echo "FAIL $1: $2"
  failures=$((failures + 1))
}

# serve_on_free_port NAME LOG ARGS...: starts `$bin serve --host 127.0.0.1 --port 0 ARGS` (its
# output in LOG, which says the port) and waits (bounded, 60 s) for /health 200; then sets
# served_pid and served_base (http://127.0.0.1:PORT). A server that never gets healthy ends the
# test with its log.
serve_on_free_port() {
  local name="$1" log="$2"
  shift 2
  "$bin" serve --host 127.0.0.1 --port 0 "$@" >"$log" 2>&1 &
  served_pid=$!
  local port=""
  for _ in $(seq 1 600); do
    port=$(grep -oE 'listening on http://127\.0\.0\.1:[0-9]+' "$log" | grep -oE '[0-9]+$')
    if [ -n "$port" ] &&
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then
      served_base="http://127.0.0.1:$port"
      return 0
    fi
    kill -0 "$served_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL start $name: server not healthy; log:"
  cat "$log"
  kill -9 "$served_pid" 2>/dev/null
  exit 1
}

# metric_sum BASE NAME [LABEL]: the sum of the samples of kvengine:NAME at BASE/metrics (those
# whose labels contain LABEL, e.g. 'tier="redis"').
metric_sum() {
  curl -s "$1/metrics" | awk -v n="kvengine:$2" -v l="${3:-}" \
    '(index($1, n "{") == 1 || $1 == n) && index($1, l) > 0 { s += $NF } END { printf "%.0f\n", s }'
}

# wait_for DESCRIPTION SECONDS CONDITION: evaluates the shell condition every 50 ms (afresh each
# time: quote it); 1 on timeout.
wait_for() {
  local what="$1" seconds="$2" condition="$3"
  for _ in $(seq 1 $((seconds * 20))); do
    eval "$condition" && return 0
    sleep 0.05
  done
  echo "     (timed out after ${seconds}s waiting for $what)"
  return 1
}
