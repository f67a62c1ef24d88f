#!/bin/bash
# Lease 1 (session 32): GPU tests of sessions 30-31 (MoE hybrids, Llama 4, Pixtral, split images,
# state slots), then per-phase GPU profiles: MoE 4-layer real-width models at prefill 512 and
# decode 1/8/32/64; Qwen3.5-4B and Gemma 3n E4B and LFM2 small batches.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata; ln -sfn $PWD /work/main; cp -r .device/shared/testdata/vocab /work/shared/testdata/
V=/tmp/p/bin/vkllm
F='*Families*:*llama4*:*Llama4*:PagedAttention.*:MoeRoute*:MoeGrouped*:MoeMatvec*:*Moe*:DeltaNet*:Cases/VisionVsLlamaCpp.*:Cases/VisionOnVulkan.*:PixtralOnVulkan.*:*Pixtral*:Rope2d*:Backends/ImagePromptVsLlamaCpp.*:SplitModel.*:StateSlots.*:*SharedExpert*:*InlineProjector*'
timeout 240 /tmp/p/bin/engine_tests --gtest_filter="$F" > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=|tests ran|NVIDIA|lavapipe" $OUT/gpu-tests.log | head -40
echo "tests at $((SECONDS-t0))"
mk() { [ -f /tmp/$1.gguf ] || $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf > /dev/null 2>&1 || echo "make $1 failed"; }
mk q3s qwen3moe qwen3-30b-a3b:4 Q4_K_M
mk gos gpt-oss gpt-oss-20b:4 MXFP4_MOE
mk q35 qwen35 qwen35-4b Q4_K_M
mk g3n gemma3n gemma3n-e4b Q4_K_M
mk lfm lfm2 lfm2-1.2b Q4_K_M
echo "models at $((SECONDS-t0))"
for m in q3s gos; do
  timeout 120 $V bench --model /tmp/$m.gguf --batch 1,8,32,64 --prompt 512 --gen 32 --tune profile=1 > $OUT/prof-$m.txt 2>&1
  echo "== $m"; grep -E "prefill|decode batch|gpu phases" $OUT/prof-$m.txt | cut -c1-900
done
for m in q35 g3n lfm; do
  timeout 120 $V bench --model /tmp/$m.gguf --batch 1,8 --prompt 512 --gen 32 --tune profile=1 > $OUT/prof-$m.txt 2>&1
  echo "== $m"; grep -E "prefill|decode batch|gpu phases" $OUT/prof-$m.txt | cut -c1-900
done
echo "done at $((SECONDS-t0))"
