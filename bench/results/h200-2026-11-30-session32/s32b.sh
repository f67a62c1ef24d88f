#!/bin/bash
# Lease 2 (session 32): MoE ways sweep on 4-layer real-width models (router on the matvec;
# grouped decode-kernel products).
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata; ln -sfn $PWD /work/main; cp -r .device/shared/testdata/vocab /work/shared/testdata/
V=/tmp/p/bin/vkllm
timeout 100 /tmp/p/bin/engine_tests --gtest_filter='MoeGrouped*:*MoeVsLlamaCpp*:MoeMatvec*' > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=|tensor-core|portable" $OUT/gpu-tests.log | sort | uniq -c | head
mk() { [ -f /tmp/$1.gguf ] || $V dev make-model --arch $2 --shape $3 --type $4 --vocab .device/vocab.gguf --seed 1 -o /tmp/$1.gguf > /dev/null 2>&1 || echo "make $1 failed"; }
mk q3s qwen3moe qwen3-30b-a3b:4 Q4_K_M
mk gos gpt-oss gpt-oss-20b:4 MXFP4_MOE
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(sys.argv[2], 'prefill', round(d['prefill']['tok_per_s']), 'decode', [(x['batch'], round(x['tok_per_s'])) for x in d['decode']])" "$@"; }
for m in q3s gos; do
  E=128; [ $m = gos ] && E=32
  timeout 100 $V bench --model /tmp/$m.gguf --batch 1,8,32,64 --prompt 512 --gen 32 --tune profile=1 > $OUT/prof-$m.txt 2>&1
  echo "== $m profile (new defaults)"; grep -E "prefill|decode batch|gpu phases" $OUT/prof-$m.txt | cut -c1-700
  for cfg in "new:" "allgroupmv:moe_grouped_min_pairs=16777216" "old:moe_matvec_groups_min_pairs=16777216,moe_grouped_min_pairs=$((E*2>128?E*2:128))" "half:moe_matvec_groups_min_pairs=$((E/2))" "gemm4:moe_grouped_min_pairs=$((E*4))" "gemm8:moe_grouped_min_pairs=$((E*8))" "gemm32:moe_grouped_min_pairs=$((E*32))"; do
    name=${cfg%%:*}; tune=${cfg#*:}
    args=(); [ -n "$tune" ] && args=(--tune "$tune")
    timeout 100 $V bench --model /tmp/$m.gguf --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --json "${args[@]}" > $OUT/$m-$name.json 2>>$OUT/bench.log && summ $OUT/$m-$name.json "$m $name"
  done
  echo "$m at $((SECONDS-t0))"
done
echo "done at $((SECONDS-t0))"
