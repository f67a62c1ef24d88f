// Qwen3.5's Gated DeltaNet kernels (shaders/ssm_conv.comp, delta_net.comp, gate_rows.comp; the
// CPU's engine/cpu/delta_net.h has the same semantics). Activations are passed as whole buffers
// with offsets and strides in floats, so their parts need no storage-buffer offset alignment.
#pragma once

#include <cstdint>

#include "engine/vulkan/buffer.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/ops.h"
#include "engine/vulkan/pipeline.h"

namespace vkllm::vk::ops {

// The causal conv + SiLU over `channels` of each sequence's tokens, with the carried state.
struct SsmConvArgs {
  BufferSlice act;     // holds x and out rows (row t at off + t * stride)
  BufferSlice taps;    // f32 [channels][kernel]
  BufferSlice states;  // every slot's states (kv::StateLayout)
  uint32_t channels = 0, kernel = 0, stride = 0, x_off = 0, out_off = 0;
  uint32_t slot_floats = 0, layer_offset = 0;
};
void ssm_conv(CommandRecorder& rec, PipelineCache& pipelines, const BatchInfo& batch,
              const SsmConvArgs& a);

// The gated delta rule (runtime::DeltaNetSpec), one subgroup per (value head, sequence, state
// column); needs subgroup arithmetic.
struct DeltaNetArgs {
  BufferSlice act;    // qkv, alpha and beta rows (row t at off + t * stride)
  BufferSlice dt, a;  // f32 per value head
  BufferSlice states;
  BufferSlice out;  // row t at out_off + t * out_stride
  uint32_t n_k_heads = 0, n_v_heads = 0, head_dim = 0;
  uint32_t stride = 0, qkv_off = 0, alpha_off = 0, beta_off = 0, out_off = 0, out_stride = 0;
  uint32_t slot_floats = 0, state_offset = 0;
  float eps = 1e-6f;
};
void delta_net(CommandRecorder& rec, PipelineCache& pipelines, const BatchInfo& batch,
               const DeltaNetArgs& a);

// x[r] *= act(gate[r]) over `rows` rows of n: sigmoid, or SiLU.
struct GateRowsArgs {
  BufferSlice x, gate;
  uint32_t n = 0, rows = 0;
  uint32_t x_off = 0, x_stride = 0, g_off = 0, g_stride = 0;
  bool silu = false;
};
void gate_rows(CommandRecorder& rec, PipelineCache& pipelines, const GateRowsArgs& a);

}  // namespace vkllm::vk::ops
