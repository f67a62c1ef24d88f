#!/bin/bash
# Session 35, lease: Gemma 4 E2B / Gemma 3n E4B decode profiles at batch 1 and 8.
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
[ -f /tmp/g4.gguf ] || /usr/bin/time -f "make g4 %e s" $V dev make-model --arch gemma4 --shape gemma4-e2b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/g4.gguf 2>&1 | tail -1
[ -f /tmp/g3n.gguf ] || /usr/bin/time -f "make g3n %e s" $V dev make-model --arch gemma3n --shape gemma3n-e4b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/g3n.gguf 2>&1 | tail -1
for m in g4 g3n; do
  for b in 1 8; do
    timeout 60 $V bench --model /tmp/$m.gguf --batch $b --prompt 512 --gen 64 --tune profile=1 2>&1 | grep -A1 "decode batch" | sed "s/^/$m: /"
  done
  timeout 60 $V bench --model /tmp/$m.gguf --batch 1,8,32 --prompt 512 --gen 64 2>&1 | grep -E "decode batch|prefill" | sed "s/^/$m: /"
done
