#!/bin/bash
# Session 36, lease 2: q8_0 loads as 8-byte pairs; drafted tokens on the chunked decode kernel.
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
$V dev make-model --arch llama --shape llama3.2-1b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/1b.gguf >/dev/null 2>&1 &
$V dev make-model --arch llama --shape llama3.1-8b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/8b.gguf >/dev/null 2>&1 &
timeout 150 /tmp/p/bin/bench_attention --benchmark_filter='kvtype|verify' 2>&1 | grep -E "BM_" | awk '{print "attn: "$1" "$2" "$(NF-1)" "$NF}'
wait
for k in 7 3; do
  $V bench --model /tmp/1b.gguf --batch 1,8 --prompt 128 --gen 128 --verify $k 2>&1 | grep -E "decode batch|verify batch" | sed "s/^/1b k=$k: /"
  $V bench --model /tmp/8b.gguf --batch 1,8 --gen 64 --verify $k 2>&1 | grep -E "decode batch|verify batch" | sed "s/^/8b k=$k: /"
done
for t in f16 q8_0; do
  OLLAMA_KV_CACHE_TYPE=$t timeout 100 $V bench --model /tmp/8b.gguf --batch 1 --depth 32768 --prompt 512 --gen 32 2>&1 | grep -E "prefill|decode batch" | sed "s/^/depth $t: /"
done
