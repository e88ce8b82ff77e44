#!/usr/bin/env bash
# Builds llama.cpp's llama-server once, for the OpenAI-compatible backend's real-server tests.
#
# The source is the llama.cpp tree inside the llama-cpp-python sdist (the same source that
# scripts/bench-llama.sh builds llama-bench from), fetched with pip and built with cmake into
# target/llama-server/ (never committed). When the binary already exists nothing is done, so
# `make test` pays for the build once per clean target/.
#
# Prints the binary's path on the last line of stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

# The llama.cpp tree comes pinned (the same source scripts/bench-llama.sh builds llama-bench from).
LLAMA_CPP_PYTHON_VERSION=0.3.36
scratch="target/llama-server"
bin="$scratch/build/bin/llama-server"
if [ ! -x "$bin" ]; then
  echo "building llama.cpp's llama-server from the llama-cpp-python sdist (once; several minutes)…" >&2
  start=$(date +%s)
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
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DBUILD_SHARED_LIBS=OFF >"$scratch/cmake.log"
  cmake --build "$scratch/build" --target llama-server -j "$(nproc)" >"$scratch/build.log"
  echo "llama-server built in $(( $(date +%s) - start )) s" >&2
fi
echo "$bin"
