// vkllm's Vulkan runtime in one include. What each piece offers:
//
//   Device            device.h       instance + physical device choice (VKLLM_DEVICE), one compute
//                                    queue, DeviceCapabilities (features/limits, logged once)
//   Buffer            buffer.h       owned VkBuffer + memory (DeviceLocal / Upload / Readback)
//   BufferSlice       buffer.h       {buffer, offset, size, mapped}: what dispatches bind
//   Arena             arena.h        big blocks sub-allocated with alignment; mark/reset
//   upload/download   transfer.h     blocking host<->device copies (memcpy when mapped)
//   StagingUploader   transfer.h     streaming chunked uploads through a staging ring
//   PipelineCache     pipeline.h     Pipeline per {embedded shader, spec constants, push size},
//                                    parallel build(), on-disk VkPipelineCache
//   CommandRecorder   command_recorder.h  dispatch/barrier/copy/fill/timestamp, submit + wait
//   Context           here           a Device with its PipelineCache
//
// Kernels (each records one dispatch; the caller places barriers):
//   ops.h        get_rows (embedding, every GGUF weight type), rms_norm (+fused residual add),
//                layer_norm (weight + bias), add/mul/scale/softcap/gelu/tanh, add_bias, glu
//                (SiLU/GELU), rope, write_kv (RoPE + paged K write, V write), pool_rows
//                (mean/first/last per sequence), argmax
//   attention.h  paged attention, prefill + decode, GQA, softcap, sliding window, split-K,
//                causal or not (encoders)
//   engine/kv/kv_layout.h  the paged KV layout and the per-step batch metadata they read
//
// Typical use:
//   vk::Context ctx;                                    // picks and logs the device
//   vk::Arena act(ctx.device(), "activations", 64 << 20);
//   vk::BufferSlice x = act.allocate(n * sizeof(float));
//   const vk::Pipeline& fill = ctx.pipelines().get({.shader = "fill", .num_buffers = 1,
//                                                   .push_constant_bytes = 8, .spec = {64}});
//   vk::CommandRecorder rec(ctx.device());
//   rec.begin();
//   struct { uint32_t n; float value; } push{n, 1.5f};
//   rec.dispatch(fill, {x}, push, {vk::div_up(n, 64)});
//   rec.barrier();                                     // only where a later dispatch reads x
//   rec.submit_and_wait();
//   auto host = vk::download<float>(ctx.device(), x, n);
#pragma once

#include "engine/vulkan/arena.h"
#include "engine/vulkan/buffer.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/device.h"
#include "engine/vulkan/pipeline.h"
#include "engine/vulkan/transfer.h"
#include "engine/vulkan/vk_error.h"

namespace vkllm::vk {

class Context {
 public:
  explicit Context(const DeviceOptions& options = {},
                   const PipelineCacheOptions& pipeline_cache = {})
      : device_(options), pipelines_(device_, pipeline_cache) {}
  Device& device() { return device_; }
  PipelineCache& pipelines() { return pipelines_; }
  const DeviceCapabilities& caps() const { return device_.caps(); }

 private:
  Device device_;  // declared first: destroyed after the pipelines built on it
  PipelineCache pipelines_;
};

}  // namespace vkllm::vk
