#!/usr/bin/env bash
# Runs every benchmark and prints its figures. Figures, not pass/fail: the goals are in the
# issues and the README; each bench measures against a baseline run side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
# The server bench compares against a real llama-server, built once under target/.
bash scripts/build-llama-server.sh >/dev/null
for bench in benches/*.rs; do
  name=$(basename "$bench" .rs)
  echo "== bench: $name"
  cargo bench --quiet --bench "$name"
done
if [ -x scripts/bench-llama.sh ]; then
  echo "== bench: llama.cpp baseline"
  bash scripts/bench-llama.sh
fi
