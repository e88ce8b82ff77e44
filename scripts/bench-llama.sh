#!/usr/bin/env bash
# The baseline for the llama backend's figures: llama.cpp's own llama-bench on the same model,
# threads and sizes as benches/llama.rs (512-token prompt, 128 generated tokens, batch 512).
# scripts/bench.sh runs benches/llama.rs just before this; --with-backend runs it here too.
#
# llama-bench is not in the crate's vendored llama.cpp tree. The llama-cpp-python sdist on PyPI
# carries llama.cpp's whole tree; it is fetched with pip and built once in a scratch directory
# under target/ (never committed). BENCH_BASELINE=0 skips the baseline.
#
# Usage: scripts/bench-llama.sh [--with-backend] [--model PATH] [--threads N] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."

model="${RALPH_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/ralph-tui/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
threads="$(nproc)"
rounds=64
prompt_tokens=512
gen_tokens=128
with_backend=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --with-backend) with_backend=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ ! -f "$model" ]; then
  echo "no model at $model: run \`make model\`" >&2
  exit 2
fi

if [ "$with_backend" = "1" ]; then
  cargo bench --quiet --bench llama -- --model "$model" --threads "$threads" --rounds "$rounds" \
    --prompt-tokens "$prompt_tokens" --gen-tokens "$gen_tokens" --batch-size 512
fi

if [ "${BENCH_BASELINE:-1}" = "0" ]; then
  exit 0
fi

scratch="target/llama-bench-baseline"
# The llama.cpp tree comes pinned: the same source on every machine, measured as the README says.
LLAMA_CPP_PYTHON_VERSION=0.3.36
bench_bin="$scratch/build/bin/llama-bench"
if [ ! -x "$bench_bin" ]; then
  echo
  echo "building llama.cpp's llama-bench from the llama-cpp-python sdist (once; several minutes)…"
  mkdir -p "$scratch"
  if ! ls "$scratch"/llama_cpp_python-*.tar.gz >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps --no-binary=:all: -d "$scratch" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  fi
  sdist=$(ls "$scratch"/llama_cpp_python-*.tar.gz | head -n1)
  rm -rf "$scratch/src"
  mkdir -p "$scratch/src"
  tar -xzf "$sdist" -C "$scratch/src" --strip-components=1
  cmake -S "$scratch/src/vendor/llama.cpp" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON -DBUILD_SHARED_LIBS=OFF >"$scratch/cmake.log"
  cmake --build "$scratch/build" --target llama-bench -j "$(nproc)" >"$scratch/build.log"
fi
echo "llama.cpp llama-bench ($(basename "$(ls "$scratch"/llama_cpp_python-*.tar.gz | head -n1)" .tar.gz)), same model, $threads threads:"
"$bench_bin" -m "$model" -t "$threads" -p "$prompt_tokens" -n "$gen_tokens" -b 512 -r 3 -o md
