// Qwen3.5's Gated DeltaNet and Mamba-2's kernels (shaders/ssm_conv.comp, delta_net.comp,
// gate_rows.comp, ssm_scan.comp; the CPU's engine/cpu/delta_net.h and mamba2_scan.h have the same
// semantics). Activations are passed as whole buffers
// with offsets and strides in floats, so their parts need no storage-buffer offset alignment.
#pragma once

#include <cstdint>
#include <optional>

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
  std::optional<BufferSlice> bias;  // f32 [channels] (Mamba-2's), added before the SiLU
  // The step's longest sequence (kv::BatchMeta::max_q_len; 0: n_tokens): its tokens are split
  // into blocks of 16 walked in parallel, the state then rewritten by a second pass.
  uint32_t max_q_len = 0;
};
void ssm_conv(CommandRecorder& rec, PipelineCache& pipelines, const BatchInfo& batch,
              const SsmConvArgs& a);

// The gated delta rule (runtime::DeltaNetSpec): sequences of at least chunk_min tokens in its
// chunked parallel form (shaders/delta_net_chunked.comp: a workgroup per value head, sequence and
// block of 32 state columns; heads of up to 128), the others in the recurrent form (one subgroup
// per value head, sequence and state column; needs subgroup arithmetic). Both are recorded when
// the step may hold both kinds; they touch disjoint outputs and states.
struct DeltaNetArgs {
  BufferSlice act;    // qkv, alpha and beta rows (row t at off + t * stride)
  BufferSlice dt, a;  // f32 per value head
  BufferSlice states;
  BufferSlice out;  // row t at out_off + t * out_stride
  uint32_t n_k_heads = 0, n_v_heads = 0, head_dim = 0;
  uint32_t stride = 0, qkv_off = 0, alpha_off = 0, beta_off = 0, out_off = 0, out_stride = 0;
  uint32_t slot_floats = 0, state_offset = 0;
  float eps = 1e-6f;
  bool grouped = false;  // runtime::DeltaNetSpec::grouped (Qwen3-Next's head layout)
  // Sequences of at least this many tokens take the chunked form (0: none do); max_q_len: the
  // step's longest sequence (kv::BatchMeta::max_q_len), so a step without one records no chunked
  // dispatch.
  uint32_t chunk_min = 0, max_q_len = 0;
};
// Whether delta_net runs a sequence of `q_len` tokens in the chunked form on this device.
bool delta_net_chunked(const DeviceCapabilities& caps, uint32_t head_dim, uint32_t chunk_min,
                       uint32_t q_len);
void delta_net(CommandRecorder& rec, PipelineCache& pipelines, const BatchInfo& batch,
               const DeltaNetArgs& a);

// x[r] *= act(gate[r]) over `rows` rows of n: sigmoid, SiLU, or ReLU (x may be gate); per_row:
// gate row r is one value, x[r] *= act(g[r]) (g_stride must then be given).
struct GateRowsArgs {
  BufferSlice x, gate;
  uint32_t n = 0, rows = 0;
  uint32_t x_off = 0, x_stride = 0, g_off = 0, g_stride = 0;
  bool silu = false;
  bool relu = false;
  bool per_row = false;
};

// Mamba-2's selective scan (runtime::SsmScanSpec): the recurrence (ssm_scan.comp, one subgroup
// per (head, sequence, head row), the row's d_state values spread over its lanes; needs subgroup
// arithmetic) and, for the sequences bringing at least chunked_from tokens (0: none), the chunked
// form (ssm_scan_chunked.comp, one workgroup per block of head rows; max_q_len says whether any
// sequence of the step does).
constexpr uint32_t kSsmChunkMinTokens = 32;  // RunnerOptions::ssm_chunk_min_tokens' default
struct SsmScanArgs {
  BufferSlice act;       // xbc and dt rows (row t at off + t * stride)
  BufferSlice dt, a, d;  // f32 per head
  BufferSlice states;
  BufferSlice out;  // row t at out_off + t * out_stride
  uint32_t n_head = 0, head_dim = 0, n_group = 0, d_state = 0;
  uint32_t stride = 0, xbc_off = 0, dt_off = 0, out_off = 0, out_stride = 0;
  uint32_t slot_floats = 0, state_offset = 0;
  uint32_t chunked_from = 0, max_q_len = 0;
};
void ssm_scan(CommandRecorder& rec, PipelineCache& pipelines, const BatchInfo& batch,
              const SsmScanArgs& a);
void gate_rows(CommandRecorder& rec, PipelineCache& pipelines, const GateRowsArgs& a);

}  // namespace vkllm::vk::ops
