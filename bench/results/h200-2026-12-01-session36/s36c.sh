#!/bin/bash
# Session 36, lease 3: speculation through the server (8B / 1B Q4_K_M, ngram vs off, draft caps),
# verification of 9 tokens, decode kernels on long contexts.
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
$V dev make-model --arch llama --shape llama3.2-1b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/1b.gguf >/dev/null 2>&1 &
$V dev make-model --arch llama --shape llama3.1-8b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/8b.gguf >/dev/null 2>&1 &
wait
$V bench --model /tmp/8b.gguf --batch 1 --gen 64 --verify 8 2>&1 | grep -E "decode batch|verify batch" | sed "s/^/8b k=8: /"
for m in 8b 1b; do
  VKLLM_DRAFT_MAX=8 timeout 150 python3 .device/spec_bench.py $V /tmp/$m.gguf --gen 128 --runs 3 --modes off,ngram 2>&1 | sed "s/^/spec $m max=8: /"
  VKLLM_DRAFT_MAX=4 timeout 150 python3 .device/spec_bench.py $V /tmp/$m.gguf --gen 128 --runs 3 --modes ngram 2>&1 | sed "s/^/spec $m max=4: /"
done
timeout 150 /tmp/p/bin/bench_attention --benchmark_filter='kernels|verify' 2>&1 | grep -E "BM_" | awk '{print "attn: "$1" "$2" "$(NF-1)" "$NF}'
