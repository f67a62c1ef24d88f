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

// Runs `run(first, n_tokens, fresh)` over sequence s's tokens of the step: all at once, or, where
// the step keeps its states, a token at a time with `keep(after, t)` after each token t but the
// last (`after`: where the layer's state after it goes).
template <class Run, class Keep>
void over_tokens(const CpuStepStates& st, uint32_t s, uint32_t layer, Run&& run, Keep&& keep) {
  const uint32_t q_len = st.batch.seq_q_len(s);
  const bool fresh = st.batch.seq_kv_len(s) == q_len;  // starts at position 0
  if (st.batch.seq_capture(s) == 0) {
    run(0u, q_len, fresh);
    return;
  }
  for (uint32_t t = 0; t < q_len; ++t) {
    run(t, 1u, fresh && t == 0);
    if (t + 1 < q_len) keep(st.after_token(s, layer, t), t);
  }
}

// over_tokens for one head's state, `floats` contiguous floats at `head` into the layer's.
template <class Run>
void over_head_tokens(const CpuStepStates& st, uint32_t s, uint32_t layer, uint64_t head,
                      uint64_t floats, Run&& run) {
  float* state = st.of(s, layer) + head;
  over_tokens(
      st, s, layer, [&](uint32_t t, uint32_t n, bool fresh) { run(state, t, n, fresh); },
      [&](float* after, uint32_t) { std::memcpy(after + head, state, sizeof(float) * floats); });
}

// A conv state's channels [c0, c1): (kernel - 1) rows of `channels` floats.
void copy_conv_channels(const float* from, float* to, uint32_t rows, uint32_t channels, uint32_t c0,
                        uint32_t c1) {
  for (uint32_t k = 0; k < rows; ++k)
    std::memcpy(to + uint64_t(k) * channels + c0, from + uint64_t(k) * channels + c0,
                sizeof(float) * (c1 - c0));
}

}  // namespace

float* CpuStepStates::of(uint32_t s, uint32_t layer) const {
  if (!layout.has(layer)) throw std::logic_error("recurrent op on a layer without state");
  return states + batch.seq_state(s) * layout.slot_floats + layout.layer_offset[layer];
}

float* CpuStepStates::after_token(uint32_t s, uint32_t layer, uint32_t t) const {
  const uint32_t from = batch.seq_capture(s);
  if (from == 0 || !layout.has(layer)) return nullptr;
  const uint64_t slot = uint64_t(from) + t;
  if (slot < layout.n_slots || slot >= uint64_t(layout.n_slots) + layout.n_capture)
    throw std::out_of_range("a captured state outside the captured slots");
  return states + slot * layout.slot_floats + layout.layer_offset[layer];
}

void cpu_short_conv(const ShortConvSpec& c, cpu::SeqRows bcx, cpu::SeqRows out, const float* w,
                    const CpuStepStates& st, cpu::ThreadPool& pool) {
  const cpu::BatchView& b = st.batch;
  const uint32_t chunks = (c.n_embd + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  pool.parallel_for(b.n_seqs * chunks, [&](uint32_t u, unsigned) {
    const uint32_t s = u / chunks, c0 = (u % chunks) * kConvChannelsPerTask;
    const uint32_t c1 = std::min(c0 + kConvChannelsPerTask, c.n_embd);
    const uint32_t t0 = b.seq_q_start(s);
    float* state = st.of(s, c.layer);
    over_tokens(
        st, s, c.layer,
        [&](uint32_t t, uint32_t n, bool fresh) {
          cpu::ShortConvRows rows{bcx.row(t0 + t), static_cast<uint32_t>(bcx.stride),
                                  out.row(t0 + t), static_cast<uint32_t>(out.stride)};
          cpu::short_conv(rows, w, state, c.n_embd, c.l_cache, n, fresh, c0, c1);
        },
        [&](float* after, uint32_t) {
          copy_conv_channels(state, after, c.l_cache - 1, c.n_embd, c0, c1);
        });
  });
}

void cpu_ssm_conv(const SsmConvSpec& c, cpu::SeqRows x, cpu::SeqRows out, const float* w,
                  const float* bias, const CpuStepStates& st, cpu::ThreadPool& pool) {
  const cpu::BatchView& b = st.batch;
  const uint32_t chunks = (c.channels + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  pool.parallel_for(b.n_seqs * chunks, [&](uint32_t u, unsigned) {
    const uint32_t s = u / chunks, c0 = (u % chunks) * kConvChannelsPerTask;
    const uint32_t t0 = b.seq_q_start(s), c1 = std::min(c0 + kConvChannelsPerTask, c.channels);
    float* state = st.of(s, c.layer);
    over_tokens(
        st, s, c.layer,
        [&](uint32_t t, uint32_t n, bool fresh) {
          cpu::ssm_conv(from_token(x, t0 + t), from_token(out, t0 + t), w, state, c.channels,
                        c.kernel, n, fresh, c0, c1, bias);
        },
        [&](float* after, uint32_t) {
          copy_conv_channels(state, after, c.kernel - 1, c.channels, c0, c1);
        });
  });
}

void cpu_delta_net(const DeltaNetSpec& d, const CpuDeltaNetRows& rows, const float* dt,
                   const float* a, const CpuStepStates& st, cpu::ThreadPool& pool,
                   uint32_t chunk_min) {
  const cpu::BatchView& b = st.batch;
  pool.parallel_for(b.n_seqs * d.n_v_heads, [&](uint32_t u, unsigned) {
    const uint32_t s = u / d.n_v_heads, h = u % d.n_v_heads;
    const uint32_t t0 = b.seq_q_start(s);
    cpu::DeltaNetHeadArgs args;
    args.n_k_heads = d.n_k_heads;
    args.n_v_heads = d.n_v_heads;
    args.head_dim = d.head_dim;
    args.dt_bias = dt[h];
    args.a = a[h];
    args.eps = d.eps;
    args.grouped = d.grouped;
    const uint64_t floats = uint64_t(d.head_dim) * d.head_dim;
    over_head_tokens(st, s, d.layer, d.state_offset + h * floats, floats,
                     [&](float* state, uint32_t t, uint32_t n, bool fresh) {
                       args.qkv = from_token(rows.qkv, t0 + t);
                       args.alpha = from_token(rows.alpha, t0 + t);
                       args.beta = from_token(rows.beta, t0 + t);
                       args.out = from_token(rows.out, t0 + t);
                       if (chunk_min > 0 && n >= chunk_min)
                         cpu::delta_net_head_chunked(args, h, state, n, fresh);
                       else
                         cpu::delta_net_head(args, h, state, n, fresh);
                     });
  });
}

void cpu_mamba2_scan(const SsmScanSpec& c, const CpuMamba2Rows& rows, const float* dt,
                     const float* a, const float* d, const CpuStepStates& st, cpu::ThreadPool& pool,
                     uint32_t chunk_min_tokens) {
  const cpu::BatchView& b = st.batch;
  const uint64_t head_floats = uint64_t(c.head_dim) * c.d_state;
  pool.parallel_for(b.n_seqs * c.n_head, [&](uint32_t u, unsigned) {
    const uint32_t s = u / c.n_head, h = u % c.n_head;
    const uint32_t t0 = b.seq_q_start(s);
    cpu::Mamba2HeadArgs args;
    args.n_head = c.n_head;
    args.head_dim = c.head_dim;
    args.n_group = c.n_group;
    args.d_state = c.d_state;
    args.dt_bias = dt[h];
    args.a = a[h];
    args.d = d[h];
    args.chunk_min_tokens = chunk_min_tokens;
    over_head_tokens(st, s, c.layer, c.state_offset + h * head_floats, head_floats,
                     [&](float* state, uint32_t t, uint32_t n, bool fresh) {
                       args.xbc = from_token(rows.xbc, t0 + t);
                       args.dt = from_token(rows.dt, t0 + t);
                       args.out = from_token(rows.out, t0 + t);
                       cpu::mamba2_scan_head(args, h, state, n, fresh);
                     });
  });
}

void cpu_copy_states(std::span<const StateCopy> copies, float* states, float* checkpoints,
                     const kv::StateLayout& layout, uint32_t n_checkpoints) {
  const uint64_t n = layout.slot_floats;
  for (const StateCopy& c : copies) {
    check_state_copy(c, layout, n_checkpoints);
    float* live = states + c.slot * n;
    float* other = (c.from_capture() ? states : checkpoints) + c.other * n;
    std::memcpy(c.saves() ? other : live, c.saves() ? live : other, n * sizeof(float));
  }
}

}  // namespace vkllm::runtime
