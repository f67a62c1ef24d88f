#!/bin/bash
# Session 34, lease 1 (call A): GPU tests; MoE decode with q8 expert inputs (A/B moe_int8) on
# 4-layer and full Qwen3-30B-A3B / Granite 4.0-H Tiny shapes; vision models made and their towers
# timed; llama.cpp CUDA (+ llama-mtmd-cli, llama-server) built in the background for call B.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
cp -r bench /tmp/p/
( export PATH=$PATH:/usr/local/cuda/bin
  if [ ! -x /tmp/llama/build/bin/llama-server ]; then
    rm -rf /tmp/llama && mkdir -p /tmp/llama/src/app && tar xJf .llamacpp/llama-src.tar.xz -C /tmp/llama/src
    cmake -S /tmp/llama/src -B /tmp/llama/build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
      -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
      -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/llama/cmake.log 2>&1
    nice -n 10 cmake --build /tmp/llama/build -j16 --target llama-bench llama-batched-bench ggml-cpu ggml-cuda llama-mtmd-cli llama-server > /tmp/llama/build.log 2>&1
  fi
  echo "llama build rc=$? at $((SECONDS-t0))" > /tmp/llama-done ) &
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
timeout 200 /tmp/p/bin/engine_tests --gtest_filter='*MatvecInt8*:*MoeVsLlamaCpp*:MoeMatvec.*:MoeGrouped*:VisionOnVulkan*:PixtralOnVulkan*:Rope2dOnVulkan*:*Families*qwen3moe*:*Families*granite*' > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=|tests ran" $OUT/gpu-tests.log | head -20
echo "tests at $((SECONDS-t0))"
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(sys.argv[2], 'prefill', round(d['prefill']['tok_per_s']) if d.get('prefill') else None, 'decode', [(x['batch'], round(x['tok_per_s'])) for x in d['decode']])" "$@"; }
mk() { [ -f /tmp/$1.gguf ] || /usr/bin/time -f "make $1 %e s" $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf "${@:5}" 2>&1 | tail -1; }
mk q3s qwen3moe qwen3-30b-a3b:4 Q4_K_M
for r in 1 2; do for i in 1 0; do
  timeout 60 $V bench --model /tmp/q3s.gguf --batch 1,2,4,8 --prompt 64 --gen 64 --tune moe_int8=$i --json > $OUT/q3s-int8$i-r$r.json 2>>$OUT/bench.log && summ $OUT/q3s-int8$i-r$r.json "q3s int8=$i"
done; done
timeout 60 $V bench --model /tmp/q3s.gguf --batch 1 --prompt 16 --gen 64 --tune profile=1 > $OUT/prof-q3s.txt 2>&1; grep -A16 "decode batch" $OUT/prof-q3s.txt | head -18
echo "q3s at $((SECONDS-t0))"
mk q3 qwen3moe qwen3-30b-a3b Q4_K_M
for i in 1 0; do timeout 90 $V bench --model /tmp/q3.gguf --batch 1,8,16 --prompt 512 --gen 64 --tune moe_int8=$i --json > $OUT/q3-int8$i.json 2>>$OUT/bench.log && summ $OUT/q3-int8$i.json "q3 int8=$i"; done
echo "q3 at $((SECONDS-t0))"
mk g34 gemma3 gemma3-4b Q4_K_M --projector /tmp/g34p.gguf --projector-shape gemma3-4b
mk qvl qwen2vl qwen2.5-vl-7b Q4_K_M --projector /tmp/qvlp.gguf --projector-shape qwen25vl-7b
python3 /tmp/p/bench/vision_bench.py --make-images /tmp/vimg
for m in g34 qvl; do timeout 60 $V dev encode-image --projector /tmp/${m}p.gguf --image /tmp/vimg/img00.png --backend vulkan --repeat 5 2>&1 | tail -4; done
echo "vision at $((SECONDS-t0))"
while [ ! -f /tmp/llama-done ] && [ $((SECONDS-t0)) -lt 570 ]; do sleep 5; done
cat /tmp/llama-done 2>/dev/null; tail -3 /tmp/llama/build.log; ls /tmp/llama/build/bin | head -30
echo "done at $((SECONDS-t0))"
