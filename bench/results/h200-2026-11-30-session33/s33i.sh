#!/bin/bash
# Session 33 final lease, call 3: Granite 4.0-H Micro decode; Qwen3.5 b1 and LFM2 after-16k b1 repeated.
t0=$SECONDS
export LD_LIBRARY_PATH=/tmp/p/lib
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
V=/tmp/p/bin/vkllm; B=/tmp/llama/build/bin
timeout 60 $V bench --model /tmp/gm.gguf --batch 1,8,32,64 --prompt 512 --gen 32 > $OUT/gm.txt 2>&1; echo "rc=$?" >> $OUT/gm.txt
grep -E "^prefill|decode batch|rc=|rror" $OUT/gm.txt | head
echo "gm at $((SECONDS-t0))"
for i in 1 2; do
  $V bench --model /tmp/q35.gguf --batch 1 --prompt 16 --gen 128 2>&1 | grep "decode batch" | sed "s/^/q35 b1 run $i: /"
  $V bench --model /tmp/lf.gguf --batch 1 --prompt 512 --gen 64 --depth 16384 2>&1 | grep "decode batch" | sed "s/^/lf d16k run $i: /"
done
$B/llama-bench -m /tmp/lf.gguf -ngl 99 -fa 1 -p 0 -n 64 -d 16384 -r 2 -dev CUDA0 2>/dev/null | grep -E "tg|model"
$B/llama-bench -m /tmp/q35.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -dev CUDA0 2>/dev/null | grep -E "tg|model"
echo "done at $((SECONDS-t0))"
