#!/bin/bash
# Final lease, call 2: llama.cpp CUDA on the same files.
t0=$SECONDS
B=/tmp/llama/build/bin
for m in q3 go gt; do
  $B/llama-bench -m /tmp/$m.gguf -ngl 99 -fa 1 -p 512 -n 16 -r 1 -dev CUDA0 > /dev/null 2>&1
  $B/llama-bench -m /tmp/$m.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -dev CUDA0 -o json > $OUT/llama-$m.json 2>>$OUT/llama.log
  $B/llama-batched-bench -m /tmp/$m.gguf -ngl 99 -fa on -c 16384 -b 2048 -ub 512 -npp 8 -ntg 128 -npl 1,8,16,32,64 -dev CUDA0 --output-format jsonl > $OUT/batched-$m.jsonl 2>>$OUT/llama.log
  python3 -c "
import json
b=[json.loads(l) for l in open('$OUT/batched-$m.jsonl') if l.strip()]
l=json.load(open('$OUT/llama-$m.json'))
print('llama $m', [(x['n_prompt'], x['n_gen'], round(x['avg_ts'])) for x in l], [(x['pl'], round(x['speed_tg'])) for x in b])"
  echo "llama $m at $((SECONDS-t0))"
done
