#!/usr/bin/env bash
# Packs the release binary with its assets, README, docs and LICENSE.
set -euo pipefail
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
name="ralph-tui-$version"
out=dist/$name
rm -rf "$out"
mkdir -p "$out"
cp target/release/ralph-tui README.md LICENSE "$out/"
cp -r assets docs "$out/"
tar -C dist -czf "dist/$name.tar.gz" "$name"
echo "dist/$name.tar.gz"
