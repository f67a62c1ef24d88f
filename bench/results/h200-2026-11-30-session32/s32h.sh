#!/bin/bash
# Final lease, call 3: Nemotron 3 Nano 30B-A3B-shaped (nemotron_h_moe) on vkllm and llama.cpp CUDA.
t0=$SECONDS
export LD_LIBRARY_PATH=/tmp/p/lib
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
V=/tmp/p/bin/vkllm; B=/tmp/llama/build/bin
rm -f /tmp/q3.gguf /tmp/go.gguf
timeout 200 $V dev make-model --arch nemotron_h_moe --shape nemotron-3-nano-30b-a3b --type Q4_K_M --vocab .device/vocab.gguf --seed 1 -o /tmp/nn.gguf > /dev/null 2>&1 || { echo "make failed at $((SECONDS-t0))"; exit 1; }
echo "made at $((SECONDS-t0)) $(du -h /tmp/nn.gguf | cut -f1)"
timeout 100 $V bench --model /tmp/nn.gguf --batch 1,8,32,64 --prompt 512 --gen 64 --json > $OUT/vkllm-nn.json 2>>$OUT/bench.log
python3 -c "
import json; d=json.load(open('$OUT/vkllm-nn.json')); print('vkllm nn prefill', round(d['prefill']['tok_per_s']), [(x['batch'], round(x['tok_per_s'])) for x in d['decode']])"
echo "vkllm at $((SECONDS-t0))"
$B/llama-bench -m /tmp/nn.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 2 -dev CUDA0 -o json > $OUT/llama-nn.json 2>>$OUT/llama.log
$B/llama-batched-bench -m /tmp/nn.gguf -ngl 99 -fa on -c 16384 -b 2048 -ub 512 -npp 8 -ntg 128 -npl 1,8,32,64 -dev CUDA0 --output-format jsonl > $OUT/batched-nn.jsonl 2>>$OUT/llama.log
python3 -c "
import json
b=[json.loads(l) for l in open('$OUT/batched-nn.jsonl') if l.strip()]
l=json.load(open('$OUT/llama-nn.json'))
print('llama nn', [(x['n_prompt'], x['n_gen'], round(x['avg_ts'])) for x in l], [(x['pl'], round(x['speed_tg'])) for x in b])"
echo "done at $((SECONDS-t0))"
