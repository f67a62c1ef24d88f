// Qwen3.5's Gated DeltaNet kernels (shaders/ssm_conv.comp + delta_net.comp and
// engine/cpu/delta_net.cpp) against a scalar double-precision reference of whole sequences: two
// sequences fed in uneven chunks, mixed in steps with prefill and decode (one starting while the
// other continues), must give every token's output as one pass over each whole sequence would,
// and leave the conv's last inputs and the delta-rule matrices as the state. A fresh sequence's
// slot holds garbage (a released sequence's state) that must not be read. The activations' parts
// sit at offsets no storage-buffer alignment allows (the kernels take offsets in floats).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/batch_view.h"
#include "engine/cpu/delta_net.h"
#include "engine/kv/kv_layout.h"
#include "engine/kv/state_layout.h"
#include "engine/vulkan/delta_net_ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

namespace ops = vk::ops;

// Sizes: 2 query/key heads, 4 value heads of 40 (not a power of two), a conv of 4 taps.
constexpr uint32_t kNk = 2, kNv = 4, kD = 40, kK = 4;
constexpr uint32_t kKeyDim = kNk * kD, kC = 2 * kKeyDim + kNv * kD, kVd = kNv * kD;
// One token's activation row: x (the conv's input), alpha, beta, the conv's output.
constexpr uint32_t kAlpha = kC + 3, kBeta = kAlpha + kNv + 1, kConv = kBeta + kNv + 5;
constexpr uint32_t kW = kConv + kC + 2;
constexpr float kEps = 1e-6f;

struct Sequence {
  uint32_t slot;
  uint32_t n_tokens;
  std::vector<float> rows;  // every token's row (x, alpha, beta; the conv part unused)
};

struct Reference {
  std::vector<double> out;    // n_tokens x kVd
  std::vector<double> conv;   // the last kK - 1 inputs, (kK - 1) x kC
  std::vector<double> state;  // per value head, S[i][j] at (h * kD + j) * kD + i
};

double softplus(double x) {
  return x > 20 ? x : std::log1p(std::exp(x));
}

Reference reference(const Sequence& s, const std::vector<float>& w, const std::vector<float>& dt,
                    const std::vector<float>& a) {
  Reference r;
  const uint32_t T = s.n_tokens;
  auto x = [&](int64_t t, uint32_t c) { return t < 0 ? 0.0 : double(s.rows[t * kW + c]); };
  std::vector<double> conv(size_t(T) * kC);
  for (uint32_t t = 0; t < T; ++t)
    for (uint32_t c = 0; c < kC; ++c) {
      double sum = 0;
      for (uint32_t k = 0; k < kK; ++k) sum += x(int64_t(t) - (kK - 1) + k, c) * w[c * kK + k];
      conv[size_t(t) * kC + c] = sum / (1 + std::exp(-sum));
    }
  for (uint32_t k = 0; k < kK - 1; ++k)
    for (uint32_t c = 0; c < kC; ++c) r.conv.push_back(x(int64_t(T) - (kK - 1) + k, c));
  r.out.assign(size_t(T) * kVd, 0);
  r.state.assign(size_t(kNv) * kD * kD, 0);
  for (uint32_t h = 0; h < kNv; ++h) {
    std::vector<double> S(size_t(kD) * kD, 0);  // S[i][j] at i * kD + j
    const uint32_t kh = h % kNk;
    for (uint32_t t = 0; t < T; ++t) {
      const double* row = conv.data() + size_t(t) * kC;
      std::vector<double> q(row + kh * kD, row + (kh + 1) * kD);
      std::vector<double> k(row + kKeyDim + kh * kD, row + kKeyDim + (kh + 1) * kD);
      const double* v = row + 2 * kKeyDim + h * kD;
      for (auto* vec : {&q, &k}) {
        double sq = 0;
        for (double e : *vec) sq += e * e;
        for (double& e : *vec) e /= std::sqrt(sq + kEps);
      }
      const double g = softplus(s.rows[t * kW + kAlpha + h] + dt[h]) * a[h];
      const double beta = 1 / (1 + std::exp(-double(s.rows[t * kW + kBeta + h])));
      for (double& e : S) e *= std::exp(g);
      for (uint32_t j = 0; j < kD; ++j) {
        double sk = 0;
        for (uint32_t i = 0; i < kD; ++i) sk += S[i * kD + j] * k[i];
        const double delta = beta * (v[j] - sk);
        for (uint32_t i = 0; i < kD; ++i) S[i * kD + j] += k[i] * delta;
      }
      for (uint32_t j = 0; j < kD; ++j) {
        double o = 0;
        for (uint32_t i = 0; i < kD; ++i) o += S[i * kD + j] * q[i];
        r.out[size_t(t) * kVd + h * kD + j] = o / std::sqrt(double(kD));
      }
    }
    for (uint32_t j = 0; j < kD; ++j)
      for (uint32_t i = 0; i < kD; ++i) r.state[(h * kD + j) * kD + i] = S[i * kD + j];
  }
  return r;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

TEST(DeltaNet, ChunkedStepsEqualWholeSequencesOnBothBackends) {
  SeededRng rng;
  // Two recurrent layers of which the second is tested (a nonzero layer offset), 3 slots.
  const uint64_t conv_floats = uint64_t(kK - 1) * kC;
  const uint64_t layer_floats = conv_floats + uint64_t(kNv) * kD * kD;
  const uint64_t per_layer[] = {layer_floats, 0, layer_floats};
  const kv::StateLayout layout = kv::StateLayout::make(per_layer, 3);
  const uint32_t layer = 2;
  const std::vector<float> w = random_vector(rng, size_t(kC) * kK, -0.6f, 0.6f);
  const std::vector<float> dt = random_vector(rng, kNv, 0.5f, 1.5f);
  const std::vector<float> a = random_vector(rng, kNv, -0.3f, -0.05f);
  std::vector<Sequence> seqs = {{2, 37, {}}, {0, 23, {}}};
  for (auto& s : seqs) s.rows = random_vector(rng, size_t(s.n_tokens) * kW, -2.f, 2.f);
  // Steps as (tokens of sequence 0, tokens of sequence 1); 0: not in the step.
  const std::vector<std::pair<uint32_t, uint32_t>> steps = {{14, 0}, {1, 1}, {1, 21}, {21, 1}};

  vk::Arena arena = make_arena();
  auto& pc = vk_context().pipelines();
  const std::vector<float> garbage(layout.floats(), 7.0f);
  vk::BufferSlice dstates = to_device(arena, garbage), dw = to_device(arena, w);
  vk::BufferSlice ddt = to_device(arena, dt), da = to_device(arena, a);
  std::vector<float> cpu_states = garbage;
  std::vector<std::vector<float>> gpu_out(2), cpu_out(2);
  uint32_t done[2] = {0, 0};
  const std::vector<uint32_t> table(4, 0);
  const uint32_t slot_floats = static_cast<uint32_t>(layout.slot_floats);
  const uint32_t layer_offset = static_cast<uint32_t>(layout.layer_offset[layer]);
  for (const auto& [n0, n1] : steps) {
    std::vector<kv::BatchSequence> batch;
    std::vector<uint32_t> which;
    std::vector<float> act;
    for (uint32_t i = 0; i < 2; ++i) {
      const uint32_t n = i == 0 ? n0 : n1;
      if (n == 0) continue;
      batch.push_back({table, n, done[i] + n, seqs[i].slot});
      which.push_back(i);
      act.insert(act.end(), seqs[i].rows.begin() + size_t(done[i]) * kW,
                 seqs[i].rows.begin() + size_t(done[i] + n) * kW);
    }
    const kv::BatchMeta meta = kv::build_batch_meta(batch);
    const uint32_t T = meta.n_tokens;
    vk::BufferSlice dact = to_device(arena, act), dmeta = to_device(arena, meta.words);
    vk::BufferSlice dout = device_filled<float>(arena, size_t(T) * (kVd + 8));
    const ops::BatchInfo bi{dmeta, T, meta.n_seqs};
    const ops::SsmConvArgs c{dact, dw,    dstates,     kC,           kK, kW,
                             0,    kConv, slot_floats, layer_offset, {}, meta.max_q_len};
    ops::DeltaNetArgs d;
    d.act = dact;
    d.dt = ddt;
    d.a = da;
    d.states = dstates;
    d.out = dout;
    d.n_k_heads = kNk;
    d.n_v_heads = kNv;
    d.head_dim = kD;
    d.stride = kW;
    d.qkv_off = kConv;
    d.alpha_off = kAlpha;
    d.beta_off = kBeta;
    d.out_off = 3;  // out rows of kVd + 8 from float 3 on
    d.out_stride = kVd + 8;
    d.slot_floats = slot_floats;
    d.state_offset = static_cast<uint32_t>(layer_offset + conv_floats);
    d.eps = kEps;
    run([&](vk::CommandRecorder& rec) {
      ops::ssm_conv(rec, pc, bi, c);
      rec.barrier();
      ops::delta_net(rec, pc, bi, d);
    });
    const std::vector<float> got_rows = from_device<float>(dout, size_t(T) * (kVd + 8));

    std::vector<float> cpu_act = act, cpu(size_t(T) * kVd);
    const cpu::BatchView view{meta.words, T, meta.n_seqs};
    for (uint32_t s = 0; s < meta.n_seqs; ++s) {
      const uint32_t t0 = view.seq_q_start(s), n = view.seq_q_len(s);
      const bool fresh = view.seq_kv_len(s) == n;
      float* base = cpu_states.data() + view.seq_state(s) * layout.slot_floats + layer_offset;
      float* rows = cpu_act.data() + size_t(t0) * kW;
      cpu::ssm_conv({rows, kW}, {rows + kConv, kW}, w.data(), base, kC, kK, n, fresh, 0, kC);
      cpu::DeltaNetHeadArgs h{{rows + kConv, kW},
                              {rows + kAlpha, kW},
                              {rows + kBeta, kW},
                              {cpu.data() + size_t(t0) * kVd, kVd},
                              kNk,
                              kNv,
                              kD,
                              0.f,
                              0.f,
                              kEps};
      for (uint32_t v = 0; v < kNv; ++v) {
        h.dt_bias = dt[v];
        h.a = a[v];
        cpu::delta_net_head(h, v, base + conv_floats + size_t(v) * kD * kD, n, fresh);
      }
    }
    for (size_t b = 0; b < batch.size(); ++b) {
      const uint32_t i = which[b], t0 = view.seq_q_start(static_cast<uint32_t>(b));
      for (uint32_t t = t0; t < t0 + batch[b].q_len; ++t) {
        const auto gpu_row = got_rows.begin() + 3 + size_t(t) * (kVd + 8);
        gpu_out[i].insert(gpu_out[i].end(), gpu_row, gpu_row + kVd);
      }
      cpu_out[i].insert(cpu_out[i].end(), cpu.begin() + size_t(t0) * kVd,
                        cpu.begin() + size_t(t0 + batch[b].q_len) * kVd);
      done[i] += batch[b].q_len;
    }
  }
  const std::vector<float> states = from_device<float>(dstates, layout.floats());
  for (uint32_t i = 0; i < 2; ++i) {
    ASSERT_EQ(done[i], seqs[i].n_tokens);
    const Reference want = reference(seqs[i], w, dt, a);
    const std::vector<float> out = to_float(want.out);
    EXPECT_TRUE(near_all(gpu_out[i], out, 2e-5, 1e-3)) << "Vulkan, seq " << i;
    EXPECT_TRUE(near_all(cpu_out[i], out, 2e-5, 1e-3)) << "CPU, seq " << i;
    const size_t at = seqs[i].slot * layout.slot_floats + layer_offset;
    const std::vector<float> conv = to_float(want.conv), state = to_float(want.state);
    EXPECT_TRUE(near_all(std::span(states).subspan(at, conv_floats), conv, 0, 0));
    EXPECT_TRUE(near_all(std::span(cpu_states).subspan(at, conv_floats), conv, 0, 0));
    EXPECT_TRUE(
        near_all(std::span(states).subspan(at + conv_floats, state.size()), state, 2e-5, 1e-3));
    EXPECT_TRUE(
        near_all(std::span(cpu_states).subspan(at + conv_floats, state.size()), state, 2e-5, 1e-3));
    // The other layer's state is untouched.
    EXPECT_EQ(states[seqs[i].slot * layout.slot_floats], 7.0f);
  }
  EXPECT_EQ(states[1 * layout.slot_floats + layer_offset], 7.0f);  // the unused slot
}

// The chunked form (cpu::delta_net_head_chunked, shaders/delta_net_chunked.comp) against the
// recurrent one (cpu::delta_net_head, checked against double precision above) on fresh random
// inputs: one step holding a sequence of two chunks and a partial one from a carried state, one of
// exactly a chunk from position 0 (its slot holds garbage), and a short and a one-token sequence
// below the threshold (recurrent on Vulkan, both forms on the CPU), with Qwen3.5's tiled heads at
// the real head size and Qwen3-Next's grouped heads at an odd one. Outputs and states must agree
// within 1e-4 of their largest magnitude (float rounding only).
TEST(DeltaNet, ChunkedEqualsRecurrenceOnBothBackends) {
  struct Case {
    uint32_t nk, nv, d;
    bool grouped;
  };
  const uint32_t chunk_min = 16;
  struct Seq {
    uint32_t slot, q_len, before;  // before: tokens already in the state (0: fresh)
  };
  const std::vector<Seq> seqs = {{1, 150, 40}, {3, 64, 0}, {0, 7, 9}, {2, 1, 30}};
  for (const Case& k : {Case{2, 4, 128, false}, Case{2, 4, 40, true}}) {
    SCOPED_TRACE(k.grouped ? "grouped, head 40" : "tiled, head 128");
    SeededRng rng;
    const uint32_t key_dim = k.nk * k.d, qkv = 2 * key_dim + k.nv * k.d, vd = k.nv * k.d;
    const uint32_t alpha = qkv + 1, beta = alpha + k.nv, width = beta + k.nv + 3;
    const uint64_t head_floats = uint64_t(k.d) * k.d, slot_floats = k.nv * head_floats + 5;
    uint32_t T = 0;
    for (const Seq& s : seqs) T += s.q_len;
    // Activations like the conv's output (SiLU of a small sum), gates as the model's.
    std::vector<float> act = random_vector(rng, size_t(T) * width, -0.4f, 1.2f);
    for (uint32_t t = 0; t < T; ++t) {
      for (uint32_t h = 0; h < k.nv; ++h) act[t * width + alpha + h] = rng.uniform(-3.f, 1.f);
      for (uint32_t h = 0; h < k.nv; ++h) act[t * width + beta + h] = rng.uniform(-2.f, 2.f);
    }
    const std::vector<float> dt = random_vector(rng, k.nv, 0.5f, 1.5f);
    const std::vector<float> a = random_vector(rng, k.nv, -0.6f, -0.05f);
    std::vector<float> states(4 * slot_floats, 7.0f);  // garbage where a sequence is fresh
    for (const Seq& s : seqs)
      if (s.before > 0) {
        const std::vector<float> st = random_vector(rng, k.nv * head_floats, -0.5f, 0.5f);
        std::copy(st.begin(), st.end(), states.begin() + s.slot * slot_floats + 5);
      }
    std::vector<kv::BatchSequence> batch;
    const std::vector<uint32_t> table(16, 0);
    for (const Seq& s : seqs) batch.push_back({table, s.q_len, s.before + s.q_len, s.slot});
    const kv::BatchMeta meta = kv::build_batch_meta(batch);

    // The CPU: every sequence recurrent (the reference), and chunked.
    auto cpu_run = [&](bool chunked) {
      std::vector<float> st = states, out(size_t(T) * vd, 0.f);
      const cpu::BatchView view{meta.words, T, meta.n_seqs};
      for (uint32_t i = 0; i < meta.n_seqs; ++i) {
        const uint32_t t0 = view.seq_q_start(i), n = view.seq_q_len(i);
        float* rows = act.data() + size_t(t0) * width;
        cpu::DeltaNetHeadArgs args{{rows, width},
                                   {rows + alpha, width},
                                   {rows + beta, width},
                                   {out.data() + size_t(t0) * vd, vd},
                                   k.nk,
                                   k.nv,
                                   k.d,
                                   0.f,
                                   0.f,
                                   kEps,
                                   k.grouped};
        for (uint32_t h = 0; h < k.nv; ++h) {
          args.dt_bias = dt[h];
          args.a = a[h];
          float* head = st.data() + view.seq_state(i) * slot_floats + 5 + h * head_floats;
          const bool fresh = view.seq_kv_len(i) == n;
          if (chunked)
            cpu::delta_net_head_chunked(args, h, head, n, fresh);
          else
            cpu::delta_net_head(args, h, head, n, fresh);
        }
      }
      return std::pair{out, st};
    };
    const auto [want_out, want_states] = cpu_run(false);
    const auto [cpu_out, cpu_states] = cpu_run(true);

    vk::Arena arena = make_arena();
    vk::BufferSlice dact = to_device(arena, act), dmeta = to_device(arena, meta.words);
    vk::BufferSlice dstates = to_device(arena, states), dout = device_filled<float>(arena, T * vd);
    vk::BufferSlice ddt = to_device(arena, dt), da = to_device(arena, a);
    ops::DeltaNetArgs d;
    d.act = dact;
    d.dt = ddt;
    d.a = da;
    d.states = dstates;
    d.out = dout;
    d.n_k_heads = k.nk;
    d.n_v_heads = k.nv;
    d.head_dim = k.d;
    d.stride = width;
    d.alpha_off = alpha;
    d.beta_off = beta;
    d.out_stride = vd;
    d.slot_floats = static_cast<uint32_t>(slot_floats);
    d.state_offset = 5;
    d.eps = kEps;
    d.grouped = k.grouped;
    d.chunk_min = chunk_min;
    d.max_q_len = meta.max_q_len;
    ASSERT_TRUE(ops::delta_net_chunked(vk_context().device().caps(), k.d, chunk_min, 150));
    run([&](vk::CommandRecorder& rec) {
      ops::delta_net(rec, vk_context().pipelines(), {dmeta, T, meta.n_seqs}, d);
    });
    const std::vector<float> gpu_out = from_device<float>(dout, T * vd);
    const std::vector<float> gpu_states = from_device<float>(dstates, states.size());

    // Per sequence: its outputs, and its state beside the 5 floats before it (left alone).
    auto within = [](std::span<const float> got, std::span<const float> want) {
      float scale = 0.f;
      for (float w : want) scale = std::max(scale, std::fabs(w));
      return near_all(got, want, 1e-4 * scale, 0);
    };
    for (size_t i = 0; i < seqs.size(); ++i) {
      SCOPED_TRACE("sequence " + std::to_string(i));
      const size_t o = size_t(cpu::BatchView{meta.words, T, meta.n_seqs}.seq_q_start(
                           static_cast<uint32_t>(i))) *
                       vd,
                   on = size_t(seqs[i].q_len) * vd;
      const size_t at = seqs[i].slot * slot_floats, n = slot_floats;
      const std::span<const float> wo(want_out), ws(want_states);
      EXPECT_TRUE(within(std::span(cpu_out).subspan(o, on), wo.subspan(o, on))) << "CPU outputs";
      EXPECT_TRUE(within(std::span(gpu_out).subspan(o, on), wo.subspan(o, on))) << "Vulkan outputs";
      EXPECT_TRUE(within(std::span(cpu_states).subspan(at + 5, n - 5), ws.subspan(at + 5, n - 5)))
          << "CPU states";
      EXPECT_TRUE(within(std::span(gpu_states).subspan(at + 5, n - 5), ws.subspan(at + 5, n - 5)))
          << "Vulkan states";
      for (size_t f = 0; f < 5; ++f) EXPECT_EQ(gpu_states[at + f], 7.0f);
    }
  }
}

// x *= sigmoid(gate) or silu(gate) over strided rows, on both backends.
TEST(DeltaNet, GateRowsOnBothBackends) {
  SeededRng rng;
  const uint32_t n = 70, rows = 5, xs = 75, gs = 150, x_off = 3, g_off = 77;
  const std::vector<float> x = random_vector(rng, x_off + size_t(rows) * xs, -3.f, 3.f);
  const std::vector<float> g = random_vector(rng, g_off + size_t(rows) * gs, -4.f, 4.f);
  vk::Arena arena = make_arena();
  for (bool silu : {false, true}) {
    std::vector<float> want = x, cpu_x = x;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t i = 0; i < n; ++i) {
        const double v = g[g_off + r * gs + i], s = 1 / (1 + std::exp(-v));
        want[x_off + r * xs + i] = float(x[x_off + r * xs + i] * (silu ? v * s : s));
      }
    vk::BufferSlice dx = to_device(arena, x), dg = to_device(arena, g);
    ops::GateRowsArgs a{dx, dg, n, rows, x_off, xs, g_off, gs, silu, false};
    run([&](vk::CommandRecorder& rec) { ops::gate_rows(rec, vk_context().pipelines(), a); });
    std::vector<float> cpu_g = g;
    cpu::gate_rows(silu ? cpu::GateKind::Silu : cpu::GateKind::Sigmoid, {cpu_x.data() + x_off, xs},
                   {cpu_g.data() + g_off, gs}, n, 0, rows);
    EXPECT_TRUE(near_all(from_device<float>(dx, x.size()), want, 1e-6, 1e-5)) << silu;
    EXPECT_TRUE(near_all(cpu_x, want, 1e-6, 1e-5)) << silu;
  }
}

// A shared expert's gate: x[r] *= sigmoid(g[r]), one gate value per row (the per-row mode of
// StepBackend::gate_rows), on both backends.
TEST(DeltaNet, PerRowGateOnBothBackends) {
  SeededRng rng;
  const uint32_t n = 70, rows = 5, xs = 75, gs = 3, x_off = 3, g_off = 2;
  const std::vector<float> x = random_vector(rng, x_off + size_t(rows) * xs, -3.f, 3.f);
  const std::vector<float> g = random_vector(rng, g_off + size_t(rows) * gs, -4.f, 4.f);
  std::vector<float> want = x, cpu_x = x;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < n; ++i)
      want[x_off + r * xs + i] =
          float(x[x_off + r * xs + i] / (1 + std::exp(-double(g[g_off + r * gs]))));
  vk::Arena arena = make_arena();
  vk::BufferSlice dx = to_device(arena, x), dg = to_device(arena, g);
  ops::GateRowsArgs a{dx, dg, n, rows, x_off, xs, g_off, gs, false, false, /*per_row=*/true};
  run([&](vk::CommandRecorder& rec) { ops::gate_rows(rec, vk_context().pipelines(), a); });
  std::vector<float> cpu_g = g;
  cpu::gate_rows(cpu::GateKind::Sigmoid, {cpu_x.data() + x_off, xs}, {cpu_g.data() + g_off, gs}, n,
                 0, rows, /*per_row=*/true);
  EXPECT_TRUE(near_all(from_device<float>(dx, x.size()), want, 1e-6, 1e-5));
  EXPECT_TRUE(near_all(cpu_x, want, 1e-6, 1e-5));
}

}  // namespace
}  // namespace vkllm::test
