// Mixture-of-experts routing and expert products against scalar references: the router's
// softmax/top-k/renormalisation, and the sigmoid scores with a selection bias (engine/cpu/
// moe_route.h and shaders/moe_route.comp) on logits with deliberate ties, and the indirect expert
// matvec (matvec.comp's MOE_IDS variants, with the subgroup and the shared-memory reductions) for
// several weight types, with an expert no token selects filled with NaN bytes (it must never be
// read). Also: expert weights no kernel takes fail the model's load on both backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "engine/cpu/moe_route.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/quants.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/moe_ops.h"
#include "tests/engine/kernel_test_support.h"
#include "tests/reference/reference_forward.h"
#include "tests/support/fixture_model.h"

namespace vkllm::test {
namespace {

using gguf::TensorType;

struct RouteCase {
  uint32_t n_expert, n_used;
  bool norm;
  bool scaled = false;        // Gemma 4's per-expert output scales multiplied into the weights
  float weight_scale = 1.0f;  // every weight times this on the device (Granite's residual scale)
};

// Logits on a coarse grid, so that most rows hold ties, plus one row all equal and one with
// the top n_used + 1 tied.
std::vector<float> tied_logits(SeededRng& rng, uint32_t T, uint32_t n_expert) {
  std::vector<float> z(size_t(T) * n_expert);
  for (float& v : z) v = 0.5f * float(rng.below(7)) - 1.5f;
  for (uint32_t e = 0; e < n_expert; ++e) z[e] = 0.25f;
  for (uint32_t e = 0; e < n_expert; ++e) z[n_expert + e] = e % 3 == 1 ? 2.0f : -1.0f;
  return z;
}

TEST(MoeRoute, CpuAndDeviceMatchTheScalarReferenceWithTies) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (const RouteCase c :
       {RouteCase{8, 2, true}, RouteCase{16, 4, false}, RouteCase{128, 8, true},
        RouteCase{5, 5, true}, RouteCase{8, 2, true, true}, RouteCase{16, 4, false, true},
        RouteCase{512, 10, true}, RouteCase{64, 6, true, false, 0.22f}}) {
    SCOPED_TRACE(std::to_string(c.n_expert) + " experts, " + std::to_string(c.n_used) + " used" +
                 (c.scaled ? ", scaled" : ""));
    const uint32_t T = 37;
    const std::vector<float> z = tied_logits(rng, T, c.n_expert);
    // Without scales every factor is 1 (the weights as routed).
    std::vector<float> scale(c.n_expert, 1.0f);
    if (c.scaled) scale = random_vector(rng, c.n_expert, 0.25f, 2.0f);
    std::vector<uint32_t> ids(size_t(T) * c.n_used);
    std::vector<float> w(ids.size());
    cpu::moe_route({z.data(), c.n_expert, c.n_used, c.norm, ids.data(), w.data()}, 0, T);

    vk::Arena arena = make_arena();
    const vk::BufferSlice dz = to_device(arena, z);
    const vk::BufferSlice dids = device_filled<uint32_t>(arena, ids.size());
    const vk::BufferSlice dw = device_filled<float>(arena, ids.size());
    const vk::BufferSlice dscale = c.scaled ? to_device(arena, scale) : vk::BufferSlice{};
    run([&](vk::CommandRecorder& rec) {
      vk::ops::MoeRouteArgs r{dz, dids, dw, c.n_expert, c.n_used, T, c.norm};
      r.scales = dscale;
      r.weight_scale = c.weight_scale;
      vk::ops::moe_route(rec, pc, r);
    });
    const auto gids = from_device<uint32_t>(dids, ids.size());
    const auto gw = from_device<float>(dw, ids.size());

    for (uint32_t t = 0; t < T; ++t) {
      const auto want = reference::reference_moe_route(
          std::span(z).subspan(size_t(t) * c.n_expert, c.n_expert), c.n_used, c.norm);
      for (uint32_t k = 0; k < c.n_used; ++k) {
        const size_t i = size_t(t) * c.n_used + k;
        ASSERT_EQ(ids[i], want.ids[k]) << "cpu, token " << t << " rank " << k;
        ASSERT_EQ(gids[i], want.ids[k]) << "device, token " << t << " rank " << k;
        EXPECT_NEAR(w[i], want.weights[k], 1e-6) << "cpu, token " << t;
        const float want_w = want.weights[k] * scale[want.ids[k]] * c.weight_scale;
        EXPECT_NEAR(gw[i], want_w, 1e-5 * std::max(1.0f, want_w)) << "device, token " << t;
      }
    }
  }
}

// Llama 4's routing: the top k logits (ties: the lower index), each weighted by its sigmoid,
// not renormalised; on the CPU and the device, against a stable sort of the logits.
TEST(MoeRoute, SigmoidOfTheTopLogitsOnCpuAndDevice) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (const auto& [n_expert, n_used] : {std::pair{16u, 1u}, std::pair{128u, 1u}, {8u, 2u}}) {
    SCOPED_TRACE(std::to_string(n_expert) + " experts, " + std::to_string(n_used) + " used");
    const uint32_t T = 37;
    const std::vector<float> z = tied_logits(rng, T, n_expert);
    std::vector<uint32_t> ids(size_t(T) * n_used);
    std::vector<float> w(ids.size());
    cpu::MoeRouteArgs a{z.data(), n_expert, n_used, false, ids.data(), w.data()};
    a.sigmoid = true;
    cpu::moe_route(a, 0, T);
    vk::Arena arena = make_arena();
    const vk::BufferSlice dz = to_device(arena, z);
    const vk::BufferSlice dids = device_filled<uint32_t>(arena, ids.size());
    const vk::BufferSlice dw = device_filled<float>(arena, ids.size());
    run([&](vk::CommandRecorder& rec) {
      vk::ops::MoeRouteArgs r{dz, dids, dw, n_expert, n_used, T, false};
      r.sigmoid = true;
      vk::ops::moe_route(rec, pc, r);
    });
    const auto gids = from_device<uint32_t>(dids, ids.size());
    const auto gw = from_device<float>(dw, ids.size());
    for (uint32_t t = 0; t < T; ++t) {
      std::vector<uint32_t> order(n_expert);
      std::iota(order.begin(), order.end(), 0u);
      const float* row = z.data() + size_t(t) * n_expert;
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t x, uint32_t y) { return row[x] > row[y]; });
      for (uint32_t k = 0; k < n_used; ++k) {
        const size_t i = size_t(t) * n_used + k;
        const double want = 1.0 / (1.0 + std::exp(-double(row[order[k]])));
        ASSERT_EQ(ids[i], order[k]) << "cpu, token " << t << " rank " << k;
        ASSERT_EQ(gids[i], order[k]) << "device, token " << t << " rank " << k;
        EXPECT_NEAR(w[i], want, 1e-6) << "cpu, token " << t;
        EXPECT_NEAR(gw[i], want, 1e-6) << "device, token " << t;
      }
    }
  }
}

// DeepSeek V3's / Nemotron-H MoE's routing: scores sigmoid(logit), the k best of score + bias
// (ties: the lower index) chosen, weighted by the unbiased scores, renormalised or not, then
// scaled; on the CPU and the device against a stable sort. The logits and the bias sit on coarse
// grids, so equal sums (ties) are exact and frequent; one bias reverses a case's order.
TEST(MoeRoute, SigmoidScoresWithASelectionBiasOnCpuAndDevice) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  struct Case {
    uint32_t n_expert, n_used;
    bool norm, biased;
    float scale;
  };
  for (const Case c : {Case{8, 2, true, true, 2.5f}, Case{128, 6, true, true, 2.5f},
                       Case{16, 4, false, true, 1.0f}, Case{512, 10, true, true, 1.0f},
                       Case{8, 3, true, false, 1.0f}}) {
    SCOPED_TRACE(std::to_string(c.n_expert) + " experts, " + std::to_string(c.n_used) + " used" +
                 (c.biased ? ", biased" : ""));
    const uint32_t T = 37;
    const std::vector<float> z = tied_logits(rng, T, c.n_expert);
    std::vector<float> bias(c.n_expert, 0.0f);
    for (float& b : bias) b = c.biased ? 0.125f * float(rng.below(5)) - 0.25f : 0.0f;
    if (c.biased) bias[c.n_expert - 1] = 2.0f;  // the last expert always chosen, first
    std::vector<uint32_t> ids(size_t(T) * c.n_used);
    std::vector<float> w(ids.size());
    cpu::MoeRouteArgs a{z.data(), c.n_expert, c.n_used, c.norm, ids.data(), w.data()};
    a.sigmoid_scores = true;
    a.select_bias = c.biased ? bias.data() : nullptr;
    cpu::moe_route(a, 0, T);
    vk::Arena arena = make_arena();
    const vk::BufferSlice dz = to_device(arena, z);
    const vk::BufferSlice dbias = c.biased ? to_device(arena, bias) : vk::BufferSlice{};
    const vk::BufferSlice dids = device_filled<uint32_t>(arena, ids.size());
    const vk::BufferSlice dw = device_filled<float>(arena, ids.size());
    run([&](vk::CommandRecorder& rec) {
      vk::ops::MoeRouteArgs r{dz, dids, dw, c.n_expert, c.n_used, T, c.norm};
      r.sigmoid_scores = true;
      r.bias = dbias;
      r.weight_scale = c.scale;
      vk::ops::moe_route(rec, pc, r);
    });
    const auto gids = from_device<uint32_t>(dids, ids.size());
    const auto gw = from_device<float>(dw, ids.size());
    for (uint32_t t = 0; t < T; ++t) {
      const float* row = z.data() + size_t(t) * c.n_expert;
      std::vector<float> score(c.n_expert), sel(c.n_expert);
      for (uint32_t e = 0; e < c.n_expert; ++e) {
        score[e] = 1.0f / (1.0f + std::exp(-row[e]));
        sel[e] = score[e] + bias[e];
      }
      std::vector<uint32_t> order(c.n_expert);
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t x, uint32_t y) { return sel[x] > sel[y]; });
      double total = 0;
      for (uint32_t k = 0; k < c.n_used; ++k) total += score[order[k]];
      if (c.biased) {
        ASSERT_EQ(order[0], c.n_expert - 1);
      }
      for (uint32_t k = 0; k < c.n_used; ++k) {
        const size_t i = size_t(t) * c.n_used + k;
        const double want =
            score[order[k]] / (c.norm ? std::max(total, 6.103515625e-5) : 1.0) * c.scale;
        ASSERT_EQ(ids[i], order[k]) << "cpu, token " << t << " rank " << k;
        ASSERT_EQ(gids[i], order[k]) << "device, token " << t << " rank " << k;
        EXPECT_NEAR(w[i], want / c.scale, 1e-6) << "cpu, token " << t;  // cpu_moe scales later
        EXPECT_NEAR(gw[i], want, 1e-5 * std::max(1.0, want)) << "device, token " << t;
      }
    }
  }
}

// Experts [cols, rows, n_expert] of `type`; expert `poisoned` is all 0xFF bytes (NaN scales).
struct Experts {
  std::vector<uint8_t> bytes;
  std::vector<float> deq;  // dequantized, expert by expert
};
Experts random_experts(SeededRng& rng, TensorType type, uint32_t cols, uint32_t rows, uint32_t n,
                       uint32_t poisoned) {
  const size_t expert_bytes = gguf::row_bytes(type, cols) * rows;
  const size_t per = size_t(cols) * rows;
  const std::vector<float> w = random_vector(rng, per * n, -1.f, 1.f);
  Experts x;
  x.bytes.resize(expert_bytes * n);
  gguf::quantize(type, w.data(), x.bytes.data(), w.size());
  std::fill(x.bytes.begin() + poisoned * expert_bytes,
            x.bytes.begin() + (poisoned + 1) * expert_bytes, 0xFF);
  x.deq.resize(w.size());
  gguf::dequantize(type, x.bytes.data(), x.deq.data(), w.size());
  return x;
}

double dot(const float* w, const float* x, uint32_t n) {
  double acc = 0;
  for (uint32_t i = 0; i < n; ++i) acc += double(w[i]) * x[i];
  return acc;
}

TEST(MoeMatvec, SelectedExpertsMatchScalarProductsAndUnselectedAreNeverRead) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  // The defaults (subgroup reduction where the device has it), and the shared-memory reduction
  // with 3 rows a workgroup, so the last workgroup's rows run past the expert's (26 rows).
  vk::MatmulKernels subgroup(pc),
      shared(pc, {.matvec_threads = 64, .matvec_rows = 3, .shared_reduction = true});
  const uint32_t n_expert = 6, K = 2, T = 5, poisoned = 4;
  for (auto [type, kernels] :
       {std::pair{TensorType::F16, &subgroup}, std::pair{TensorType::Q8_0, &shared},
        std::pair{TensorType::Q4_0, &subgroup}, std::pair{TensorType::Q4_K, &subgroup},
        std::pair{TensorType::Q4_K, &shared}, std::pair{TensorType::Q6_K, &subgroup},
        std::pair{TensorType::MXFP4, &subgroup}, std::pair{TensorType::MXFP4, &shared}}) {
    SCOPED_TRACE(std::string(gguf::type_name(type)) +
                 (kernels == &shared ? " shared-memory reduction" : ""));
    const uint32_t cols = 512, rows = 26;
    const Experts ex = random_experts(rng, type, cols, rows, n_expert, poisoned);
    std::vector<uint32_t> ids(T * K);
    for (uint32_t t = 0; t < T; ++t) {
      ids[t * K] = (t + 1) % n_expert == poisoned ? 5 : (t + 1) % n_expert;
      ids[t * K + 1] = t % 2 == 0 ? 0 : 3;  // expert 2 only through the first rank
    }
    std::vector<float> weights(T * K);
    for (float& w : weights) w = rng.uniform(0.1f, 1.f);
    const std::vector<float> x_tok = random_vector(rng, size_t(T) * cols);
    const std::vector<float> x_pair = random_vector(rng, size_t(T) * K * cols);
    const std::vector<float> y0 = random_vector(rng, size_t(T) * rows);

    vk::Arena arena = make_arena();
    const vk::BufferSlice dwt = weights_to_device(arena, type, ex.bytes);
    const vk::BufferSlice dids = to_device(arena, ids), dweights = to_device(arena, weights);
    const vk::BufferSlice dxt = to_device(arena, x_tok), dxp = to_device(arena, x_pair);
    const vk::BufferSlice pairs_out = device_filled<float>(arena, size_t(T) * K * rows);
    const vk::BufferSlice summed = to_device(arena, y0);
    run([&](vk::CommandRecorder& rec) {
      vk::MoeMatvecArgs a;
      a.type = type;
      a.w = dwt;
      a.ids = dids;
      a.weights = dweights;
      a.cols = cols;
      a.rows = rows;
      a.n_expert = n_expert;
      a.n_used = K;
      a.n_items = T * K;
      a.x = dxt;
      a.y = pairs_out;
      kernels->record_moe_matvec(rec, a);
      a.n_items = T;
      a.x = dxp;
      a.y = summed;
      a.x_per_pair = a.combine = true;
      kernels->record_moe_matvec(rec, a);
    });
    std::vector<float> want_pairs(size_t(T) * K * rows), want_sum = y0;
    for (uint32_t q = 0; q < T * K; ++q) {
      const float* w = ex.deq.data() + size_t(ids[q]) * rows * cols;
      double wsum = 0;
      for (uint32_t r = 0; r < rows; ++r) {
        want_pairs[size_t(q) * rows + r] =
            float(dot(w + size_t(r) * cols, x_tok.data() + size_t(q / K) * cols, cols));
        wsum = weights[q] * dot(w + size_t(r) * cols, x_pair.data() + size_t(q) * cols, cols);
        want_sum[size_t(q / K) * rows + r] += float(wsum);
      }
    }
    EXPECT_TRUE(near_all(from_device<float>(pairs_out, want_pairs.size()), want_pairs, 1e-4, 1e-4));
    EXPECT_TRUE(near_all(from_device<float>(summed, want_sum.size()), want_sum, 1e-4, 1e-4));
  }
}

// An expert tensor of a type no expert kernel takes (I32 here) fails the model's load on both
// backends, naming the tensor, instead of its first step.
TEST(MoeLoad, ExpertsWithoutAKernelFailAtLoadNamingTheTensor) {
  model::MakeModelOptions o;
  o.arch = "qwen3moe";
  o.shape = model::parse_model_shape("128x1x4x2");
  o.shape.n_expert = 4;
  o.shape.n_expert_used = 2;
  o.shape.n_ff_exp = 64;
  o.file_type = model::FileType::F32;
  const std::vector<uint8_t> made = random_model_bytes(o);
  const auto src = gguf::GgufFile::parse(made);
  gguf::GgufWriter w;
  w.copy_metadata(src, "");
  for (const auto& t : src.tensors()) {
    const auto data = src.tensor_data(t);
    const bool bad = t.name == "blk.0.ffn_up_exps.weight";  // same bytes, I32 instead of F32
    w.add_tensor(t.name, bad ? TensorType::I32 : t.type, t.shape,
                 std::vector<uint8_t>(data.begin(), data.end()));
  }
  const std::vector<uint8_t> bytes = w.serialize();
  const auto file = gguf::GgufFile::parse(bytes);
  runtime::RunnerOptions opts;
  opts.max_batch_tokens = 8;
  opts.max_seqs = 1;
  opts.max_context = 32;
  opts.kv_budget_bytes = 1u << 20;
  for (const bool cpu : {false, true}) {
    SCOPED_TRACE(cpu ? "cpu" : "vulkan");
    try {
      if (cpu) {
        runtime::GgufFileSource source(file);
        runtime::HostModel host(file, source);
        runtime::Runner runner(host, opts);
      } else {
        runtime::Model device(vk_context(), file);
        runtime::Runner runner(device, opts);
      }
      ADD_FAILURE() << "a model with I32 experts loaded";
    } catch (const std::runtime_error& e) {
      std::printf("%s\n", e.what());
      EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up_exps.weight"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace vkllm::test
