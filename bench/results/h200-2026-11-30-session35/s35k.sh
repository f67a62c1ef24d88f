#!/bin/bash
# Session 35, last lease: the encoder warm-up probe; stacked / fused gate|up experts on the GPU
# (tests, A/B of moe_fuse_gate_up on 4-layer Qwen3-30B-A3B and Gemma 4 26B-A4B).
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
T=/tmp/p/bin/engine_tests; V=/tmp/p/bin/vkllm
timeout 30 $T --gtest_filter='EmbeddingWarmUp.*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |Which is|built after" | head -5
timeout 90 $T --gtest_filter='*StackedExperts*:*MoeVsLlamaCpp*:*FamiliesVsLlamaCpp*moe*:*FamiliesVsLlamaCpp*qwen3next*:*FamiliesVsLlamaCpp*stacked*:*FamiliesVsLlamaCpp*llama4*:*WeightFusion*:*MoeGemm*:*MoeMatvec*:*MatvecInt8*' > $OUT/moe-tests.log 2>&1; echo "rc=$?" >> $OUT/moe-tests.log
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|rc=" $OUT/moe-tests.log | head
$V dev make-model --arch qwen3moe --shape qwen3-30b-a3b:4 --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/q4l.gguf >/dev/null 2>&1
$V dev make-model --arch gemma4 --shape gemma4-26b-a4b:4 --type Q4_K_M --stacked-experts --vocab .device/vocab.gguf --seed 1 -o /tmp/g26.gguf >/dev/null 2>&1
for m in q4l g26; do for f in 1 0; do
  timeout 40 $V bench --model /tmp/$m.gguf --batch 1,8,32 --prompt 512 --gen 32 --tune moe_fuse_gate_up=$f 2>&1 | grep -E "decode batch|prefill" | awk -v t="$m fuse=$f" '{print t": "$0}'
done; done
