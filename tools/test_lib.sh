# Helpers shared by the tools/*_test.sh scripts, sourced right after `set -uo pipefail` with the
# script's own arguments KVENGINE_BINARY SCRATCH_DIR ...: sets `bin` and `scratch` (created),
# points KVENGINE_CACHE into it and starts `failures` at 0.
# shellcheck shell=bash
bin="$1"
scratch="$2"
mkdir -p "$scratch"
export KVENGINE_CACHE="$scratch/cache"
failures=0

pass() { echo "ok   $1"; }
fail() {
  echo "FAIL $1"
  failures=$((failures + 1))
}
# expect NAME JQ_FILTER FILE: the filter must print true.
expect() {
  if [ "$(jq -e "$2" "$3" 2>&1)" = "true" ]; then pass "$1"; else fail "$1: $2"; fi
}
# check_status NAME STATUS PATTERN -- command...: exit status STATUS and a message matching
# PATTERN.
check_status() {
  local name="$1" want="$2" pattern="$3"
  shift 4
  local out status
  out=$("$@" 2>&1)
  status=$?
  if [ "$status" -eq "$want" ] && grep -qE -- "$pattern" <<<"$out"; then
    pass "$name"
  else
    fail "$name: status $status (want $want), output: $(head -20 <<<"$out")"
  fi
}
# check_error NAME PATTERN -- command...: exit status 1 (an unusable input, a runtime failure).
check_error() { check_status "$1" 1 "${@:2}"; }
# check_usage NAME PATTERN -- command...: exit status 2 (a malformed command line).
check_usage() { check_status "$1" 2 "${@:2}"; }
# check_text NAME TEXT PATTERN...: TEXT matches every PATTERN (an extended regular expression).
check_text() {
  local name="$1" text="$2" pattern
  shift 2
  for pattern in "$@"; do
    if ! grep -qE -- "$pattern" <<<"$text"; then
      fail "$name: $text"
      return
    fi
  done
  pass "$name"
}
# check_svg NAME SVG TITLES -- command...: the command succeeds and writes SVG, a whole chart
# (<svg ... </svg>) with TITLES <title> elements.
check_svg() {
  local name="$1" svg="$2" titles="$3"
  shift 4
  if "$@" > /dev/null 2>&1 &&
     head -c 4 "$svg" | grep -q "<svg" && tail -1 "$svg" | grep -q "</svg>" &&
     [ "$(grep -c "<title>" "$svg")" -eq "$titles" ]; then
    pass "$name"
  else
    fail "$name: $(head -c 300 "$svg" 2>&1)"
  fi
}
