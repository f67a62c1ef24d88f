#!/bin/bash
# Session 36, lease 1: where a speculative verification step's time goes (8B Q4_K_M, 1b-mem),
# and the quantized caches' attention kernels against f16 (issue 39).
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
$V dev make-model --arch llama --shape llama3.2-1b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/1b.gguf >/dev/null 2>&1; TM=/tmp/1b.gguf
t0=$SECONDS
$V dev make-model --arch llama --shape llama3.1-8b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/8b.gguf >/dev/null 2>&1 &
mk=$!
wait $mk; echo "models made in $((SECONDS - t0)) s"
for k in 7 3; do
  $V bench --model $TM --batch 1,8 --prompt 128 --gen 128 --verify $k 2>&1 | grep -E "decode batch|verify batch" | sed "s/^/1b k=$k: /"
done
$V bench --model $TM --batch 1 --prompt 128 --gen 64 --verify 7 --tune profile=1 2>&1 | grep -E "batch|phases" | sed "s/^/1b prof: /"
for k in 7 3; do
  $V bench --model /tmp/8b.gguf --batch 1,8 --gen 64 --verify $k 2>&1 | grep -E "prefill|decode batch|verify batch" | sed "s/^/8b k=$k: /"
done
$V bench --model /tmp/8b.gguf --batch 1 --gen 32 --verify 7 --tune profile=1 2>&1 | grep -E "batch|phases" | sed "s/^/8b prof: /"
timeout 120 /tmp/p/bin/bench_attention --benchmark_filter='kvtype' 2>&1 | grep -E "BM_" | awk '{print "attn: "$0}'
for t in f16 q8_0; do
  OLLAMA_KV_CACHE_TYPE=$t timeout 100 $V bench --model /tmp/8b.gguf --batch 1 --depth 32768 --prompt 512 --gen 32 --tune profile=1 2>&1 | grep -E "prefill|decode batch|phases" | sed "s/^/depth $t: /"
done
