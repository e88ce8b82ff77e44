#!/usr/bin/env bash
# Installs what a `vulkan` build of llama.cpp needs, for `make test-gpu`: Debian's Vulkan
# packages plus Mesa's software device (lavapipe), and newer Vulkan headers than Debian 12
# ships (the vendored ggml-vulkan needs 1.4.x). The headers come from Debian 13's
# `libvulkan-dev`, downloaded through a private apt configuration (the system's sources are
# left alone) and unpacked under target/. Prints the VULKAN_SDK path to use. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

sdk_dir="$PWD/target/vulkan-sdk"
sdk="$sdk_dir/usr"
suite="trixie"

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

packages=(glslc libvulkan-dev spirv-headers mesa-vulkan-drivers vulkan-tools)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ -f "$sdk/include/vulkan/vulkan.hpp" ]; then
  echo "$sdk"
  exit 0
fi

# The Debian archive the machine already uses (deb822 or one-line sources), so the newer
# package comes from the same mirror.
mirror=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  mirror=$(awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) if ($i ~ /\/debian(\/[0-9]+T[0-9]+Z)?\/?$/) { print $i; exit } }' "$f")
  [ -n "$mirror" ] && break
done
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\/.*\/debian(\/[0-9]+T[0-9]+Z)?\/?$/) { print $i; exit } }' \
    | head -n 1)
fi
if [ -z "$mirror" ]; then
  echo "install-vulkan: no Debian archive found in /etc/apt sources" >&2
  exit 1
fi

scratch="$PWD/target/vulkan-apt"
rm -rf "$scratch"
mkdir -p "$scratch/lists/partial" "$scratch/cache/archives/partial" "$scratch/parts" "$scratch/deb"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$keyring] ${mirror%/} $suite main" >"$scratch/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$scratch/sources.list"
  -o "Dir::Etc::SourceParts=$scratch/parts"
  -o "Dir::State::Lists=$scratch/lists"
  -o "Dir::Cache=$scratch/cache"
  -o "APT::Get::List-Cleanup=0"
  -o "Acquire::Check-Valid-Until=false"
)
echo "fetching $suite's libvulkan-dev from ${mirror%/}" >&2
apt-get "${apt_opts[@]}" update -qq >&2
(cd "$scratch/deb" && apt-get "${apt_opts[@]}" download libvulkan-dev >&2)
rm -rf "$sdk_dir"
mkdir -p "$sdk_dir"
dpkg -x "$scratch"/deb/libvulkan-dev_*.deb "$sdk_dir"
rm -rf "$scratch"
if [ ! -f "$sdk/include/vulkan/vulkan.hpp" ]; then
  echo "install-vulkan: $sdk has no Vulkan headers" >&2
  exit 1
fi
echo "$sdk"
