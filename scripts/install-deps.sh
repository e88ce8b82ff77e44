#!/usr/bin/env bash
# Installs the Debian packages ralph-tui needs to build and test, when any is missing.
set -euo pipefail

packages=(cmake libclang-dev pkg-config git tmux python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# pip may come from a Python installation outside Debian's packages.
if [[ " ${missing[*]:-} " == *" python3-pip "* ]] && python3 -m pip --version >/dev/null 2>&1; then
  missing=("${missing[@]/python3-pip}")
fi
read -r -a missing <<<"${missing[*]:-}"
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
