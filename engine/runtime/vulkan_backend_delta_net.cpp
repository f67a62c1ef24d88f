// VulkanBackend's Qwen3.5 and Mamba-2 operations (engine/vulkan/delta_net_ops.h): the DeltaNet
// and Mamba-2 conv, recurrence and scan over the recurrent-state buffer, and the gates. The
// activations are bound whole with the rows' offsets passed to the kernels. Also the copies between
// the recurrent states and their checkpoints (every hybrid's).
#include <memory>
#include <stdexcept>

#include "engine/runtime/vulkan_backend_impl.h"
#include "engine/vulkan/delta_net_ops.h"

namespace vkllm::runtime::detail {

using model::Weight;

void VulkanBackend::ssm_conv(const SsmConvSpec& c) {
  const kv::StateLayout& st = mem_.state_layout;
  if (!st.has(c.layer)) throw std::logic_error("ssm_conv: layer without recurrent state");
  if (c.x.act != c.out.act || c.x.stride != c.out.stride || c.x.stride == 0)
    throw std::logic_error("ssm_conv: x and out must be strided rows of one activation");
  vk::ops::SsmConvArgs a;
  a.act = mem_.buf(c.x.act);
  a.taps = get({Weight::SsmConv1d, c.layer}).data;
  a.states = mem_.states.slice();
  a.channels = c.channels;
  a.kernel = c.kernel;
  a.stride = c.x.stride;
  a.x_off = c.x.off;
  a.out_off = c.out.off;
  a.slot_floats = static_cast<uint32_t>(st.slot_floats);
  a.layer_offset = static_cast<uint32_t>(st.layer_offset[c.layer]);
  if (c.bias) a.bias = get({Weight::SsmConv1dBias, c.layer}).data;
  a.max_q_len = max_q_len_;
  vk::ops::ssm_conv(*rec_, ctx_.pipelines(), batch_, a);
  wrote(c.out.act);
}

void VulkanBackend::delta_net(const DeltaNetSpec& d) {
  const kv::StateLayout& st = mem_.state_layout;
  if (!st.has(d.layer)) throw std::logic_error("delta_net: layer without recurrent state");
  if (d.qkv.act != d.alpha.act || d.qkv.act != d.beta.act || d.qkv.stride != d.alpha.stride ||
      d.qkv.stride != d.beta.stride || d.qkv.stride == 0)
    throw std::logic_error("delta_net: qkv, alpha and beta must be strided rows of one activation");
  vk::ops::DeltaNetArgs a;
  a.act = mem_.buf(d.qkv.act);
  a.dt = get({Weight::SsmDt, d.layer}).data;
  a.a = get({Weight::SsmA, d.layer}).data;
  a.states = mem_.states.slice();
  a.out = mem_.buf(d.out.act);
  a.n_k_heads = d.n_k_heads;
  a.n_v_heads = d.n_v_heads;
  a.head_dim = d.head_dim;
  a.stride = d.qkv.stride;
  a.qkv_off = d.qkv.off;
  a.alpha_off = d.alpha.off;
  a.beta_off = d.beta.off;
  a.out_off = d.out.off;
  a.out_stride = d.out.stride ? d.out.stride : d.n_v_heads * d.head_dim;
  a.slot_floats = static_cast<uint32_t>(st.slot_floats);
  a.state_offset = static_cast<uint32_t>(st.layer_offset[d.layer] + d.state_offset);
  a.eps = d.eps;
  a.grouped = d.grouped;
  a.chunk_min = delta_net_chunk_min_for(opt_, false);
  a.max_q_len = max_q_len_;
  vk::ops::delta_net(*rec_, ctx_.pipelines(), batch_, a);
  wrote(d.out.act);
}

void VulkanBackend::ssm_scan(const SsmScanSpec& c) {
  const kv::StateLayout& st = mem_.state_layout;
  if (!st.has(c.layer)) throw std::logic_error("ssm_scan: layer without recurrent state");
  if (c.xbc.act != c.dt.act || c.xbc.stride != c.dt.stride || c.xbc.stride == 0)
    throw std::logic_error("ssm_scan: xbc and dt must be strided rows of one activation");
  vk::ops::SsmScanArgs a;
  a.act = mem_.buf(c.xbc.act);
  a.dt = get({Weight::SsmDt, c.layer}).data;
  a.a = get({Weight::SsmA, c.layer}).data;
  a.d = get({Weight::SsmD, c.layer}).data;
  a.states = mem_.states.slice();
  a.out = mem_.buf(c.out.act);
  a.n_head = c.n_head;
  a.head_dim = c.head_dim;
  a.n_group = c.n_group;
  a.d_state = c.d_state;
  a.stride = c.xbc.stride;
  a.xbc_off = c.xbc.off;
  a.dt_off = c.dt.off;
  a.out_off = c.out.off;
  a.out_stride = c.out.stride ? c.out.stride : c.n_head * c.head_dim;
  a.slot_floats = static_cast<uint32_t>(st.slot_floats);
  a.state_offset = static_cast<uint32_t>(st.layer_offset[c.layer] + c.state_offset);
  a.chunked_from =
      opt_.ssm_chunk_min_tokens ? opt_.ssm_chunk_min_tokens : vk::ops::kSsmChunkMinTokens;
  a.max_q_len = max_q_len_;
  vk::ops::ssm_scan(*rec_, ctx_.pipelines(), batch_, a);
  wrote(c.out.act);
}

void VulkanBackend::copy_states(std::span<const StateCopy> copies) {
  const kv::StateLayout& st = mem_.state_layout;
  if (st.empty() || copies.empty()) return;  // a stage of a split model without recurrent layers
  const uint64_t bytes = 4 * st.slot_floats;
  if (!state_rec_) state_rec_ = std::make_unique<vk::CommandRecorder>(ctx_.device(), 0);
  vk::CommandRecorder& r = *state_rec_;
  r.begin();
  // The barriers order the copies after the last step's writes and before the next step's
  // reads: their scopes reach the submissions before and after this one on the queue.
  r.barrier();
  for (const StateCopy& c : copies) {
    check_state_copy(c, st, mem_.n_checkpoints);
    const vk::BufferSlice live = mem_.states.slice(c.slot * bytes, bytes);
    const vk::BufferSlice other =
        (c.from_capture() ? mem_.states : mem_.checkpoints).slice(c.other * bytes, bytes);
    r.copy(c.saves() ? live : other, c.saves() ? other : live);
  }
  r.barrier();
  r.submit_and_wait();
}

void VulkanBackend::gate_rows(GateAct act, Rows x, Rows gate, uint32_t n, uint32_t rows,
                              bool per_row) {
  vk::ops::GateRowsArgs a;
  a.x = mem_.buf(x.act);
  a.gate = mem_.buf(gate.act);
  a.n = n;
  a.rows = rows;
  a.x_off = x.off;
  a.x_stride = x.stride;
  a.g_off = gate.off;
  a.g_stride = per_row && gate.stride == 0 ? 1 : gate.stride;
  a.per_row = per_row;
  a.silu = act == GateAct::Silu;
  a.relu = act == GateAct::Relu;
  vk::ops::gate_rows(*rec_, ctx_.pipelines(), a);
  wrote(x.act);
}

void VulkanBackend::gated_rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                                   Rows gate, uint32_t group, std::span<const WeightRef> feeds) {
  const uint32_t x_stride = x.stride ? x.stride : n, width = n * group;
  const bool dense_y = y.stride == 0 || y.stride == n;
  if (!dense_y || group == 0 || rows % group != 0 || x_stride % 4 != 0 ||
      !vk::ops::rms_norm_fuses_gate(n, gate.off, gate.stride ? gate.stride : width, ctx_.caps())) {
    StepBackend::gated_rms_norm(x, w, y, n, rows, gate, group, feeds);
    return;
  }
  const uint32_t tokens = rows / group;
  // The q8 copy is of the y rows as the next product reads them: a token's heads side by side.
  const bool q8 = y.off == 0 && wants_q8(feeds, width, tokens);
  vk::ops::RmsNormArgs a = norm_rows(x, y, n, rows);
  a.weight = get(w).data;
  a.q8 = q8 ? mem_.xq : vk::BufferSlice{};
  a.gate = mem_.buf(gate.act);
  a.gate_off = gate.off;
  a.gate_stride = gate.stride ? gate.stride : width;
  a.gate_group = group;
  vk::ops::rms_norm(*rec_, ctx_.pipelines(), a);
  wrote(y.act);
  if (q8) q8_of_ = Q8Copy{y.act, tokens, mem_.xq};
}

}  // namespace vkllm::runtime::detail
