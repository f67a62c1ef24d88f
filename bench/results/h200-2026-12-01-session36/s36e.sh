#!/bin/bash
# Session 36, lease 5b (second call on the x2 machine, after rowsplit.sh: llama.cpp's CUDA build
# in /tmp/llama/build/bin): speculative steps on the decode kernels (8B / 1B Q4_K_M, through the
# engine and the server), and q8_0 / f16 caches against llama.cpp CUDA with the same cache type.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib VKLLM_DEVICE=vulkan:0
V=/tmp/p/bin/vkllm
timeout 100 /tmp/p/bin/engine_tests --gtest_filter='PagedAttention.*:RowSplit.*-*SharedModels*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|row split:" | head -20
echo "tests at $((SECONDS - t0)) s"
M8=/tmp/llama3.1-8b-Q4_K_M.gguf; M1=/tmp/1b.gguf
[ -f $M8 ] || $V dev make-model --arch llama --shape llama3.1-8b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o $M8 >/dev/null 2>&1 &
$V dev make-model --arch llama --shape llama3.2-1b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o $M1 >/dev/null 2>&1 &
wait
echo "models at $((SECONDS - t0)) s"
$V bench --model $M8 --batch 1,8 --gen 64 --verify 7 2>&1 | grep -E "decode batch|verify batch" | sed "s/^/8b: /"
$V bench --model $M8 --batch 1,8 --gen 32 --verify 7 --depth 2048 2>&1 | grep -E "decode batch|verify batch" | sed "s/^/8b d2048: /"
$V bench --model $M1 --batch 1,8 --gen 64 --verify 7 2>&1 | grep -E "decode batch|verify batch" | sed "s/^/1b: /"
for m in $M8 $M1; do
  timeout 120 python3 .device/spec_bench.py $V $m --gen 128 --runs 3 --modes off,ngram 2>&1 | sed "s#^#spec $(basename $m): #"
done
echo "spec at $((SECONDS - t0)) s"
L=/tmp/llama/build/bin
if [ -x $L/llama-bench ]; then
  export LD_LIBRARY_PATH=$L:/tmp/p/lib
  for t in f16 q8_0; do
    timeout 60 $L/llama-bench -m $M8 -ngl 99 -fa 1 -ctk $t -ctv $t -d 32768 -p 512 -n 32 -r 1 -dev CUDA0 2>&1 | grep -E "^\|.*(pp|tg)" | sed "s/^/llama $t: /"
    timeout 60 $L/llama-batched-bench -m $M8 -ngl 99 -fa on -ctk $t -ctv $t -c 16384 -npp 8 -ntg 64 -npl 64 -dev CUDA0 2>&1 | grep -E "^\|  *[0-9]" | sed "s/^/llama-b $t: /"
  done
  export LD_LIBRARY_PATH=/tmp/p/lib
fi
for t in f16 q8_0; do
  OLLAMA_KV_CACHE_TYPE=$t timeout 90 $V bench --model $M8 --batch 1 --depth 32768 --prompt 512 --gen 32 2>&1 | grep -E "prefill|decode batch" | sed "s/^/vkllm $t d32k: /"
  OLLAMA_KV_CACHE_TYPE=$t timeout 60 $V bench --model $M8 --batch 64 --prompt 512 --gen 64 2>&1 | grep -E "decode batch" | sed "s/^/vkllm $t: /"
done
echo "done at $((SECONDS - t0)) s"
