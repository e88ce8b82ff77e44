#!/usr/bin/env bash
# `make test-gpu`: builds ralph-tui with the `vulkan` feature and runs the GPU-offload test on
# whatever Vulkan device there is (on a machine without a GPU, Mesa's software device,
# lavapipe). Its own target dir (target/vulkan): the Vulkan build of llama.cpp needs
# VULKAN_SDK, and changing that in the default target dir would rebuild llama.cpp there.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo=${CARGO:-cargo}
test_name=gpu_offload_is_real_and_fresh_gpu_contexts_repeat_exactly
sdk=$(bash scripts/install-vulkan.sh | tail -n 1)
log="$PWD/target/vulkan/test-gpu.log"
mkdir -p "$PWD/target/vulkan" "$PWD/target/mesa-shader-cache"

# Only this one cargo command sees these variables.
set +e
VULKAN_SDK="$sdk" \
  MESA_SHADER_CACHE_DIR="$PWD/target/mesa-shader-cache" \
  "$cargo" test --features vulkan --target-dir target/vulkan --test all "$test_name" \
  -- --nocapture --test-threads=1 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "test-gpu: FAILED (cargo exit $status)" >&2
  exit "$status"
fi
# --nocapture interleaves the test's own lines with libtest's, so count the result instead.
if ! grep -q '^test result: ok\. 1 passed' "$log"; then
  echo "test-gpu: the GPU test did not run (filter matched nothing?)" >&2
  exit 1
fi
echo "test-gpu: passed on $(grep -o -m 1 'gpu device: .*' "$log" | cut -d' ' -f3- || true)"
echo "test-gpu: llama.cpp $(grep -o -m 1 'offloaded [0-9]*/[0-9]* layers to GPU' "$log" || true)"
