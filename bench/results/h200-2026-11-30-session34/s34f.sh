#!/bin/bash
# Session 34, lease 3: heads of 72 on the tensor-core attention (padded to 80): GPU tests, the
# Gemma 3 and Qwen3-VL towers and Gemma 3's image chats through the server.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
cp -r bench /tmp/p/
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
timeout 150 /tmp/p/bin/engine_tests --gtest_filter='PagedAttention.*:*VisionOnVulkan*:*ImagePromptVsLlamaCpp*Vulkan*:*AttentionCoop*' > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=|tests ran" $OUT/gpu-tests.log | head -20
echo "tests at $((SECONDS-t0))"
mk() { [ -f /tmp/$1.gguf ] || /usr/bin/time -f "make $1 %e s" $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf "${@:5}" 2>&1 | tail -1; }
mk g34 gemma3 gemma3-4b Q4_K_M --projector /tmp/g34p.gguf --projector-shape gemma3-4b
mk q3v qwen3vl qwen3-vl-8b Q4_K_M --projector /tmp/q3vp.gguf --projector-shape qwen3vl-8b
python3 /tmp/p/bench/vision_bench.py --make-images /tmp/vimg
for m in g34 q3v; do timeout 60 $V dev encode-image --projector /tmp/${m}p.gguf --image /tmp/vimg/img00.png --backend vulkan --repeat 5 2>&1 | grep -- "->"; done
echo "towers at $((SECONDS-t0))"
mkdir -p /tmp/store
OLLAMA_MODELS=/tmp/store OLLAMA_HOST=127.0.0.1:18080 $V serve > $OUT/serve.log 2>&1 &
SP=$!; sleep 4
for m in g34 q3v; do
  timeout 200 python3 /tmp/p/bench/vision_bench.py http://127.0.0.1:18080 $m /tmp/vimg $OUT/vision-vkllm-$m.json --create /tmp/$m.gguf /tmp/${m}p.gguf 2>&1 | tail -2
  echo "$m served at $((SECONDS-t0))"
done
kill $SP; wait $SP 2>/dev/null
echo "done at $((SECONDS-t0))"
