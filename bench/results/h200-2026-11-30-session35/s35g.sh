#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
V=/tmp/p/bin/vkllm
timeout 150 /tmp/p/bin/engine_tests --gtest_filter='SmallKernels.*:*Families*:*MoeVsLlamaCpp*:*ImagePrompt*:*Gemma4*' > $OUT/gpu-tests.log 2>&1; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/gpu-tests.log | head
[ -f /tmp/g4.gguf ] || $V dev make-model --arch gemma4 --shape gemma4-e2b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/g4.gguf >/dev/null 2>&1
timeout 60 $V bench --model /tmp/g4.gguf --batch 1,8,32,64 --prompt 512 --gen 64 2>&1 | grep -E "decode batch|prefill" | sed "s/^/g4: /"
[ -f /tmp/q3.gguf ] || /usr/bin/time -f "make q3 %e s" $V dev make-model --arch qwen3moe --shape qwen3-30b-a3b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/q3.gguf 2>&1 | tail -1
timeout 90 $V bench --model /tmp/q3.gguf --batch 1,8,32 --prompt 512 --gen 64 2>&1 | grep -E "decode batch|prefill" | sed "s/^/q3: /"
timeout 60 $V bench --model /tmp/q3.gguf --batch 1 --prompt 512 --gen 64 --tune profile=1 2>&1 | grep -A1 "decode batch" | tail -1 | sed "s/^/q3 L1: /"
