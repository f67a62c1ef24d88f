#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata && cp -r .device/shared/testdata/vocab /work/shared/testdata/ 2>/dev/null; ln -sfn $PWD /work/main 2>/dev/null
T=/tmp/p/bin/engine_tests
timeout 60 $T --gtest_filter='EmbeddingWarmUp.*' --gtest_repeat=3 2>&1 | grep -E "^\[  (PASSED|FAILED) |Which is" | head
timeout 420 $T --gtest_filter='-DISABLED*:*ByHand*' > $OUT/all.log 2>&1; echo "rc=$?" >> $OUT/all.log
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|rc=" $OUT/all.log | head -20
