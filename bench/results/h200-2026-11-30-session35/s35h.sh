#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
V=/tmp/p/bin/vkllm
timeout 150 /tmp/p/bin/engine_tests --gtest_filter='*Families*:*ImagePrompt*:*Gemma*:*Embed*' > $OUT/gpu-tests.log 2>&1; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/gpu-tests.log | head
for m in "gemma3n gemma3n-e4b g3n" "gemma3 gemma3-4b g3" "gemma4 gemma4-e2b g4"; do set -- $m
  [ -f /tmp/$3.gguf ] || $V dev make-model --arch $1 --shape $2 --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/$3.gguf >/dev/null 2>&1
  timeout 60 $V bench --model /tmp/$3.gguf --batch 1,8,32,64 --prompt 512 --gen 64 2>&1 | grep -E "decode batch|prefill" | sed "s/^/$3: /"
done
