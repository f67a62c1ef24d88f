#!/bin/bash
# Lease 3 (session 32): why the grouped-matvec model tests fail on the GPU; matvec shape sweep
# on the MoE phases.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata; ln -sfn $PWD /work/main; cp -r .device/shared/testdata/vocab /work/shared/testdata/
V=/tmp/p/bin/vkllm
timeout 100 /tmp/p/bin/engine_tests --gtest_filter='GroupedMatvec/*' 2>&1 | grep -vE "^  (cooperative|limits|integer|subgroup)" | grep -E "Failure|Expected|Which|actual|cosine|greedy|OK|FAILED|error|  " | head -40
mk() { [ -f /tmp/$1.gguf ] || $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf > /dev/null 2>&1 || echo "make $1 failed"; }
mk q3s qwen3moe qwen3-30b-a3b:4 Q4_K_M
mk gos gpt-oss gpt-oss-20b:4 MXFP4_MOE
for m in q3s gos; do
  for rt in 4:128 8:128 16:128 4:64 8:64 16:64 8:32 16:32 2:64; do
    r=${rt%%:*}; th=${rt#*:}
    timeout 60 $V bench --model /tmp/$m.gguf --batch 1,32 --prompt 16 --gen 16 --tune profile=1 --tune matvec_rows=$r --tune matvec_threads=$th > /tmp/o.txt 2>&1
    echo "$m rows=$r threads=$th: $(grep -E "decode batch" /tmp/o.txt | awk '{print $3, $4}' | tr '\n' ' ') | $(grep "gpu phases" /tmp/o.txt | tail -2 | grep -oE "moe_gate_up [0-9.]+|moe [0-9.]+" | tr '\n' ' ')"
  done
done
echo "done at $((SECONDS-t0))"
