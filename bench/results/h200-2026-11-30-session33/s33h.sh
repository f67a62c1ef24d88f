#!/bin/bash
# Session 33 final lease, call 2: llama.cpp CUDA on the same files.
t0=$SECONDS
B=/tmp/llama/build/bin
MODELS='q35 lf'
for m in $MODELS; do
  $B/llama-bench -m /tmp/$m.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 2 -dev CUDA0 -o json > $OUT/llama-$m.json 2>>$OUT/llama.log
  $B/llama-batched-bench -m /tmp/$m.gguf -ngl 99 -fa on -c 16384 -b 2048 -ub 512 -npp 8 -ntg 128 -npl 1,8,32,64 -dev CUDA0 --output-format jsonl > $OUT/batched-$m.jsonl 2>>$OUT/llama.log
  python3 -c "
import json
b=[json.loads(l) for l in open('$OUT/batched-$m.jsonl') if l.strip()]
l=json.load(open('$OUT/llama-$m.json'))
print('llama $m', [(x['n_prompt'], x['n_gen'], round(x['avg_ts'])) for x in l], [(x['pl'], round(x['speed_tg'])) for x in b])"
  echo "llama $m at $((SECONDS-t0))"
done
for m in q35 lf; do
  $B/llama-bench -m /tmp/$m.gguf -ngl 99 -fa 1 -p 512 -n 32 -d 16384 -r 1 -dev CUDA0 -o json > $OUT/llama-$m-d16k.json 2>>$OUT/llama.log
  python3 -c "
import json
l=json.load(open('$OUT/llama-$m-d16k.json'))
print('llama $m d16k', [(x['n_prompt'], x['n_gen'], x.get('n_depth'), round(x['avg_ts'])) for x in l])"
done
MODELS='gm g3n g4'
for m in $MODELS; do
  $B/llama-bench -m /tmp/$m.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 2 -dev CUDA0 -o json > $OUT/llama-$m.json 2>>$OUT/llama.log
  $B/llama-batched-bench -m /tmp/$m.gguf -ngl 99 -fa on -c 16384 -b 2048 -ub 512 -npp 8 -ntg 128 -npl 1,8,32,64 -dev CUDA0 --output-format jsonl > $OUT/batched-$m.jsonl 2>>$OUT/llama.log
  python3 -c "
import json
b=[json.loads(l) for l in open('$OUT/batched-$m.jsonl') if l.strip()]
l=json.load(open('$OUT/llama-$m.json'))
print('llama $m', [(x['n_prompt'], x['n_gen'], round(x['avg_ts'])) for x in l], [(x['pl'], round(x['speed_tg'])) for x in b])"
  echo "llama $m at $((SECONDS-t0))"
done
echo "done at $((SECONDS-t0))"
