#!/bin/bash
# Session 36, rowsplit lease (nvidia-h200-x2, 7-9 min; its phases stop by 560 s): issue 44 item
# 2, the row split.
# Needs .device/pack.tar.xz packed (.device/pack.sh) from a build with the rowsplit branch, and
# .device/vocab.gguf; carry .device, .gl, .llamacpp.
# 1. engine tests RowSplit.* and SplitModel.* on the GPU (GPU 0 opened twice), ~20 s;
# 2. scripts/device-bench split with the row mode: vkllm on one GPU, split by layers, split by
#    rows; llama.cpp CUDA -sm none (CUDA0), layer and row (CUDA0/CUDA1); on Llama-3.1-8B's shape
#    and 70B's widths with 16 layers (llama3.1-70b:16: its per-layer costs, loaded in seconds), at
#    Q4_K_M. llama.cpp's CUDA build (none is saved in .llamacpp) runs niced beside vkllm's phase.
# $OUT: gpu-tests.log, vkllm/split.md, llamacpp/split.md (+ the raw results' tarballs), logs.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
cp .device/vocab.gguf /tmp/p/ && ln -sfn /tmp/p .device/p
export LD_LIBRARY_PATH=/tmp/p/lib VKLLM_PIPELINE_CACHE=/tmp/pipeline-cache
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
vulkaninfo --summary 2>/dev/null | grep -E "deviceName|GPU id" | head -6
# llama.cpp's CUDA build, niced, beside everything vkllm does.
VKLLM_ROOT=$PWD nice -n 19 bash scripts/device-bench build-llamacpp >$OUT/llama-build.log 2>&1 &
build=$!
timeout 90 /tmp/p/bin/engine_tests --gtest_filter='RowSplit.*:SplitModel.*:SplitLayers.*' \
  >$OUT/gpu-tests.log 2>&1
echo "rc=$?" >>$OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=|largest logit|cosine|OK \]" $OUT/gpu-tests.log | head -24
echo "tests at $((SECONDS - t0)) s"
export VKLLM_SPLIT_MODELS="llama3.1-8b:Q4_K_M llama3.1-70b:16:Q4_K_M" VKLLM_BENCH_ARGS="--gen 64"
OUT=$OUT/vkllm VKLLM_SPLIT_PHASES=vkllm VKLLM_DEVICE_DIR=.device/p \
  timeout $((330 - (SECONDS - t0))) bash scripts/device-bench split >$OUT/vkllm.log 2>&1 ||
  echo "vkllm phase stopped early (status $?)"
grep -E "^vkllm-" $OUT/vkllm/split.md 2>/dev/null || tail -5 $OUT/vkllm.log
# The device list (with "device group of N" where the driver groups the GPUs) and the split line.
{ tar xzf $OUT/vkllm/split-vkllm.tar.gz -O raw/vkllm.log 2>/dev/null || cat $OUT/vkllm/raw/vkllm.log; } >$OUT/vkllm-bench.log 2>/dev/null
grep -m3 -E "running on" $OUT/vkllm-bench.log | cut -c1-400
grep -E "failed|error|cannot" $OUT/vkllm-bench.log | head -5
echo "vkllm at $((SECONDS - t0)) s"
wait $build || { echo "llama.cpp build failed"; tail -5 $OUT/llama-build.log; }
echo "llama.cpp built at $((SECONDS - t0)) s"
left=$((560 - (SECONDS - t0)))
OUT=$OUT/llamacpp VKLLM_SPLIT_PHASES=llamacpp VKLLM_DEVICE_DIR=.device/p \
  timeout $left bash scripts/device-bench split >$OUT/llamacpp.log 2>&1 ||
  echo "llama.cpp phase stopped early (status $?)"
cat $OUT/llamacpp/split.md 2>/dev/null || tail -5 $OUT/llamacpp.log
echo "done at $((SECONDS - t0)) s"
