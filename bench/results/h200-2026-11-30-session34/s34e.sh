#!/bin/bash
t0=$SECONDS
B=/tmp/llama/build/bin
[ -x $B/llama-mtmd-cli ] || { echo "machine lost"; exit 1; }
tar xzf .llamacpp/ui-stub.tar.gz -C /tmp/llama/src
( export PATH=$PATH:/usr/local/cuda/bin; cmake --build /tmp/llama/build -j16 --target llama-server > /tmp/llama/build2.log 2>&1; echo "server build rc=$?" ) &
BP=$!
for m in g34 qvl q3v g4; do for r in 1 2 3; do
  grep -hiE "encoding done|prompt eval time|image.*in [0-9.]+ ms" /tmp/mtmd-$m-$r.log | head -4 | sed "s/^/$m $r: /"
done; done | tee $OUT/mtmd.txt
wait $BP; tail -2 /tmp/llama/build2.log
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for m in g34 qvl; do
  [ -x $B/llama-server ] || break
  $B/llama-server -m /tmp/$m.gguf --mmproj /tmp/${m}p.gguf -ngl 99 -fa on -c 32768 -np 16 --port 18081 -dev CUDA0 --chat-template chatml > $OUT/llama-server-$m.log 2>&1 &
  LP=$!
  for i in $(seq 90); do curl -sf http://127.0.0.1:18081/health >/dev/null && break; sleep 1; done
  timeout 200 python3 /tmp/p/bench/vision_bench.py http://127.0.0.1:18081 m /tmp/vimg $OUT/vision-llama-$m.json 2>&1 | tail -2
  kill $LP; wait $LP 2>/dev/null
  echo "$m server at $((SECONDS-t0))"
done
echo "done at $((SECONDS-t0))"
