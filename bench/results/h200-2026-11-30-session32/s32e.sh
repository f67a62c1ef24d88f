#!/bin/bash
# Lease 5 (session 32): MoE grouped GEMMs on the workgroup-scope tensor cores (cm2): kernel and
# reference tests, prefill profile and ways on the 4-layer models.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata; ln -sfn $PWD /work/main; cp -r .device/shared/testdata/vocab /work/shared/testdata/
V=/tmp/p/bin/vkllm
timeout 120 /tmp/p/bin/engine_tests --gtest_filter='MoeGrouped*:*MoeVsLlamaCpp*:MoeMatvec*:*Families*qwen3moe*:*Families*gpt*:*Families*qwen35moe*:*Families*granite*' > $OUT/t.log 2>&1
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|tensor-core|portable|got |Which is|cosine" $OUT/t.log | sort | uniq -c | head -40
mk() { [ -f /tmp/$1.gguf ] || $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf > /dev/null 2>&1 || echo "make $1 failed"; }
mk q3s qwen3moe qwen3-30b-a3b:4 Q4_K_M
mk gos gpt-oss gpt-oss-20b:4 MXFP4_MOE
for m in q3s gos; do
  E=128; [ $m = gos ] && E=32
  for cfg in "new:" "gemm2:moe_grouped_min_pairs=$((E*2))" "gemm4:moe_grouped_min_pairs=$((E*4))" "gemm8:moe_grouped_min_pairs=$((E*8))"; do
    name=${cfg%%:*}; tune=${cfg#*:}
    args=(); [ -n "$tune" ] && args=(--tune "$tune")
    timeout 60 $V bench --model /tmp/$m.gguf --batch 1,8,16,32,64 --prompt 512 --gen 32 --tune profile=1 "${args[@]}" > /tmp/o.txt 2>&1 || tail -3 /tmp/o.txt
    echo "$m $name: $(grep -E "^prefill|decode batch" /tmp/o.txt | awk '{print $(NF>8?3:6), $4}' | tr '\n' ' ')"
    echo "   prefill: $(grep "gpu phases" /tmp/o.txt | head -1 | grep -oE "moe_gate_up [0-9.]+|moe [0-9.]+" | tr '\n' ' ') b32,b64: $(grep "gpu phases" /tmp/o.txt | tail -2 | grep -oE "moe_gate_up [0-9.]+|moe [0-9.]+" | tr '\n' ' ')"
  done
done
echo "done at $((SECONDS-t0))"
