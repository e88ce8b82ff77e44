#!/usr/bin/env bash
# The whole test suite, as `make test` runs it: the deterministic tests, then the real-model
# tests, then the tests against a real llama-server.
#
# On a fresh machine most of the time is compiling: llama.cpp (inside llama-cpp-sys-2), the
# rest of the test profile, and llama-server. llama.cpp is compiled once: the crate comes
# first, then llama-server is built in the background from the same llama.cpp source, reusing
# the crate's compiled libraries (scripts/build-llama-server.sh), at a lower priority while the
# rest of the test profile compiles and the deterministic tests run. The default model is
# fetched by the binary (`ralph-tui model fetch`), so the binary is built first, llama.cpp with
# it; then the small test model, in the foreground (a deterministic test loads it), and the
# default model in the background while the rest compiles. The real-model tests wait for both and then run
# alone (llama.cpp's worker threads stall when other CPU-heavy work shares the cores). A failure
# in one phase does not hide the others: every phase runs, and the script exits non-zero if any
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO="${CARGO:-cargo}"
# A CI build starts from nothing and is thrown away: incremental compilation's caches only
# cost time there (about 18 CPU-seconds on ralph-tui's own crates). Elsewhere they speed up
# the next build, and changing the setting would rebuild those crates once.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
fi
mkdir -p target
status=0
started=$(date +%s)
# cpu_seconds: the CPU time (user + system) of this script's finished children so far (read
# from /proc, since `times` in a pipeline would report the subshell's own children).
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' "/proc/$$/stat"; }
# phase NAME: says how long the run has taken so far, and the CPU time its finished steps
# used, so a slow phase shows in CI's log.
phase() { echo "make test: $1 after $(($(date +%s) - started)) s (CPU $(cpu_seconds) s)" >&2; }

# in_background LOG CMD...: starts CMD at a lower priority, output to LOG; its pid is in $!.
in_background() {
  local log=$1
  shift
  nice -n 10 "$@" >"$log" 2>&1 &
}

# finish NAME PID LOG: waits for a background step; on failure shows the end of its log.
finish() {
  local name=$1 pid=$2 log=$3
  if wait "$pid"; then
    return 0
  fi
  echo "$name failed; the end of $log:" >&2
  tail -n 20 "$log" >&2
  return 1
}

bash scripts/fetch-model.sh test || exit 1
models_log=target/fetch-models.log
server_log=target/build-llama-server.log
in_background "$models_log" bash scripts/fetch-model.sh default
models_pid=$!
# llama.cpp itself, in the foreground: llama-server's build reuses what it compiles.
sys_out=$(bash scripts/build-llama-server.sh --crate-out) || status=1
phase "llama.cpp compiled"
export LLAMA_SYS_OUT="$sys_out"
in_background "$server_log" bash scripts/build-llama-server.sh
server_pid=$!

$CARGO test --lib --bins --tests --no-fail-fast -- --skip suite::llama:: --skip suite::llama_server:: || status=1
phase "compile and deterministic tests done"

models_ok=1
server_ok=1
finish "fetching the default model (scripts/fetch-model.sh default)" "$models_pid" "$models_log" || models_ok=0
finish "building llama-server (scripts/build-llama-server.sh)" "$server_pid" "$server_log" || server_ok=0
[ "$models_ok" = 1 ] || status=1
[ "$server_ok" = 1 ] || status=1
phase "default model and llama-server ready"

if [ "$models_ok" = 1 ]; then
  $CARGO test --test all --no-fail-fast suite::llama:: -- --test-threads=1 || status=1
  phase "real-model tests done"
  if [ "$server_ok" = 1 ]; then
    $CARGO test --test all --no-fail-fast suite::llama_server:: -- --test-threads=1 || status=1
  fi
fi
phase "all done"
exit "$status"
