#!/usr/bin/env bash
# perf2 device call 3: adaptive fence polling (default) vs none vs before; attention q8 at depth.
set -u
D=.device/perf2
for f in .gl/*.deb; do dpkg -x $f / >/dev/null 2>&1; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LD_LIBRARY_PATH=$PWD/$D/lib
export VKLLM_PIPELINE_CACHE=/tmp/pcache; mkdir -p /tmp/pcache
V=$D/bin/vkllm
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for s in llama3.2-1b llama3.1-8b; do
  [ -f /tmp/$s.gguf ] || $V dev make-model --arch llama --shape $s --type Q4_K_M --vocab $D/vocab.gguf --seed 1 -o /tmp/$s.gguf 2>&1 | tail -1
done
OFF="VKLLM_FUSE_WEIGHTS=0 VKLLM_NORM_BLOCKS=0 VKLLM_ATTN_Q8=0 VKLLM_FENCE_SPIN_US=0"
b() { local label=$1 args=$2; shift 2
  for m in llama3.2-1b llama3.1-8b; do
    echo "== $m $label"
    env "$@" taskset -c 0-3 $V bench --model /tmp/$m.gguf $args 2>&1 | grep -E "prefill|decode|phases"
  done
}
N="--batch 1,8,64 --prompt 512 --gen 64"
b warm "$N" $OFF >/dev/null
b before "$N" $OFF
b after-nospin "$N" VKLLM_FENCE_SPIN_US=0
b after "$N" VKLLM_X=1
b before2 "$N" $OFF
b after2 "$N" VKLLM_X=1
Dp="--batch 1 --depth 2048 --prompt 64 --gen 64"
b depth2048-attnq8-off "$Dp" VKLLM_ATTN_Q8=0
b depth2048-after "$Dp" VKLLM_X=1
b depth2048-attnq8-off-2 "$Dp" VKLLM_ATTN_Q8=0
b depth2048-after-2 "$Dp" VKLLM_X=1
