#!/usr/bin/env bash
# The baseline for the llama backend's figures: llama.cpp's own llama-bench on the same model,
# threads and sizes as benches/llama.rs (512-token prompt, 128 generated tokens, batch 512).
# --with-backend runs benches/llama.rs first, alternating with llama-bench as scripts/bench.sh
# does.
#
# llama-bench is not in the crate's vendored llama.cpp tree. The llama-cpp-python sdist on PyPI
# carries llama.cpp's whole tree; scripts/build-llama-server.sh fetches it with pip and builds
# it once under target/ (never committed). BENCH_BASELINE=0 skips the baseline.
#
# `--path` only builds llama-bench and prints where it is: scripts/bench.sh hands it to
# benches/llama.rs, which runs it between its own repetitions.
#
# Usage: scripts/bench-llama.sh [--path] [--with-backend] [--model PATH] [--threads N] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."

model="${RALPH_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/ralph-tui/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
threads="$(nproc)"
rounds=64
prompt_tokens=512
gen_tokens=128
with_backend=0
path_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --with-backend) with_backend=1; shift ;;
    --path) path_only=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

# llama-bench comes from the same configured llama.cpp tree as the server tests' llama-server
# (scripts/build-llama-server.sh: the llama-cpp-python sdist's llama.cpp, pinned), so the two
# share every compiled library and the bench adds only llama-bench's own file.
# Benches are release builds, so a first build here reuses the release build's llama.cpp
# objects (the same Release options as the dev build's) rather than compiling a dev one.
build_llama_bench() {
  local server_bin scratch="target/llama-server"
  server_bin=$(LLAMA_SYS_PROFILE="${LLAMA_SYS_PROFILE:-release}" bash scripts/build-llama-server.sh)
  [ -x "$server_bin" ] || { echo "no llama-server at $server_bin" >&2; exit 1; }
  bench_bin="$PWD/$scratch/build/bin/llama-bench"
  if [ ! -x "$bench_bin" ]; then
    cmake --build "$scratch/build" --target llama-bench -j "$(nproc)" >"$scratch/build-bench.log"
  fi
  sdist=$(basename "$(ls "$scratch"/llama_cpp_python-*.tar.gz | head -n1)" .tar.gz)
}

if [ "$path_only" = "1" ]; then
  build_llama_bench
  echo "$bench_bin"
  exit 0
fi
if [ ! -f "$model" ]; then
  echo "no model at $model: run \`make model\`" >&2
  exit 2
fi

if [ "$with_backend" = "1" ]; then
  baseline=()
  if [ "${BENCH_BASELINE:-1}" != "0" ]; then
    build_llama_bench
    baseline=(--baseline "$bench_bin")
  fi
  cargo bench --quiet --bench llama -- --model "$model" --threads "$threads" --rounds "$rounds" \
    --prompt-tokens "$prompt_tokens" --gen-tokens "$gen_tokens" --batch-size 512 "${baseline[@]}"
fi

if [ "${BENCH_BASELINE:-1}" = "0" ]; then
  exit 0
fi

build_llama_bench
echo "llama.cpp llama-bench ($sdist), same model, $threads threads:"
"$bench_bin" -m "$model" -t "$threads" -p "$prompt_tokens" -n "$gen_tokens" -b 512 -r 3 -o md
