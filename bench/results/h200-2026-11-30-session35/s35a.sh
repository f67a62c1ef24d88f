#!/bin/bash
# Session 35, lease 1: where Gemma 4 E2B's image prompt turns NaN on the H200.
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
T=/tmp/p/bin/engine_tests
timeout 120 $T --gtest_also_run_disabled_tests --gtest_filter='PagedAttention.*:DISABLED_ByHand/*' > $OUT/probe.log 2>&1; echo "rc=$?" >> $OUT/probe.log
grep -E "^\[  +(OK|FAILED) |rc=|cosine|nan|NaN" $OUT/probe.log | head -60
timeout 200 $T --gtest_filter='*gemma4*:*Gemma4*' > $OUT/g4.log 2>&1; echo "rc=$?" >> $OUT/g4.log
grep -E "^\[  +(FAILED|PASSED) |rc=" $OUT/g4.log | head -30
