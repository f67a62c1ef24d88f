#include "engine/runtime/cpu_recurrent.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "engine/cpu/mamba2_scan.h"
#include "engine/cpu/short_conv.h"

namespace vkllm::runtime {

namespace {

constexpr uint32_t kConvChannelsPerTask = 256;

cpu::SeqRows from_token(cpu::SeqRows r, uint32_t t0) {
  return {r.row(t0), r.stride};
}

}  // namespace

float* CpuStepStates::of(uint32_t s, uint32_t layer) const {
  if (!layout.has(layer)) throw std::logic_error("recurrent op on a layer without state");
  return states + batch.seq_state(s) * layout.slot_floats + layout.layer_offset[layer];
}

void cpu_short_conv(const ShortConvSpec& c, cpu::SeqRows bcx, cpu::SeqRows out, const float* w,
                    const CpuStepStates& st, cpu::ThreadPool& pool) {
  const cpu::BatchView& b = st.batch;
  const uint32_t chunks = (c.n_embd + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  pool.parallel_for(b.n_seqs * chunks, [&](uint32_t u, unsigned) {
    const uint32_t s = u / chunks, c0 = (u % chunks) * kConvChannelsPerTask;
    const uint32_t c1 = std::min(c0 + kConvChannelsPerTask, c.n_embd);
    const uint32_t q_len = b.seq_q_len(s), t0 = b.seq_q_start(s);
    cpu::ShortConvRows rows{bcx.row(t0), static_cast<uint32_t>(bcx.stride), out.row(t0),
                            static_cast<uint32_t>(out.stride)};
    const bool fresh = b.seq_kv_len(s) == q_len;  // starts at position 0
    cpu::short_conv(rows, w, st.of(s, c.layer), c.n_embd, c.l_cache, q_len, fresh, c0, c1);
  });
}

void cpu_ssm_conv(const SsmConvSpec& c, cpu::SeqRows x, cpu::SeqRows out, const float* w,
                  const float* bias, const CpuStepStates& st, cpu::ThreadPool& pool) {
  const cpu::BatchView& b = st.batch;
  const uint32_t chunks = (c.channels + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  pool.parallel_for(b.n_seqs * chunks, [&](uint32_t u, unsigned) {
    const uint32_t s = u / chunks, c0 = (u % chunks) * kConvChannelsPerTask;
    const uint32_t t0 = b.seq_q_start(s), q_len = b.seq_q_len(s);
    cpu::ssm_conv(from_token(x, t0), from_token(out, t0), w, st.of(s, c.layer), c.channels,
                  c.kernel, q_len, b.seq_kv_len(s) == q_len, c0,
                  std::min(c0 + kConvChannelsPerTask, c.channels), bias);
  });
}

void cpu_delta_net(const DeltaNetSpec& d, const CpuDeltaNetRows& rows, const float* dt,
                   const float* a, const CpuStepStates& st, cpu::ThreadPool& pool,
                   uint32_t chunk_min) {
  const cpu::BatchView& b = st.batch;
  pool.parallel_for(b.n_seqs * d.n_v_heads, [&](uint32_t u, unsigned) {
    const uint32_t s = u / d.n_v_heads, h = u % d.n_v_heads;
    const uint32_t t0 = b.seq_q_start(s), q_len = b.seq_q_len(s);
    cpu::DeltaNetHeadArgs args;
    args.qkv = from_token(rows.qkv, t0);
    args.alpha = from_token(rows.alpha, t0);
    args.beta = from_token(rows.beta, t0);
    args.out = from_token(rows.out, t0);
    args.n_k_heads = d.n_k_heads;
    args.n_v_heads = d.n_v_heads;
    args.head_dim = d.head_dim;
    args.dt_bias = dt[h];
    args.a = a[h];
    args.eps = d.eps;
    args.grouped = d.grouped;
    float* state = st.of(s, d.layer) + d.state_offset + uint64_t(h) * d.head_dim * d.head_dim;
    const bool fresh = b.seq_kv_len(s) == q_len;
    if (chunk_min > 0 && q_len >= chunk_min)
      cpu::delta_net_head_chunked(args, h, state, q_len, fresh);
    else
      cpu::delta_net_head(args, h, state, q_len, fresh);
  });
}

void cpu_mamba2_scan(const SsmScanSpec& c, const CpuMamba2Rows& rows, const float* dt,
                     const float* a, const float* d, const CpuStepStates& st, cpu::ThreadPool& pool,
                     uint32_t chunk_min_tokens) {
  const cpu::BatchView& b = st.batch;
  const uint64_t head_floats = uint64_t(c.head_dim) * c.d_state;
  pool.parallel_for(b.n_seqs * c.n_head, [&](uint32_t u, unsigned) {
    const uint32_t s = u / c.n_head, h = u % c.n_head;
    const uint32_t t0 = b.seq_q_start(s), q_len = b.seq_q_len(s);
    cpu::Mamba2HeadArgs args;
    args.xbc = from_token(rows.xbc, t0);
    args.dt = from_token(rows.dt, t0);
    args.out = from_token(rows.out, t0);
    args.n_head = c.n_head;
    args.head_dim = c.head_dim;
    args.n_group = c.n_group;
    args.d_state = c.d_state;
    args.dt_bias = dt[h];
    args.a = a[h];
    args.d = d[h];
    args.chunk_min_tokens = chunk_min_tokens;
    float* state = st.of(s, c.layer) + c.state_offset + h * head_floats;
    cpu::mamba2_scan_head(args, h, state, q_len, b.seq_kv_len(s) == q_len);
  });
}

void cpu_copy_states(std::span<const StateCopy> copies, float* states, float* checkpoints,
                     const kv::StateLayout& layout, uint32_t n_checkpoints) {
  const uint64_t n = layout.slot_floats;
  for (const StateCopy& c : copies) {
    if (c.slot >= layout.n_slots || c.checkpoint >= n_checkpoints)
      throw std::out_of_range("copy_states: no such state or checkpoint slot");
    float* live = states + c.slot * n;
    float* kept = checkpoints + c.checkpoint * n;
    std::memcpy(c.to_checkpoint ? kept : live, c.to_checkpoint ? live : kept, n * sizeof(float));
  }
}

}  // namespace vkllm::runtime
