// LFM2's gated short convolution (shaders/short_conv.comp and engine/cpu/short_conv.cpp) against
// a scalar reference of the whole sequences: two sequences fed in uneven chunks, mixed in steps
// with prefill and decode (one starting while the other continues), must give every token's
// output as one pass over each whole sequence would, and leave the last L-1 values of B * X as
// the state. A fresh sequence's slot holds garbage (a released sequence's state) that must not
// be read. Every other step also writes the output's q8 copy (the int8-dot matvec's input), which
// must be exactly what quantizing the output in its own pass gives.
#include <gtest/gtest.h>

#include <vector>

#include "engine/cpu/batch_view.h"
#include "engine/cpu/short_conv.h"
#include "engine/kv/kv_layout.h"
#include "engine/kv/state_layout.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

namespace ops = vk::ops;

struct Sequence {
  uint32_t slot;
  std::vector<float> bcx;  // every token's B|C|X row
  uint32_t n_tokens;
};

// out[t][c] = C[t][c] * sum_k w[c][k] * v[t - (L-1) + k][c], v = B * X, zero before the start.
std::vector<float> reference(const Sequence& s, const std::vector<float>& w, uint32_t E,
                             uint32_t L) {
  std::vector<float> out(size_t(s.n_tokens) * E);
  auto v = [&](int64_t t, uint32_t c) {
    if (t < 0) return 0.0f;
    const float* row = s.bcx.data() + size_t(t) * 3 * E;
    return row[c] * row[2 * E + c];
  };
  for (uint32_t t = 0; t < s.n_tokens; ++t)
    for (uint32_t c = 0; c < E; ++c) {
      float sum = 0;
      for (uint32_t k = 0; k < L; ++k) sum += v(int64_t(t) - (L - 1) + k, c) * w[c * L + k];
      out[size_t(t) * E + c] = s.bcx[size_t(t) * 3 * E + E + c] * sum;
    }
  return out;
}

TEST(ShortConv, ChunkedStepsEqualWholeSequencesOnBothBackends) {
  SeededRng rng;
  for (uint32_t L : {3u, 4u}) {
    const uint32_t E = 96;  // not a multiple of the workgroup: the edge is checked
    // Two recurrent layers of which the second is tested (a nonzero layer offset), 3 slots.
    const uint64_t floats = uint64_t(L - 1) * E;
    const uint64_t per_layer[] = {floats, 0, floats};
    const kv::StateLayout layout = kv::StateLayout::make(per_layer, 3);
    const uint32_t layer = 2;
    const std::vector<float> w = random_vector(rng, size_t(E) * L);
    std::vector<Sequence> seqs = {{2, {}, 40}, {0, {}, 23}};
    for (auto& s : seqs) s.bcx = random_vector(rng, size_t(s.n_tokens) * 3 * E, -2.f, 2.f);
    // Steps as (tokens of sequence 0, tokens of sequence 1); 0: not in the step.
    const std::vector<std::pair<uint32_t, uint32_t>> steps = {{17, 0}, {1, 1}, {1, 21}, {21, 1}};

    vk::Arena arena = make_arena();
    auto& pc = vk_context().pipelines();
    const std::vector<float> garbage(layout.floats(), 7.0f);
    vk::BufferSlice dstates = to_device(arena, garbage), dw = to_device(arena, w);
    std::vector<float> cpu_states = garbage;
    std::vector<std::vector<float>> gpu_out(2), cpu_out(2);
    uint32_t done[2] = {0, 0};
    const std::vector<uint32_t> table(4, 0);
    bool with_q8 = false;
    for (const auto& [n0, n1] : steps) {
      with_q8 = !with_q8;
      std::vector<kv::BatchSequence> batch;
      std::vector<uint32_t> which;
      std::vector<float> bcx;
      for (uint32_t i = 0; i < 2; ++i) {
        const uint32_t n = i == 0 ? n0 : n1;
        if (n == 0) continue;
        batch.push_back({table, n, done[i] + n, seqs[i].slot});
        which.push_back(i);
        bcx.insert(bcx.end(), seqs[i].bcx.begin() + size_t(done[i]) * 3 * E,
                   seqs[i].bcx.begin() + size_t(done[i] + n) * 3 * E);
      }
      const kv::BatchMeta meta = kv::build_batch_meta(batch);
      const uint32_t T = meta.n_tokens;
      vk::BufferSlice dbcx = to_device(arena, bcx), dmeta = to_device(arena, meta.words);
      vk::BufferSlice dout = device_filled<float>(arena, size_t(T) * E);
      ops::ShortConvArgs a{dbcx,
                           dw,
                           dstates,
                           dout,
                           E,
                           L,
                           0,
                           0,
                           static_cast<uint32_t>(layout.slot_floats),
                           static_cast<uint32_t>(layout.layer_offset[layer]),
                           {},
                           meta.max_q_len};
      const uint64_t q8_bytes = vk::q8_activation_bytes(E, T);
      vk::BufferSlice q8 = arena.allocate(q8_bytes), q8_want = arena.allocate(q8_bytes);
      if (with_q8) a.q8 = q8;
      run([&](vk::CommandRecorder& rec) {
        rec.fill(q8, 0xDEADBEEFu);  // every byte must be written
        rec.barrier();
        ops::short_conv(rec, pc, {dmeta, T, meta.n_seqs}, a);
      });
      const std::vector<float> got = from_device<float>(dout, size_t(T) * E);
      if (with_q8) {
        vk::MatmulKernels kernels(pc);
        run([&](vk::CommandRecorder& rec) {
          kernels.record_quantize_q8(rec, dout, E, T, 0, q8_want);
        });
        EXPECT_EQ(from_device<uint8_t>(q8, q8_bytes), from_device<uint8_t>(q8_want, q8_bytes))
            << "q8 copy, L " << L << ", " << T << " tokens";
      }

      std::vector<float> cpu(size_t(T) * E);
      const cpu::BatchView view{meta.words, T, meta.n_seqs};
      for (uint32_t s = 0; s < meta.n_seqs; ++s) {
        const uint32_t t0 = view.seq_q_start(s);
        const cpu::ShortConvRows rows{bcx.data() + size_t(t0) * 3 * E, 3 * E,
                                      cpu.data() + size_t(t0) * E, E};
        float* state =
            cpu_states.data() + view.seq_state(s) * layout.slot_floats + layout.layer_offset[layer];
        cpu::short_conv(rows, w.data(), state, E, L, view.seq_q_len(s),
                        view.seq_kv_len(s) == view.seq_q_len(s), 0, E);
      }
      for (size_t b = 0; b < batch.size(); ++b) {
        const uint32_t i = which[b], t0 = meta.words[2 * T + 2 * meta.n_seqs + b];
        gpu_out[i].insert(gpu_out[i].end(), got.begin() + size_t(t0) * E,
                          got.begin() + size_t(t0 + batch[b].q_len) * E);
        cpu_out[i].insert(cpu_out[i].end(), cpu.begin() + size_t(t0) * E,
                          cpu.begin() + size_t(t0 + batch[b].q_len) * E);
        done[i] += batch[b].q_len;
      }
    }
    const std::vector<float> states = from_device<float>(dstates, layout.floats());
    for (uint32_t i = 0; i < 2; ++i) {
      ASSERT_EQ(done[i], seqs[i].n_tokens);
      const std::vector<float> want = reference(seqs[i], w, E, L);
      EXPECT_TRUE(near_all(gpu_out[i], want, 1e-5, 1e-5)) << "Vulkan, L " << L << ", seq " << i;
      EXPECT_TRUE(near_all(cpu_out[i], want, 1e-5, 1e-5)) << "CPU, L " << L << ", seq " << i;
      // The state: the last L-1 values of B * X, oldest first.
      std::vector<float> want_state(floats);
      for (uint32_t k = 0; k < L - 1; ++k)
        for (uint32_t c = 0; c < E; ++c) {
          const float* row = seqs[i].bcx.data() + size_t(seqs[i].n_tokens - (L - 1) + k) * 3 * E;
          want_state[size_t(k) * E + c] = row[c] * row[2 * E + c];
        }
      const size_t at = seqs[i].slot * layout.slot_floats + layout.layer_offset[layer];
      EXPECT_TRUE(near_all(std::span(states).subspan(at, floats), want_state, 0, 0));
      EXPECT_TRUE(near_all(std::span(cpu_states).subspan(at, floats), want_state, 0, 0));
      // The other layer's state and the unused slot are untouched.
      const size_t other = seqs[i].slot * layout.slot_floats;
      EXPECT_EQ(states[other], 7.0f);
    }
    EXPECT_EQ(states[1 * layout.slot_floats + layout.layer_offset[layer]], 7.0f);
  }
}

}  // namespace
}  // namespace vkllm::test
