#!/bin/bash
# Session 34, lease 2 (call B2): llama.cpp CUDA on the same files: Qwen3-30B-A3B decode, the vision
# towers and a first image chat (llama-mtmd-cli), image chats through llama-server.
t0=$SECONDS
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/llama/build/bin
[ -x $B/llama-bench ] || { echo "no llama build"; tail -20 /tmp/llama/build.log; exit 1; }
$B/llama-bench -m /tmp/q3.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -dev CUDA0 -o json > $OUT/llama-q3.json 2>>$OUT/llama.log
grep '"avg_ts"' $OUT/llama-q3.json
$B/llama-batched-bench -m /tmp/q3.gguf -ngl 99 -fa on -c 16384 -b 2048 -ub 512 -npp 8 -ntg 128 -npl 1,8 -dev CUDA0 --output-format jsonl > $OUT/batched-q3.jsonl 2>>$OUT/llama.log
cut -c1-250 $OUT/batched-q3.jsonl
echo "q3 at $((SECONDS-t0))"
for m in g34 qvl q3v g4; do
  for r in 1 2; do
    timeout 60 $B/llama-mtmd-cli -m /tmp/$m.gguf --mmproj /tmp/${m}p.gguf --image /tmp/vimg/img0$r.png -p "Describe this picture." -n 4 -ngl 99 --temp 0 -dev CUDA0 > $OUT/mtmd-$m-$r.log 2>&1
    grep -iE "encoded in|decoded .*in|prompt eval time|load time" $OUT/mtmd-$m-$r.log | head -5
  done
  echo "$m mtmd at $((SECONDS-t0))"
done
for m in g34 qvl; do
  [ -x $B/llama-server ] || break; $B/llama-server -m /tmp/$m.gguf --mmproj /tmp/${m}p.gguf -ngl 99 -fa on -c 32768 -np 16 --port 18081 -dev CUDA0 > $OUT/llama-server-$m.log 2>&1 &
  LP=$!
  for i in $(seq 60); do curl -sf http://127.0.0.1:18081/health >/dev/null && break; sleep 1; done
  timeout 200 python3 /tmp/p/bench/vision_bench.py http://127.0.0.1:18081 m /tmp/vimg $OUT/vision-llama-$m.json 2>&1 | tail -2
  kill $LP; wait $LP 2>/dev/null
  echo "$m server at $((SECONDS-t0))"
done
echo "done at $((SECONDS-t0))"
