#!/bin/bash
# Session 33 final lease, call 1: GPU tests of the merged work, the Mamba-2 scan sweep, vkllm on
# Qwen3.5-4B, LFM2-1.2B, Gemma 3n E4B, Gemma 4 E2B, Granite 4.0-H Micro while llama.cpp CUDA builds.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata; ln -sfn $PWD /work/main; cp -r .device/shared/testdata/vocab /work/shared/testdata/
( VKLLM_LLAMA_DEVS=CUDA0 nice -n 10 bash scripts/device-bench build-llamacpp > $OUT/llama-build.log 2>&1; echo "llama build rc=$? at $((SECONDS-t0))" >> $OUT/llama-build.log ) &
LB=$!
V=/tmp/p/bin/vkllm
F='Mamba2.*:*Families*:SmallKernels.*:ShortConv*:DeltaNet*:Hybrids*'
timeout 150 /tmp/p/bin/engine_tests --gtest_filter="$F" > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=" $OUT/gpu-tests.log | head -20
echo "tests at $((SECONDS-t0))"
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(sys.argv[2], 'prefill', round(d['prefill']['tok_per_s']), 'depth', d.get('depth'), 'decode', [(x['batch'], round(x['tok_per_s'])) for x in d['decode']])" "$@"; }
mk() { [ -f /tmp/$1.gguf ] || $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf > /dev/null 2>&1; }
mk q35 qwen35 qwen35-4b Q4_K_M
mk lf lfm2 lfm2-1.2b Q4_K_M
mk g3n gemma3n gemma3n-e4b Q4_K_M
mk g4 gemma4 gemma4-e2b Q4_K_M
mk gm granitehybrid granite-4.0-h-micro Q4_K_M
echo "made at $((SECONDS-t0))"
for t in "" "ssm_chunk_min_tokens=16777216" "ssm_chunk_rows=8" "ssm_chunk_rows=32" "ssm_chunk_len=16"; do
  $V bench --model /tmp/gm.gguf --prompt 512 --batch 1 --gen 8 --tune profile=1 ${t:+--tune $t} 2>&1 | grep -A1 "^prefill" | sed "s/^/gm [$t]: /"
done
for m in q35 lf g3n g4 gm; do
  timeout 100 $V bench --model /tmp/$m.gguf --batch 1,8,32,64 --prompt 512 --gen 64 --json > $OUT/vkllm-$m.json 2>>$OUT/bench.log && summ $OUT/vkllm-$m.json "vkllm $m"
done
for m in q35 lf; do
  timeout 100 $V bench --model /tmp/$m.gguf --batch 1 --prompt 512 --gen 32 --depth 16384 --json > $OUT/vkllm-$m-d16k.json 2>>$OUT/bench.log && summ $OUT/vkllm-$m-d16k.json "vkllm $m d16k"
done
echo "vkllm at $((SECONDS-t0))"
wait $LB; tail -1 $OUT/llama-build.log
echo "done at $((SECONDS-t0))"
