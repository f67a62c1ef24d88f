#!/bin/bash
# Session 34, lease 4: gpt-oss-20b with MXFP4 experts on int8 dot products (int8_dot auto / off:
# off also takes the attention products off int8), GPU tests of the MXFP4 int8 kernels.
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
V=/tmp/p/bin/vkllm
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
timeout 100 /tmp/p/bin/engine_tests --gtest_filter='*MatvecInt8*:*MoeVsLlamaCpp*gpt*:Int8Experts*' > $OUT/gpu-tests.log 2>&1; echo "rc=$?" >> $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rc=" $OUT/gpu-tests.log | head
summ() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(sys.argv[2], 'prefill', round(d['prefill']['tok_per_s']) if d.get('prefill') else None, 'decode', [(x['batch'], round(x['tok_per_s'])) for x in d['decode']])" "$@"; }
[ -f /tmp/go.gguf ] || /usr/bin/time -f "make go %e s" $V dev make-model --arch gpt-oss --shape gpt-oss-20b --type MXFP4_MOE --vocab .device/vocab.gguf --seed 1 -o /tmp/go.gguf 2>&1 | tail -1
for r in 1 2; do for i in auto off; do
  timeout 80 $V bench --model /tmp/go.gguf --batch 1,4,8 --prompt 512 --gen 64 --tune int8_dot=$i --json > $OUT/go-$i-r$r.json 2>>$OUT/bench.log && summ $OUT/go-$i-r$r.json "go int8_dot=$i"
done; done
echo "done at $((SECONDS-t0))"
