#!/usr/bin/env bash
# Runs every benchmark and prints its figures. Figures, not pass/fail: the goals are in the
# issues and the README; each bench measures against a baseline run side by side.
#
# The model benches (the llama backend against llama.cpp's llama-bench, and the server backend
# against in-process) run once per model: the test suite's SmolLM2-135M and the default
# Qwen2.5-Coder-1.5B. BENCH_MODELS (paths separated by ':') names other files; missing files
# are skipped with a line saying so. The 1.5B takes several minutes: prompts are read at
# tens of tokens a second on a small machine. For the 1.5B the llama bench also measures
# speculative decoding with Qwen2.5-Coder-0.5B as the draft (`make bench` fetches it): the
# generation speed with and without the draft, the acceptance rate and whether the greedy
# outputs are identical. The backend has no draft option; these figures say why.
set -euo pipefail
cd "$(dirname "$0")/.."
models_dir="${RALPH_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ralph-tui/models}"
default_models="$models_dir/SmolLM2-135M-Instruct.Q4_1.gguf:$models_dir/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf"
IFS=: read -r -a models <<<"${BENCH_MODELS:-$default_models}"

# The server bench compares against a real llama-server, and the llama bench alternates with
# llama-bench; both are built once under target/ from the llama.cpp ralph-tui links.
baseline=$(bash scripts/bench-llama.sh --path)
for model in "${models[@]}"; do
  if [ ! -f "$model" ]; then
    echo "== no model at $model: skipped (make model fetches it)"
    continue
  fi
  size=$(stat -c %s "$model")
  # The memory-across-rounds figure runs one short round per count: fewer for a big model.
  rounds=64
  # The busy-machine pair (generation idle against beside a busy process) on the small model
  # only: beside a busy process the 1.5B takes seconds a token.
  busy=(--busy)
  if [ "$size" -gt 500000000 ]; then
    rounds=16
    busy=()
  fi
  echo "== model: $(basename "$model")"
  draft=()
  if [ "$(basename "$model")" = Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf ] \
    && [ -f "$models_dir/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf" ]; then
    draft=(--draft-model "$models_dir/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf")
  fi
  echo "== bench: llama"
  cargo bench --quiet --bench llama -- --model "$model" --rounds "$rounds" "${draft[@]}" \
    "${busy[@]}" --baseline "$baseline"
  echo "== bench: server"
  cargo bench --quiet --bench server -- --model "$model"
done
for name in workspace tui; do
  echo "== bench: $name"
  cargo bench --quiet --bench "$name"
done
