// The deferred RMSNorm of decode's residual products: record_matvec_norm_blocks (the product, then
// per block of 32 outputs the q8 of y * w and the sum of squares of y) and the int8-dot products
// that read those blocks and apply 1/rms themselves (MatmulArgs::xq_deferred_norm), against
// double-precision references on fresh random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "tests/engine/q8_test_support.h"

namespace vkllm::matmul_test {
namespace {

class MatvecInt8NormBlocks : public testing::TestWithParam<TensorType> {};

TEST_P(MatvecInt8NormBlocks, BlocksOfTheNormThenProductsThatScaleThem) {
  if (!int8_dot_available()) GTEST_SKIP() << "no integer dot product / subgroup arithmetic";
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  vk::Device& dev = context().device();
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  const uint32_t cols = block_elements(type) == 256 ? 512 : 288;
  const uint32_t rows = block_elements(type) == 256 ? 256 : 160;  // the norm's width
  const uint32_t rows2 = 48;                                      // the next product's outputs
  const float eps = 1e-5f;
  for (uint32_t batch : {1u, 3u}) {
    SCOPED_TRACE("batch=" + std::to_string(batch));
    ASSERT_TRUE(kernels.can_fuse_norm(type, rows, batch, 0, 0));
    const std::vector<uint8_t> wq = random_weights(type, rows, cols, rng);
    const std::vector<uint8_t> wq2 = random_weights(type, rows2, rows, rng);
    const std::vector<float> x = random_floats(size_t{batch} * cols, rng);
    const std::vector<float> y0 = random_floats(size_t{batch} * rows, rng);
    std::vector<float> norm_w = random_floats(rows, rng);
    for (float& f : norm_w) f += 1.5f;  // weights away from zero, as trained norms have
    vk::Buffer xb, xq;
    const Q8Vectors v = quantize_on_gpu(kernels, x, cols, batch, 0, xb, xq);
    vk::Buffer wb = device_weights(type, wq), wb2 = device_weights(type, wq2);
    auto upload = [&](const std::vector<float>& f, const char* name) {
      vk::Buffer b(dev, f.size() * 4, vk::MemoryKind::DeviceLocal, name);
      vk::upload(dev, b.slice(), std::span<const float>(f));
      return b;
    };
    vk::Buffer nwb = upload(norm_w, "norm weight");
    vk::Buffer counters(dev, vk::block_counter_words(rows) * 4, vk::MemoryKind::DeviceLocal,
                        "counters");
    const uint64_t q8_bytes = vk::q8_deferred_norm_bytes(rows, batch);
    std::vector<vk::Buffer> yb, q8b;
    vk::Buffer out(dev, size_t{batch} * rows2 * 4, vk::MemoryKind::DeviceLocal, "next product");
    vk::CommandRecorder rec(dev);
    rec.begin();
    rec.fill(counters.slice(), 0);
    for (int run = 0; run < 2; ++run) {
      yb.push_back(upload(y0, "y"));
      q8b.emplace_back(dev, q8_bytes, vk::MemoryKind::DeviceLocal, "q8");
      rec.fill(q8b.back().slice(), 0xDEADBEEFu);  // poison: every block must be written
    }
    rec.barrier();
    // Twice in a row on one set of counters: the second only completes its blocks if the first
    // left the counters at zero.
    for (int run = 0; run < 2; ++run) {
      kernels.record_matvec_norm_blocks(
          rec,
          {.type = type,
           .weights = wb.slice(),
           .x = xb.slice(),
           .y = yb[run].slice(),
           .rows = rows,
           .cols = cols,
           .batch = batch,
           .accumulate = true,
           .xq = xq.slice()},
          {.weight = nwb.slice(), .q8 = q8b[run].slice(), .counters = counters.slice()});
      rec.barrier();
    }
    kernels.record_matvec(rec, {.type = type,
                                .weights = wb2.slice(),
                                .x = yb[1].slice(),
                                .y = out.slice(),
                                .rows = rows2,
                                .cols = rows,
                                .batch = batch,
                                .xq = q8b[1].slice(),
                                .xq_deferred_norm = true,
                                .xq_norm_eps = eps});
    rec.submit_and_wait();

    const auto y = vk::download<float>(dev, yb[1].slice(), y0.size());
    expect_matches_reference(type, {rows, cols, batch, 0, 0, true},
                             dequantize_rows(type, wq, rows, cols), v.dequantized(), y0, y);
    const auto raw = vk::download<uint8_t>(dev, q8b[1].slice(), q8_bytes);
    EXPECT_EQ(raw, vk::download<uint8_t>(dev, q8b[0].slice(), q8_bytes));
    const Q8Vectors q = download_q8(dev, q8b[1], rows, batch);
    const size_t n_blocks = size_t{batch} * rows / 32;
    std::vector<float> sumsq(n_blocks);
    std::memcpy(sumsq.data(), raw.data() + vk::q8_activation_bytes(rows, batch), n_blocks * 4);
    // The next product's input as the norm defines it: the blocks of y * w, times 1/rms of y.
    std::vector<float> normed(size_t{batch} * rows);
    for (uint32_t c = 0; c < batch; ++c) {
      double ss = 0;
      for (uint32_t b = 0; b < rows / 32; ++b) {
        double block_ss = 0, amax = 0;
        for (uint32_t i = 0; i < 32; ++i) {
          const size_t at = size_t{c} * rows + 32 * b + i;
          block_ss += double(y[at]) * y[at];
          amax = std::max(amax, std::abs(double(y[at]) * norm_w[32 * b + i]));
        }
        const size_t blk = size_t{c} * rows / 32 + b;
        ASSERT_NEAR(sumsq[blk], block_ss, 1e-5 * block_ss) << "vector " << c << " block " << b;
        ASSERT_NEAR(q.dx[blk], amax / 127, 1e-6 * amax) << "vector " << c << " block " << b;
        for (uint32_t i = 0; i < 32; ++i) {
          const size_t at = size_t{c} * rows + 32 * b + i;
          ASSERT_NEAR(q.q[at] * q.dx[blk], y[at] * norm_w[32 * b + i], 0.5001 * q.dx[blk] + 1e-7)
              << "vector " << c << " row " << 32 * b + i;
        }
        ss += block_ss;
      }
      const double inv = 1.0 / std::sqrt(ss / rows + eps);
      for (uint32_t i = 0; i < rows; ++i) {
        const size_t at = size_t{c} * rows + i;
        normed[at] = float(q.q[at] * double(q.dx[at / 32]) * inv);
      }
    }
    const auto got = vk::download<float>(dev, out.slice(), size_t{batch} * rows2);
    expect_matches_reference(type, {rows2, rows, batch}, dequantize_rows(type, wq2, rows2, rows),
                             normed, std::vector<float>(got.size()), got);
  }
}

INSTANTIATE_TEST_SUITE_P(Int8Types, MatvecInt8NormBlocks,
                         testing::Values(TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K),
                         type_param_name);

TEST(MatvecInt8NormBlocksArgs, OnlyTheInt8DotKernelReadsADeferredNorm) {
  if (!int8_dot_available()) GTEST_SKIP() << "no integer dot product / subgroup arithmetic";
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  vk::Device& dev = context().device();
  vk::Buffer any(dev, 1 << 20, vk::MemoryKind::DeviceLocal, "any");
  vk::CommandRecorder rec(dev);
  rec.begin();
  vk::MatmulArgs args{.type = TensorType::F16,
                      .weights = any.slice(),
                      .x = any.slice(),
                      .y = any.slice(),
                      .rows = 64,
                      .cols = 256,
                      .batch = 1,
                      .xq = any.slice(),
                      .xq_deferred_norm = true};
  EXPECT_THROW(kernels.record_matvec(rec, args), std::invalid_argument);  // no int8 kernel
  EXPECT_THROW(kernels.record_matmul(rec, args), std::invalid_argument);
  args.type = TensorType::Q8_0;
  args.xq = any.slice(0, vk::q8_activation_bytes(256, 1));  // no room for the sums of squares
  EXPECT_THROW(kernels.record_matvec(rec, args), std::invalid_argument);
  args.xq = any.slice(0, vk::q8_deferred_norm_bytes(256, 1));
  EXPECT_NO_THROW(kernels.record_matvec(rec, args));
  // The blocks may not go where the product reads its own q8.
  vk::MatmulArgs producer = args;
  producer.xq_deferred_norm = false;
  producer.accumulate = true;
  EXPECT_THROW(kernels.record_matvec_norm_blocks(
                   rec, producer, {.weight = any.slice(), .q8 = args.xq, .counters = any.slice()}),
               std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::matmul_test
