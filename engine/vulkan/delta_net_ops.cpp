#include "engine/vulkan/delta_net_ops.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <utility>

#include "engine/vulkan/device.h"
#include "engine/vulkan/op_checks.h"

namespace vkllm::vk::ops {

namespace {

const Pipeline& delta_net_pipeline(PipelineCache& pc, const char* shader, uint32_t buffers,
                                   uint32_t push_bytes, uint32_t workgroup) {
  return pc.get({.shader = shader,
                 .num_buffers = buffers,
                 .push_constant_bytes = push_bytes,
                 .spec = {workgroup}});
}

constexpr uint32_t kMaxDeltaNetHead = 256;  // model::kMaxDeltaNetHeadDim
constexpr uint32_t kMaxConvKernel = 8;
constexpr uint32_t kConvTokens = 16;    // ssm_conv.comp's TOKENS
constexpr uint32_t kMaxSsmState = 256;  // model::kMaxMambaStateSize
// shaders/delta_net_chunked.comp: MAXD, the columns a workgroup owns, its shared memory.
constexpr uint32_t kChunkedMaxHead = 128, kChunkedColumns = 32;
constexpr uint32_t kChunkedSharedBytes = 4 * (128 * 32 + 2 * 16 * 68 + 4 * 64);

}  // namespace

void ssm_conv(CommandRecorder& rec, PipelineCache& pc, const BatchInfo& b, const SsmConvArgs& a) {
  require_arg(a.channels > 0 && b.n_seqs > 0, "ssm_conv: empty input");
  require_arg(a.kernel >= 2 && a.kernel <= kMaxConvKernel, "ssm_conv: kernel length outside 2..8");
  require_arg(a.stride >= a.channels, "ssm_conv: rows narrower than the channels");
  struct {
    uint32_t channels, kernel, n_tokens, n_seqs, stride, x_off, out_off, slot_floats, layer_offset,
        has_bias, phase;
  } push{a.channels, a.kernel,      b.n_tokens,     b.n_seqs,         a.stride, a.x_off,
         a.out_off,  a.slot_floats, a.layer_offset, a.bias ? 1u : 0u, 0};
  constexpr uint32_t wg = 64;
  const Pipeline& p = delta_net_pipeline(pc, "ssm_conv", 5, sizeof(push), wg);
  // Without a bias the taps stand in for its binding (never read).
  const std::array<BufferSlice, 5> buffers{a.act, b.meta, a.taps, a.states,
                                           a.bias ? *a.bias : a.taps};
  const uint32_t blocks = div_up(std::max(1u, a.max_q_len ? a.max_q_len : b.n_tokens), kConvTokens);
  rec.dispatch(p, buffers, std::as_bytes(std::span(&push, 1)),
               {div_up(a.channels, wg), b.n_seqs, blocks});
  if (blocks > 1) {  // block 0 read the old state: the new one is written after it
    rec.barrier();
    push.phase = 1;
    rec.dispatch(p, buffers, std::as_bytes(std::span(&push, 1)),
                 {div_up(a.channels, wg), b.n_seqs, 1});
  }
}

bool delta_net_chunked(const DeviceCapabilities& caps, uint32_t head_dim, uint32_t chunk_min,
                       uint32_t q_len) {
  return chunk_min > 0 && q_len >= chunk_min && head_dim <= kChunkedMaxHead &&
         caps.max_shared_memory >= kChunkedSharedBytes;
}

void delta_net(CommandRecorder& rec, PipelineCache& pc, const BatchInfo& b, const DeltaNetArgs& a) {
  require_arg(a.n_v_heads > 0 && a.n_k_heads > 0 && b.n_seqs > 0, "delta_net: empty input");
  require_arg(a.n_v_heads % a.n_k_heads == 0, "delta_net: value heads not a multiple of keys");
  require_arg(a.head_dim > 0 && a.head_dim <= kMaxDeltaNetHead,
              "delta_net: head size " + std::to_string(a.head_dim) + " outside 1..256");
  const DeviceCapabilities& caps = pc.device().caps();
  const bool chunked = delta_net_chunked(caps, a.head_dim, a.chunk_min, a.max_q_len);
  struct {
    uint32_t n_tokens, n_seqs, n_k_heads, n_v_heads, head_dim, stride, qkv_off, alpha_off, beta_off,
        out_off, out_stride, slot_floats, state_offset;
    float eps;
    uint32_t grouped, chunk_min;
  } push{b.n_tokens,     b.n_seqs,  a.n_k_heads,         a.n_v_heads,
         a.head_dim,     a.stride,  a.qkv_off,           a.alpha_off,
         a.beta_off,     a.out_off, a.out_stride,        a.slot_floats,
         a.state_offset, a.eps,     a.grouped ? 1u : 0u, chunked ? a.chunk_min : ~0u};
  if (chunked) {
    const Pipeline& p = pc.get({.shader = "delta_net_chunked",
                                .num_buffers = 6,
                                .push_constant_bytes = sizeof(push),
                                .spec = {}});
    rec.dispatch(p, {a.act, b.meta, a.dt, a.a, a.states, a.out}, push,
                 {a.n_v_heads, b.n_seqs, div_up(a.head_dim, kChunkedColumns)});
    // One sequence, and it is the chunked kernel's: nothing is left for the recurrent one
    // (unless it keeps its states after each token: the recurrent kernel's then).
    if (b.n_seqs == 1 && !b.captures) return;
  }
  // One subgroup a state column, its rows in registers (shaders/delta_net.comp): the subgroup
  // size the rows are spread over must be the one the pipeline runs with, so it is required
  // where the device lets a pipeline choose.
  require_arg(caps.subgroup_arithmetic(),
              "delta_net: the device has no subgroup arithmetic (Gated DeltaNet needs it)");
  const uint32_t lanes = caps.subgroup_size;
  const uint32_t wg = std::max<uint32_t>(128, lanes);
  const uint32_t columns = wg / lanes;  // per workgroup
  const bool pin = caps.subgroup_size_control && lanes >= caps.min_subgroup_size &&
                   lanes <= caps.max_subgroup_size;
  const Pipeline& p = pc.get({.shader = "delta_net",
                              .num_buffers = 6,
                              .push_constant_bytes = sizeof(push),
                              .spec = {wg, div_up(a.head_dim, lanes)},
                              .required_subgroup_size = pin ? lanes : 0,
                              .full_subgroups = pin && caps.compute_full_subgroups});
  rec.dispatch(p, {a.act, b.meta, a.dt, a.a, a.states, a.out}, push,
               {a.n_v_heads, b.n_seqs, div_up(a.head_dim, columns)});
}

void gate_rows(CommandRecorder& rec, PipelineCache& pc, const GateRowsArgs& a) {
  require_arg(a.n > 0 && a.rows > 0, "gate_rows: empty input");
  require_arg(!a.per_row || a.g_stride > 0, "gate_rows: a per-row gate needs its stride");
  struct {
    uint32_t n, rows, x_off, x_stride, g_off, g_stride, act, g_step;
  } push{a.n,
         a.rows,
         a.x_off,
         a.x_stride ? a.x_stride : a.n,
         a.g_off,
         a.g_stride ? a.g_stride : a.n,
         a.relu   ? 2u
         : a.silu ? 1u
                  : 0u,
         a.per_row ? 0u : 1u};
  constexpr uint32_t wg = 64;
  const Pipeline& p = delta_net_pipeline(pc, "gate_rows", 2, sizeof(push), wg);
  rec.dispatch(p, {a.x, a.gate}, push,
               {div_up(a.n, wg), std::min(a.rows, 65535u), div_up(a.rows, 65535)});
}

namespace {

// ssm_scan_chunked.comp's shape: 256 threads, chunks of 16 tokens (on the H200 a Granite 4.0-H
// Micro layer's scan of 512 tokens took 0.211 ms, against 0.233 at 32 and 0.351 for the
// recurrence), and the most head rows a
// workgroup (16, else 8 or 4) with the widest state tiles (64 columns, else 32) that fit the
// device's shared memory (NVIDIA: 16 rows of 64-column tiles up to a state of 256), unless the
// tuning asks for other chunks or rows (KernelTuning::ssm_chunk_len, ssm_chunk_rows) that fit.
void ssm_scan_chunked(CommandRecorder& rec, PipelineCache& pc, const BatchInfo& b,
                      const SsmScanArgs& a, std::span<const std::byte> push) {
  constexpr uint32_t wg = 256;
  const KernelTuning& tuning = pc.device().tuning();
  const uint32_t q = tuning.ssm_chunk_len ? tuning.ssm_chunk_len : 16;
  const uint32_t limit = pc.device().caps().max_shared_memory;
  const uint32_t asked = tuning.ssm_chunk_rows;
  const std::pair<uint32_t, uint32_t> shapes[] = {{asked, 64}, {asked, 32}, {16, 64},
                                                  {8, 64},     {8, 32},     {4, 32}};
  uint32_t rows = 0, kt = 0, dsp = 0;
  for (const auto& [r, t] : shapes) {
    if (r == 0) continue;
    rows = r;
    kt = t;
    dsp = div_up(a.d_state, kt) * kt;
    const uint32_t floats = r * (dsp + 4) + 2 * q * (kt + 4) + q * (q + 1) + 2 * q * r + 3 * q;
    if (4 * floats <= limit) break;
  }
  const Pipeline& p = pc.get({.shader = "ssm_scan_chunked",
                              .num_buffers = 7,
                              .push_constant_bytes = static_cast<uint32_t>(push.size()),
                              .spec = {wg, q, rows, kt, dsp, wg}});
  const BufferSlice buffers[] = {a.act, b.meta, a.dt, a.a, a.d, a.states, a.out};
  rec.dispatch(p, buffers, push, {a.n_head, b.n_seqs, div_up(a.head_dim, rows)});
}

}  // namespace

void ssm_scan(CommandRecorder& rec, PipelineCache& pc, const BatchInfo& b, const SsmScanArgs& a) {
  require_arg(a.n_head > 0 && a.n_group > 0 && b.n_seqs > 0, "ssm_scan: empty input");
  require_arg(a.n_head % a.n_group == 0, "ssm_scan: heads not a multiple of the groups");
  require_arg(a.head_dim > 0 && a.d_state > 0 && a.d_state <= kMaxSsmState,
              "ssm_scan: state size " + std::to_string(a.d_state) + " outside 1..256");
  // The chunked kernel takes the long sequences, the recurrence the others (each kernel skips
  // the other's: they touch disjoint states and rows, so no barrier between them).
  const bool chunked = a.chunked_from > 0 && a.max_q_len >= a.chunked_from;
  struct {
    uint32_t n_tokens, n_seqs, n_head, head_dim, n_group, d_state, stride, xbc_off, dt_off, out_off,
        out_stride, slot_floats, state_offset, chunked_from;
  } push{b.n_tokens,     b.n_seqs,
         a.n_head,       a.head_dim,
         a.n_group,      a.d_state,
         a.stride,       a.xbc_off,
         a.dt_off,       a.out_off,
         a.out_stride,   a.slot_floats,
         a.state_offset, chunked ? a.chunked_from : ~0u};
  if (chunked) ssm_scan_chunked(rec, pc, b, a, std::as_bytes(std::span(&push, 1)));
  if (chunked && b.n_seqs == 1 && !b.captures) return;
  // As delta_net: one subgroup a head row, its state in registers spread over the lanes, at the
  // subgroup size the pipeline is pinned to where the device lets it choose.
  const DeviceCapabilities& caps = pc.device().caps();
  require_arg(caps.subgroup_arithmetic(),
              "ssm_scan: the device has no subgroup arithmetic (Mamba-2 needs it)");
  const uint32_t lanes = caps.subgroup_size;
  const uint32_t wg = std::max<uint32_t>(128, lanes);
  const uint32_t rows = wg / lanes;  // head rows per workgroup
  const bool pin = caps.subgroup_size_control && lanes >= caps.min_subgroup_size &&
                   lanes <= caps.max_subgroup_size;
  const Pipeline& p = pc.get({.shader = "ssm_scan",
                              .num_buffers = 7,
                              .push_constant_bytes = sizeof(push),
                              .spec = {wg, div_up(a.d_state, lanes)},
                              .required_subgroup_size = pin ? lanes : 0,
                              .full_subgroups = pin && caps.compute_full_subgroups});
  rec.dispatch(p, {a.act, b.meta, a.dt, a.a, a.d, a.states, a.out}, push,
               {a.n_head, b.n_seqs, div_up(a.head_dim, rows)});
}

}  // namespace vkllm::vk::ops
