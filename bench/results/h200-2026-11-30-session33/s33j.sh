#!/bin/bash
# Session 33, last call: Gemma 3n / Gemma 4 batch 1-8 after the post-norm fusion and Gemma 4's feed.
export LD_LIBRARY_PATH=/tmp/p/lib
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
V=/tmp/p/bin/vkllm
mk() { [ -f /tmp/$1.gguf ] || $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf > /dev/null 2>&1; }
mk g3n gemma3n gemma3n-e4b Q4_K_M
mk g4 gemma4 gemma4-e2b Q4_K_M
for m in g3n g4; do
  for p in 16 512; do
    $V bench --model /tmp/$m.gguf --batch 1,8 --prompt $p --gen 64 2>&1 | grep "decode batch" | sed "s/^/$m prompt $p: /"
  done
done
