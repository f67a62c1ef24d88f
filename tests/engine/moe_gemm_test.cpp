// The grouped mixture-of-experts path against scalar references on fresh random inputs:
// ops::moe_group's pairs-by-expert list (exact: counts, offsets, token order within each expert),
// the grouped expert GEMMs (MatmulKernels::record_moe_matmul: gate/up-like products gathering
// token rows, down-like ones reading a row per pair) and ops::moe_combine, for several weight
// types (F16, Q8_0, Q4_K, MXFP4), 5 to 512 tokens and 2 to 8 experts per token, with skewed
// routing (one expert on every token, so one expert fills the whole worst-case grid) and experts
// no token selects (their weights all 0xFF bytes, NaN wherever read). The indirect matvec path
// (record_moe_matvec) must land within the same bounds (the smaller cases: it is slow on lavapipe),
// and so must the grouped products on the decode kernel (MoeMatmulArgs::matvec, f32: the f32
// bounds), which walk each expert's pairs 8 at a time (the skewed cases: up to 64 chunks on one
// expert).
// On a device with tensor cores the grouped GEMMs run there (f16 tolerances) and are checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "engine/gguf/quants.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/moe_ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

using gguf::TensorType;

struct GroupedCase {
  TensorType type;
  uint32_t T, K, n_expert;
  bool skewed;
  uint32_t cols;  // of both products (K-quants: 256)
};

// Each token's K distinct experts, never the last two (left without tokens). Skewed: expert 0 on
// every token, at a rank that cycles with the token.
std::vector<uint32_t> route(SeededRng& rng, const GroupedCase& c) {
  std::vector<uint32_t> ids(size_t(c.T) * c.K);
  std::vector<uint32_t> pool(c.n_expert - 2);
  for (uint32_t t = 0; t < c.T; ++t) {
    std::iota(pool.begin(), pool.end(), 0u);
    std::shuffle(pool.begin() + (c.skewed ? 1 : 0), pool.end(), rng.gen());
    for (uint32_t k = 0; k < c.K; ++k) ids[size_t(t) * c.K + k] = pool[k];
    if (c.skewed) std::swap(ids[size_t(t) * c.K], ids[size_t(t) * c.K + t % c.K]);
  }
  return ids;
}

// [cols, rows, n] experts of `type` from uniform values, the last two all 0xFF bytes; `deq` the
// dequantized values of the others.
std::vector<uint8_t> experts(SeededRng& rng, TensorType type, uint32_t cols, uint32_t rows,
                             uint32_t n, std::vector<float>& deq) {
  const size_t expert_bytes = gguf::row_bytes(type, cols) * rows;
  const std::vector<float> w = random_vector(rng, size_t(cols) * rows * n);
  std::vector<uint8_t> bytes(expert_bytes * n);
  gguf::quantize(type, w.data(), bytes.data(), w.size());
  deq.resize(w.size());
  gguf::dequantize(type, bytes.data(), deq.data(), w.size());
  std::fill(bytes.end() - 2 * expert_bytes, bytes.end(), 0xFF);
  return bytes;
}

// a . b in double, and sum |a_i b_i| (what rounding errors scale with) in *mag.
double dot(const float* a, const float* b, uint32_t n, double* mag) {
  double acc = 0, m = 0;
  for (uint32_t i = 0; i < n; ++i) {
    acc += double(a[i]) * b[i];
    m += std::fabs(double(a[i]) * b[i]);
  }
  *mag = m;
  return acc;
}

// |got - want| <= bound, element by element.
::testing::AssertionResult within(std::span<const float> got, std::span<const float> want,
                                  std::span<const double> bound) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(double(got[i]) - want[i]) <= bound[i]))
      return ::testing::AssertionFailure() << "index " << i << ": got " << got[i] << ", want "
                                           << want[i] << " (bound " << bound[i] << ")";
  }
  return ::testing::AssertionSuccess();
}

TEST(MoeGrouped, GroupingGemmsAndCombineMatchScalarReferences) {
  auto& pc = vk_context().pipelines();
  vk::MatmulKernels kernels(pc);
  SeededRng rng;
  // (T=512 x K=8: more pairs than moe_group stages at once.)
  // (MXFP4 and the second F16 case give experts 64 pairs or more: on devices with workgroup-scope
  // matrices they take record_moe_matmul_cm2, the F16 one reading its weights in place.)
  for (const GroupedCase c : {GroupedCase{TensorType::F16, 5, 2, 6, true, 128},
                              GroupedCase{TensorType::F16, 256, 2, 6, false, 128},
                              GroupedCase{TensorType::Q8_0, 64, 4, 8, false, 128},
                              GroupedCase{TensorType::Q4_K, 3, 2, 8, false, 256},
                              GroupedCase{TensorType::Q4_K, 16, 4, 16, true, 256},
                              GroupedCase{TensorType::Q4_K, 120, 8, 16, false, 256},
                              GroupedCase{TensorType::MXFP4, 512, 8, 12, true, 64}}) {
    SCOPED_TRACE(std::string(gguf::type_name(c.type)) + " T=" + std::to_string(c.T) +
                 " K=" + std::to_string(c.K) + " experts=" + std::to_string(c.n_expert) +
                 (c.skewed ? " skewed" : ""));
    // gate-like: rows R1 of cols C (x a row per token); down-like: rows R2 (x a row per pair),
    // both products' rows not a multiple of any tile; the combine's y rows Y apart.
    const uint32_t C = c.cols, R1 = 40, R2 = 56, Y = 64, P = c.T * c.K;
    // The matvec path to compare with only where it is quick on lavapipe (a workgroup per row).
    const bool compare_matvec = c.T <= 64;
    const std::vector<uint32_t> ids = route(rng, c);
    std::vector<float> g_deq, d_deq;
    const std::vector<uint8_t> g_bytes = experts(rng, c.type, C, R1, c.n_expert, g_deq);
    const std::vector<uint8_t> d_bytes = experts(rng, c.type, C, R2, c.n_expert, d_deq);
    const std::vector<float> x = random_vector(rng, size_t(c.T) * C);
    const std::vector<float> h = random_vector(rng, size_t(P) * C);
    std::vector<float> wts(P);
    for (float& w : wts) w = rng.uniform(0.1f, 1.f);
    const std::vector<float> y0 = random_vector(rng, size_t(c.T) * Y);

    vk::Arena arena = make_arena();
    const vk::BufferSlice dg = weights_to_device(arena, c.type, g_bytes);
    const vk::BufferSlice dd = weights_to_device(arena, c.type, d_bytes);
    const vk::BufferSlice dids = to_device(arena, ids), dw = to_device(arena, wts);
    const vk::BufferSlice dx = to_device(arena, x), dh = to_device(arena, h);
    const vk::BufferSlice groups = device_filled<uint32_t>(arena, vk::ops::moe_group_words(P));
    const vk::BufferSlice gate = device_filled<float>(arena, size_t(P) * R1);
    const vk::BufferSlice pair_out = device_filled<float>(arena, size_t(P) * R2);
    const vk::BufferSlice gate_mv = device_filled<float>(arena, size_t(P) * R1);
    const vk::BufferSlice pairs_mv = device_filled<float>(arena, size_t(P) * R2);
    const vk::BufferSlice grouped_y = to_device(arena, y0), matvec_y = to_device(arena, y0);
    run([&](vk::CommandRecorder& rec) {
      vk::ops::moe_group(rec, pc,
                         {.ids = dids, .groups = groups, .n_expert = c.n_expert, .n_pairs = P});
      rec.barrier();
      vk::MoeMatmulArgs a;
      a.type = c.type;
      a.weights = dg;
      a.x = dx;
      a.y = gate;
      a.groups = groups;
      a.rows = R1;
      a.cols = C;
      a.n_expert = c.n_expert;
      a.n_used = c.K;
      a.n_tokens = c.T;
      kernels.record_moe_matmul(rec, a);
      a.weights = dd;
      a.x = dh;
      a.y = pair_out;
      a.rows = R2;
      a.x_per_pair = true;
      kernels.record_moe_matmul(rec, a);
      // The same two products on the decode kernel.
      vk::MoeMatmulArgs v = a;
      v.matvec = true;
      v.y = pairs_mv;
      kernels.record_moe_matmul(rec, v);
      v.weights = dg;
      v.x = dx;
      v.y = gate_mv;
      v.rows = R1;
      v.x_per_pair = false;
      kernels.record_moe_matmul(rec, v);
      rec.barrier();
      vk::ops::moe_combine(rec, pc,
                           {.pairs = pair_out,
                            .weights = dw,
                            .y = grouped_y,
                            .rows = R2,
                            .n_used = c.K,
                            .n_tokens = c.T,
                            .y_stride = Y});
      vk::MoeMatvecArgs m;
      m.type = c.type;
      m.w = dd;
      m.x = dh;
      m.y = matvec_y;
      m.ids = dids;
      m.weights = dw;
      m.cols = C;
      m.rows = R2;
      m.n_expert = c.n_expert;
      m.n_used = c.K;
      m.n_items = c.T;
      m.y_stride = Y;
      m.x_per_pair = m.combine = true;
      if (compare_matvec) kernels.record_moe_matvec(rec, m);
    });

    // The list: exact.
    const auto got_groups = from_device<uint32_t>(groups, vk::ops::moe_group_words(P));
    const uint32_t list = 2 * vk::ops::kMoeMaxExperts;
    uint32_t offset = 0;
    for (uint32_t e = 0; e < vk::ops::kMoeMaxExperts; ++e) {
      std::vector<uint32_t> want;
      for (uint32_t q = 0; q < P && e < c.n_expert; ++q)
        if (ids[q] == e) want.push_back(q);
      ASSERT_EQ(got_groups[e], want.size()) << "count of expert " << e;
      ASSERT_EQ(got_groups[vk::ops::kMoeMaxExperts + e], offset) << "offset of expert " << e;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got_groups[list + offset + i], want[i]) << "expert " << e << " pair " << i;
      offset += static_cast<uint32_t>(want.size());
    }
    if (c.skewed) {
      EXPECT_EQ(got_groups[0], c.T) << "expert 0 takes every token";
    }
    EXPECT_EQ(got_groups[c.n_expert - 1], 0u);

    // The products and the combine, against double-precision sums of the dequantized weights.
    // Tolerance relative to sum |w_i x_i|: f32 accumulation on the portable GEMM (lavapipe),
    // f16-rounded weights and activations on the tensor-core one (2^-11 each, as
    // matmul_coopmat_test), plus the combine's f32 rounding.
    const double rel = kernels.coopmat(c.type) ? 2e-3 : 2e-5;
    std::printf("%s: %s GEMM\n", std::string(gguf::type_name(c.type)).c_str(),
                kernels.coopmat(c.type) ? "tensor-core" : "portable");
    std::vector<float> want_gate(size_t(P) * R1), want_pairs(size_t(P) * R2), want_y = y0;
    // sum |w_i x_i| of each product, and the bound at relative tolerance r: 1e-6 + r * mag.
    std::vector<double> gate_mag(want_gate.size()), pair_mag(want_pairs.size());
    const auto bounds = [](const std::vector<double>& mag, double r) {
      std::vector<double> b(mag.size());
      for (size_t i = 0; i < mag.size(); ++i) b[i] = 1e-6 + r * mag[i];
      return b;
    };
    std::vector<double> y_bound(want_y.size());
    for (size_t i = 0; i < y0.size(); ++i) y_bound[i] = 1e-6 * (1 + std::fabs(y0[i]));
    for (uint32_t q = 0; q < P; ++q) {
      const size_t e = ids[q];
      double mag = 0;
      for (uint32_t r = 0; r < R1; ++r) {
        const size_t i = size_t(q) * R1 + r;
        want_gate[i] =
            float(dot(g_deq.data() + (e * R1 + r) * C, x.data() + size_t(q / c.K) * C, C, &mag));
        gate_mag[i] = mag;
      }
      for (uint32_t r = 0; r < R2; ++r) {
        const double d = dot(d_deq.data() + (e * R2 + r) * C, h.data() + size_t(q) * C, C, &mag);
        want_pairs[size_t(q) * R2 + r] = float(d);
        pair_mag[size_t(q) * R2 + r] = mag;
        want_y[size_t(q / c.K) * Y + r] += float(wts[q] * d);
        y_bound[size_t(q / c.K) * Y + r] += wts[q] * (rel * mag + 1e-6 * (1 + std::fabs(d)));
      }
    }
    EXPECT_TRUE(
        within(from_device<float>(gate, want_gate.size()), want_gate, bounds(gate_mag, rel)));
    EXPECT_TRUE(
        within(from_device<float>(pair_out, want_pairs.size()), want_pairs, bounds(pair_mag, rel)));
    const std::vector<float> got_y = from_device<float>(grouped_y, want_y.size());
    EXPECT_TRUE(within(got_y, want_y, y_bound));
    // The grouped decode-kernel products (f32 sums) within the f32 bounds.
    EXPECT_TRUE(
        within(from_device<float>(gate_mv, want_gate.size()), want_gate, bounds(gate_mag, 2e-5)))
        << "grouped matvec, gate-like";
    EXPECT_TRUE(
        within(from_device<float>(pairs_mv, want_pairs.size()), want_pairs, bounds(pair_mag, 2e-5)))
        << "grouped matvec, down-like";
    // The matvec path (f32) lands within the same bound of the reference.
    if (compare_matvec) {
      EXPECT_TRUE(within(from_device<float>(matvec_y, want_y.size()), want_y, y_bound));
    }
  }
}

}  // namespace
}  // namespace vkllm::test
