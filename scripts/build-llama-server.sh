#!/usr/bin/env bash
# Builds llama.cpp's llama-server once, for the OpenAI-compatible backend's real-server tests
# (and the tree scripts/bench-llama.sh builds llama-bench in).
#
# The source is the llama.cpp tree inside the llama-cpp-python sdist, fetched with pip and
# built with cmake into target/llama-server/ (never committed). The sdist is pinned to the
# release that vendors the very llama.cpp commit llama-cpp-sys-2 (pinned in Cargo.toml)
# vendors, so llama.cpp is not compiled twice: the libraries the crate's build already compiled
# (ggml, llama, common, cpp-httplib) are copied into the server's build tree with the crate's
# own compile options, and only the server, mtmd and the UI stub are compiled here.
#
# The reuse is checked, not assumed: every source file of the crate's llama.cpp tree must be
# byte-identical in the sdist's; otherwise (or with no crate build to reuse) the whole tree is
# compiled, as before, and the log says why. LLAMA_SYS_OUT names the crate's build output
# (`OUT_DIR`); without it cargo is asked (which builds the crate if needed) in the dev profile,
# or in release with LLAMA_SYS_PROFILE=release (scripts/bench-llama.sh, for the release-built
# benches: the crate compiles llama.cpp with the same Release options in both); `--crate-out`
# prints that directory and does nothing else.
#
# When the binary already exists (built from this pin) nothing is done, so `make test` pays for the build once per
# clean target/. Prints the binary's path on the last line of stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

# llama-cpp-python 0.3.28 vendors llama.cpp 9e3b928, as llama-cpp-sys-2 0.1.147 to 0.1.153 do.
LLAMA_CPP_PYTHON_VERSION=0.3.28
scratch="target/llama-server"
build="$scratch/build"
bin="$build/bin/llama-server"
# Which sdist the binary was built from: a build from another pin is built again.
stamp="$scratch/built-from"

# The crate's build output directory (its OUT_DIR), from cargo when not given.
crate_out() {
  if [ -n "${LLAMA_SYS_OUT:-}" ]; then
    echo "$LLAMA_SYS_OUT"
    return
  fi
  local profile=()
  [ "${LLAMA_SYS_PROFILE:-dev}" = release ] && profile=(--release)
  "${CARGO:-cargo}" build "${profile[@]}" -p llama-cpp-sys-2 \
    --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "build-script-executed" and "llama-cpp-sys-2" in m["package_id"]:
        print(m["out_dir"])'
}

# cache_value FILE KEY: a CMakeCache.txt entry's value.
cache_value() { sed -n "s/^$2:[A-Z]*=//p" "$1" | head -n1; }

# reusable OUT SRC: says why the crate build at OUT cannot stand in for SRC's libraries (and
# fails), or succeeds silently.
reusable() {
  local out=$1 src=$2 cache="$1/build/CMakeCache.txt" crate_src dir
  [ -f "$cache" ] || { echo "no cmake build of the crate at $out" >&2; return 1; }
  crate_src=$(cache_value "$cache" CMAKE_HOME_DIRECTORY)
  [ -d "$crate_src" ] || { echo "the crate's llama.cpp source ($crate_src) is gone" >&2; return 1; }
  for dir in CMakeLists.txt cmake include src ggml common vendor; do
    # Files the crate leaves out (other GPU backends, docs) are fine; a changed or missing
    # one is not.
    if diff -rq "$crate_src/$dir" "$src/$dir" 2>&1 | grep -v "^Only in $src" | grep -q .; then
      echo "the crate's llama.cpp differs from the sdist's in $dir/" >&2
      return 1
    fi
  done
}

# crate_options CACHE: the crate's llama.cpp build options, as -D arguments, so the server's
# tree compiles the shared libraries exactly as the crate did.
crate_options() {
  sed -n -E 's/^((GGML|LLAMA)_[A-Z0-9_]+):BOOL=(ON|OFF)$/-D\1=\3/p' "$1"
  echo "-DCMAKE_C_FLAGS=$(cache_value "$1" CMAKE_C_FLAGS)"
  echo "-DCMAKE_CXX_FLAGS=$(cache_value "$1" CMAKE_CXX_FLAGS)"
  # The crate's own additions (scripts/llama-build.cmake), when it had them: the same objects,
  # so the same include.
  local include
  include=$(cache_value "$1" CMAKE_PROJECT_INCLUDE)
  [ -z "$include" ] || echo "-DCMAKE_PROJECT_INCLUDE=$include"
}

# seed OUT: copies the crate's compiled objects of the libraries both trees build into the
# server's build tree, newer than everything make compares them with.
seed() {
  local from="$1/build" obj n=0
  while IFS= read -r obj; do
    if [ -d "$build/$(dirname "$obj")" ]; then
      cp "$from/$obj" "$build/$obj"
      n=$((n + 1))
    fi
  done < <(cd "$from" && find ggml src common vendor -name '*.o' -path '*/CMakeFiles/*')
  echo "$n"
}

# `--crate-out`: only compile the crate (if needed) and print its build output directory, the
# LLAMA_SYS_OUT to give a later build (scripts/test.sh compiles it first this way).
if [ "${1:-}" = "--crate-out" ]; then
  crate_out
  exit
fi

# failed LOG: the end of a failed step's log, and exit.
failed() {
  echo "building llama-server failed; the end of $1:" >&2
  tail -n 30 "$1" >&2
  exit 1
}

if [ ! -x "$bin" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$LLAMA_CPP_PYTHON_VERSION" ]; then
  start=$(date +%s)
  mkdir -p "$scratch"
  if ! ls "$scratch"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps --no-binary=:all: -d "$scratch" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  fi
  rm -rf "$scratch/src" "$build"
  mkdir -p "$scratch/src"
  tar -xzf "$scratch/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$scratch/src" --strip-components=1
  src="$scratch/src/vendor/llama.cpp"
  out=$(crate_out || true)
  options=()
  if [ -n "$out" ] && reusable "$out" "$src"; then
    mapfile -t options < <(crate_options "$out/build/CMakeCache.txt")
    # What is compiled here is the server's HTTP and JSON code and mtmd (images and audio,
    # unused by the tests): at -O1 it takes about a sixth less CPU time (187 -> 155 CPU-s), and
    # the model's compute runs in the copied, fully optimized ggml and llama objects.
    options+=("-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG")
  else
    out=""
    echo "compiling llama.cpp whole for llama-server (several minutes)" >&2
    options=(-DGGML_NATIVE=OFF)
  fi
  # No web UI: it would be fetched from the network or built with npm; the tests need the API.
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release "${options[@]}" \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF >"$scratch/cmake.log" 2>&1 || failed "$scratch/cmake.log"
  if [ -n "$out" ]; then
    echo "reusing $(seed "$out") objects the crate's build compiled from the same llama.cpp" >&2
  fi
  cmake --build "$build" --target llama-server -j "$(nproc)" >"$scratch/build.log" 2>&1 ||
    failed "$scratch/build.log"
  echo "$LLAMA_CPP_PYTHON_VERSION" >"$stamp"
  echo "llama-server built in $(($(date +%s) - start)) s ($(grep -c 'Building' "$scratch/build.log") files compiled)" >&2
fi
echo "$bin"
