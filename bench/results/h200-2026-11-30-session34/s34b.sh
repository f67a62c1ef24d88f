#!/bin/bash
# Session 34, lease 2 (call B1): GPU tests of the merged vision work; models for the vision and
# MoE tables; vkllm's numbers (towers, image chats through the server, Qwen3-30B-A3B decode);
# llama.cpp CUDA + llama-mtmd-cli + llama-server built in the background for call B2.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
cp -r bench /tmp/p/
( export PATH=$PATH:/usr/local/cuda/bin
  if [ ! -x /tmp/llama/build/bin/llama-server ]; then
    rm -rf /tmp/llama && mkdir -p /tmp/llama/src/app && tar xJf .llamacpp/llama-src.tar.xz -C /tmp/llama/src
    tar xzf .llamacpp/ui-stub.tar.gz -C /tmp/llama/src
    cmake -S /tmp/llama/src -B /tmp/llama/build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
      -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
      -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > /tmp/llama/cmake.log 2>&1 || tail -20 /tmp/llama/cmake.log > /tmp/llama-cfg-fail
    nice -n 10 cmake --build /tmp/llama/build -j16 --target llama-bench llama-batched-bench ggml-cpu ggml-cuda llama-mtmd-cli llama-server > /tmp/llama/build.log 2>&1
  fi
  echo "llama build rc=$? at $((SECONDS-t0))" > /tmp/llama-done ) &
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
timeout 150 /tmp/p/bin/engine_tests --gtest_also_run_disabled_tests --gtest_filter='*gemma4_prompt*:*gemma4_tall*:Gemma4v*:Gemma4Vision*:PagedAttention.OpenSpans*:*Families*gemma4*:*qwen3vl*:*Qwen3Vl*:SmallKernels.Mrope*:VisionOnVulkan*:*ImagePromptVsLlamaCpp*:DISABLED_ByHand/*' > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=|tests ran" $OUT/gpu-tests.log | head -20
echo "tests at $((SECONDS-t0))"; cat /tmp/llama-cfg-fail 2>/dev/null
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(sys.argv[2], 'prefill', round(d['prefill']['tok_per_s']) if d.get('prefill') else None, 'decode', [(x['batch'], round(x['tok_per_s'])) for x in d['decode']])" "$@"; }
mk() { [ -f /tmp/$1.gguf ] || /usr/bin/time -f "make $1 %e s" $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf "${@:5}" 2>&1 | tail -1; }
mk g34 gemma3 gemma3-4b Q4_K_M --projector /tmp/g34p.gguf --projector-shape gemma3-4b
mk qvl qwen2vl qwen2.5-vl-7b Q4_K_M --projector /tmp/qvlp.gguf --projector-shape qwen25vl-7b
mk q3v qwen3vl qwen3-vl-8b Q4_K_M --projector /tmp/q3vp.gguf --projector-shape qwen3vl-8b
mk g4 gemma4 gemma4-e2b Q4_K_M --projector /tmp/g4p.gguf --projector-shape gemma4-e2b
python3 /tmp/p/bench/vision_bench.py --make-images /tmp/vimg
for m in g34 qvl q3v g4; do timeout 60 $V dev encode-image --projector /tmp/${m}p.gguf --image /tmp/vimg/img00.png --backend vulkan --repeat 5 2>&1 | grep -- "->"; done
echo "towers at $((SECONDS-t0))"
mkdir -p /tmp/store
OLLAMA_MODELS=/tmp/store OLLAMA_HOST=127.0.0.1:18080 $V serve > $OUT/serve.log 2>&1 &
SP=$!; sleep 4
for m in g34 qvl; do
  timeout 200 python3 /tmp/p/bench/vision_bench.py http://127.0.0.1:18080 $m /tmp/vimg $OUT/vision-vkllm-$m.json --create /tmp/$m.gguf /tmp/${m}p.gguf 2>&1 | tail -2
  echo "$m served at $((SECONDS-t0))"
done
kill $SP; wait $SP 2>/dev/null
mk q3 qwen3moe qwen3-30b-a3b Q4_K_M
timeout 90 $V bench --model /tmp/q3.gguf --batch 1,8 --prompt 512 --gen 64 --json > $OUT/q3.json 2>>$OUT/bench.log && summ $OUT/q3.json "q3"
echo "q3 at $((SECONDS-t0))"
while [ ! -f /tmp/llama-done ] && [ $((SECONDS-t0)) -lt 580 ]; do sleep 5; done
cat /tmp/llama-done 2>/dev/null; tail -3 /tmp/llama/build.log; ls /tmp/llama/build/bin | tr '\n' ' '
echo "done at $((SECONDS-t0))"
