#!/bin/bash
# Session 36, lease 6: speculation on a real-weight model on the GPU (tolstoy-mem): the greedy
# recital tests on the H200, and ngram / off through the server.
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack6.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
mkdir -p /work/shared/testdata/models && xz -dc .device/tm.gguf.xz > /work/shared/testdata/models/tolstoy-mem-q4_k_m.gguf; cp /work/shared/testdata/models/tolstoy-mem-q4_k_m.gguf /tmp/tm.gguf
ln -sfn $PWD /work/main 2>/dev/null
V=/tmp/p/bin/vkllm
timeout 120 /tmp/p/bin/scheduler_model_tests --gtest_filter='SpeculativeDecoding.GreedyRecital*:SpeculativeDecoding.EightConcurrent*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|OK \]" | head
P="It was in July, 1805, and the speaker was the well-known Anna Pavlovna"
timeout 100 python3 .device/spec_bench.py $V /tmp/tm.gguf --gen 128 --runs 3 --modes off,ngram --prompt "$P" 2>&1 | sed "s/^/tolstoy max7: /"
VKLLM_DRAFT_MAX=3 timeout 60 python3 .device/spec_bench.py $V /tmp/tm.gguf --gen 128 --runs 3 --modes off,ngram --prompt "$P" 2>&1 | grep ngram | sed "s/^/tolstoy max3: /"
