#!/bin/bash
# Session 36, lease 4: tiled attention by grid shape; drafted tokens off the tensor cores.
for f in .gl/*.deb; do dpkg -x $f /; done >/dev/null 2>&1; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/p; mkdir -p /tmp/p && tar xJf .device/pack.tar.xz -C /tmp/p
export LD_LIBRARY_PATH=/tmp/p/lib
B=/tmp/p/bin/bench_attention
# Keep the GPU busy a moment first (clocks), then measure.
timeout 30 $B --benchmark_filter='long' --benchmark_min_time=0.01 >/dev/null 2>&1
timeout 100 $B --benchmark_filter='seqs|verify' 2>&1 | grep -E "BM_" | awk '{print "attn: "$1" "$2" "$(NF-1)" "$NF}'
