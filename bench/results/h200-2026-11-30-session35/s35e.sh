#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
[ -f /tmp/g4.gguf ] || /usr/bin/time -f "make g4 %e s" $V dev make-model --arch gemma4 --shape gemma4-e2b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/g4.gguf 2>&1 | tail -1
for L in 1 4 16 19; do
  timeout 60 $V bench --model /tmp/g4.gguf --batch 1 --prompt 512 --gen 64 --tune profile=1 --tune profile_layer=$L 2>&1 | grep -A1 "decode batch" | tail -1 | sed "s/^/g4 L$L: /"
done
