#!/bin/bash
# Final lease, call 1 (session 32): GPU tests of the merged work; real-size MoE (Qwen3-30B-A3B
# Q4_K_M, gpt-oss-20b MXFP4) and Granite 4.0-H Tiny on vkllm while llama.cpp CUDA builds.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata; ln -sfn $PWD /work/main; cp -r .device/shared/testdata/vocab /work/shared/testdata/
( VKLLM_LLAMA_DEVS=CUDA0 nice -n 10 bash scripts/device-bench build-llamacpp > $OUT/llama-build.log 2>&1; echo "llama build rc=$? at $((SECONDS-t0))" >> $OUT/llama-build.log ) &
LB=$!
V=/tmp/p/bin/vkllm
F='MoeGrouped*:*MoeVsLlamaCpp*:MoeMatvec*:MoeRoute*:*Families*nemotron*:*Families*qwen2vl*:*Families*mistral3*:OllamaLayout.*:InlineProjector.*:PixtralOnVulkan.*:*ImagePromptVsLlamaCpp*mistral3*:*VisionOnVulkan*mistral3*'
timeout 150 /tmp/p/bin/engine_tests --gtest_filter="$F" > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=" $OUT/gpu-tests.log | head -20
echo "tests at $((SECONDS-t0))"
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(sys.argv[2], 'prefill', round(d['prefill']['tok_per_s']), 'decode', [(x['batch'], round(x['tok_per_s'])) for x in d['decode']])" "$@"; }
mk() { [ -f /tmp/$1.gguf ] || /usr/bin/time -f "make $1 %e s" $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf 2>&1 | tail -1; }
mk q3 qwen3moe qwen3-30b-a3b Q4_K_M
mk go gpt-oss gpt-oss-20b MXFP4_MOE
mk gt granitehybrid granite-4.0-h-tiny Q4_K_M
for m in q3 go gt; do
  timeout 150 $V bench --model /tmp/$m.gguf --batch 1,8,16,32,64 --prompt 512 --gen 64 --json > $OUT/vkllm-$m.json 2>>$OUT/bench.log && summ $OUT/vkllm-$m.json "vkllm $m"
  echo "$m at $((SECONDS-t0))"
done
wait $LB; tail -1 $OUT/llama-build.log
echo "done at $((SECONDS-t0))"
