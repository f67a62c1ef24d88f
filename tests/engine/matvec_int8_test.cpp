// The int8-dot ("MMVQ") decode path: shaders/quantize_q8.comp against a scalar quantizer, and the
// matvec_<type>_q8 kernels against a double-precision reference of the CPU-dequantized weights
// times the activations the GPU quantized, on fresh random inputs. Runs wherever the device
// offers shaderIntegerDotProduct (lavapipe does, unaccelerated); the float kernels that other
// devices fall back to are covered by matvec_kernels_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include "engine/vulkan/ops.h"
#include "tests/engine/matmul_test_support.h"
#include "tests/engine/q8_test_support.h"

namespace vkllm::matmul_test {
namespace {

using Recorder = vk::CommandRecorder;

TEST(QuantizeQ8, MatchesScalarQuantizer) {
  if (!context().caps().integer_dot_product) GTEST_SKIP() << "no shaderIntegerDotProduct";
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  const uint32_t cols = 288, batch = 3, stride = 296;
  std::vector<float> x = random_floats(size_t{batch} * stride, rng);
  // Blocks with a wide range, a single outlier and all zeros.
  for (uint32_t i = 0; i < 32; ++i) x[32 + i] *= 1000.0f;
  x[stride + 70] = -50.0f;
  std::fill(x.begin() + 2 * stride + 64, x.begin() + 2 * stride + 96, 0.0f);
  vk::Buffer xb, xq;
  const Q8Vectors v = quantize_on_gpu(kernels, x, cols, batch, stride, xb, xq);
  int wrong = 0;
  for (uint32_t b = 0; b < batch; ++b) {
    for (uint32_t kb = 0; kb < cols / 32; ++kb) {
      const size_t blk = size_t{b} * (cols / 32) + kb;
      float amax = 0;
      for (uint32_t i = 0; i < 32; ++i)
        amax = std::max(amax, std::fabs(x[b * stride + kb * 32 + i]));
      const float d = amax / 127.0f;
      EXPECT_NEAR(v.dx[blk], d, 1e-6 * d) << "block " << blk;
      int64_t sum = 0;
      for (uint32_t i = 0; i < 32; ++i) {
        const double want = d > 0 ? x[b * stride + kb * 32 + i] / double(d) : 0.0;
        const int got = v.q[size_t{b} * cols + kb * 32 + i];
        sum += got;
        // Within rounding of x / dx; a tie may round either way after the f32 division.
        const double frac = std::fabs(want - std::trunc(want));
        const bool near_tie = std::fabs(frac - 0.5) < 1e-3;
        if (std::abs(got - std::nearbyint(want)) > (near_tie ? 1 : 0) && ++wrong <= 5)
          ADD_FAILURE() << "q[" << b << "][" << kb * 32 + i << "] = " << got << ", want " << want;
      }
      EXPECT_NEAR(v.sx[blk], double(d) * double(sum), 1e-5 * std::max(1.0f, d * 32 * 127))
          << "block " << blk;
    }
  }
  EXPECT_EQ(wrong, 0);
}

// The q8 copy a producer kernel writes beside its f32 output equals record_quantize_q8 of that
// output (same expression per element; a value at a rounding tie may land one step apart).
void expect_same_q8(const Q8Vectors& fused, const Q8Vectors& separate) {
  ASSERT_EQ(fused.q.size(), separate.q.size());
  int off_by_one = 0;
  for (size_t i = 0; i < fused.q.size(); ++i) {
    ASSERT_LE(std::abs(int(fused.q[i]) - int(separate.q[i])), 1) << "element " << i;
    off_by_one += fused.q[i] != separate.q[i];
  }
  EXPECT_LE(off_by_one, int(fused.q.size() / 1000)) << "values one step apart";
  for (size_t b = 0; b < fused.dx.size(); ++b) {
    ASSERT_NEAR(fused.dx[b], separate.dx[b], 1e-6 * separate.dx[b]) << "block " << b;
    ASSERT_NEAR(fused.sx[b], separate.sx[b], 1e-5 * 32 * 127 * separate.dx[b]) << "block " << b;
  }
}

TEST(FusedQ8Outputs, RmsNormAndGluWriteWhatTheQuantizerWould) {
  if (!int8_dot_available()) GTEST_SKIP() << "no integer dot product / subgroup arithmetic";
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  vk::Context& ctx = context();
  vk::Device& dev = ctx.device();
  vk::MatmulKernels kernels(ctx.pipelines(), {.int8_dot = vk::Int8Dot::On});
  // 1056 = 4 workgroups of glu's 256 threads, the last one partly empty.
  const uint32_t n = 1056, rows = 3;
  const uint64_t q8_bytes = vk::q8_activation_bytes(n, rows);
  auto buffer = [&](const std::vector<float>& v) {
    vk::Buffer b(dev, v.size() * 4, vk::MemoryKind::DeviceLocal, "test input");
    vk::upload(dev, b.slice(), std::span<const float>(v));
    return b;
  };
  vk::Buffer x = buffer(random_floats(size_t{rows} * n, rng));
  vk::Buffer w = buffer(random_floats(n, rng));
  vk::Buffer gate = buffer(random_floats(size_t{rows} * n, rng));
  vk::Buffer up = buffer(random_floats(size_t{rows} * n, rng));
  vk::Buffer y(dev, size_t{rows} * n * 4, vk::MemoryKind::DeviceLocal, "y");
  vk::Buffer g(dev, size_t{rows} * n * 4, vk::MemoryKind::DeviceLocal, "glu out");
  vk::Buffer qa(dev, q8_bytes, vk::MemoryKind::DeviceLocal, "fused q8");
  vk::Buffer qb(dev, q8_bytes, vk::MemoryKind::DeviceLocal, "separate q8");
  for (bool norm : {true, false}) {
    SCOPED_TRACE(norm ? "rms_norm" : "glu");
    Recorder rec(dev);
    rec.begin();
    rec.fill(qa.slice(), 0xDEADBEEFu);
    rec.barrier();
    if (norm) {
      vk::ops::RmsNormArgs a;
      a.x = x.slice();
      a.weight = w.slice();
      a.y = y.slice();
      a.n = n;
      a.n_rows = rows;
      a.q8 = qa.slice();
      vk::ops::rms_norm(rec, ctx.pipelines(), a);
    } else {
      vk::ops::GluArgs a;
      a.gate = gate.slice();
      a.up = up.slice();
      a.out = g.slice();
      a.n = n;
      a.n_rows = rows;
      a.q8 = qa.slice();
      vk::ops::glu(rec, ctx.pipelines(), a);
    }
    rec.barrier();
    kernels.record_quantize_q8(rec, norm ? y.slice() : g.slice(), n, rows, 0, qb.slice());
    rec.submit_and_wait();
    expect_same_q8(download_q8(dev, qa, n, rows), download_q8(dev, qb, n, rows));
  }
}

struct Case {
  uint32_t rows, cols, batch;
  uint32_t y_stride = 0;
  bool accumulate = false;
};

// Quantizes x on the GPU, runs the int8-dot matvec, and checks it against the reference built from
// the CPU-dequantized weights and the GPU's own quantized activations.
void check_q8_matvec(vk::MatmulKernels& kernels, TensorType type, const Case& c,
                     std::mt19937& rng) {
  vk::Device& dev = context().device();
  SCOPED_TRACE("rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols) +
               " batch=" + std::to_string(c.batch));
  ASSERT_TRUE(kernels.int8_dot(type));
  const uint32_t ys = c.y_stride ? c.y_stride : c.rows;
  const std::vector<uint8_t> wq = random_weights(type, c.rows, c.cols, rng);
  const std::vector<float> x = random_floats(size_t{c.batch} * c.cols, rng);
  const std::vector<float> y0 = random_floats(size_t{c.batch} * ys, rng);
  vk::Buffer xb, xq;
  const Q8Vectors v = quantize_on_gpu(kernels, x, c.cols, c.batch, 0, xb, xq);

  vk::Buffer wb = device_weights(type, wq);
  vk::Buffer yb(dev, y0.size() * 4, vk::MemoryKind::DeviceLocal, "test y");
  vk::upload(dev, yb.slice(), std::span<const float>(y0));
  Recorder rec(dev);
  rec.begin();
  kernels.record_matvec(rec, {.type = type,
                              .weights = wb.slice(),
                              .x = xb.slice(),
                              .y = yb.slice(),
                              .rows = c.rows,
                              .cols = c.cols,
                              .batch = c.batch,
                              .y_stride = c.y_stride,
                              .accumulate = c.accumulate,
                              .xq = xq.slice()});
  rec.submit_and_wait();
  const std::vector<float> y = vk::download<float>(dev, yb.slice(), y0.size());
  expect_matches_reference(type, {c.rows, c.cols, c.batch, 0, c.y_stride, c.accumulate},
                           dequantize_rows(type, wq, c.rows, c.cols), v.dequantized(), y0, y);
}

const std::vector<TensorType>& q8_types() {
  static const std::vector<TensorType> types = {
      TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
  return types;
}

class MatvecInt8 : public testing::TestWithParam<TensorType> {};

TEST_P(MatvecInt8, MatchesReferenceOnQuantizedActivations) {
  if (!int8_dot_available()) GTEST_SKIP() << "no integer dot product / subgroup arithmetic";
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  const uint32_t k1 = block_elements(type) == 256 ? 256 : 288;
  const uint32_t k2 = block_elements(type) == 256 ? 1280 : 1056;
  // 97 rows leave the last row group partly empty; batch 1 and 8 are the two column counts, 11
  // takes two passes of 8 with a padded y and the fused residual add.
  check_q8_matvec(kernels, type, {97, k2, 1}, rng);
  check_q8_matvec(kernels, type, {97, k1, 5}, rng);
  check_q8_matvec(kernels, type, {64, k1, 11, 67, true}, rng);
  // Other workgroup shapes: fewer threads than groups per row, 3 rows per workgroup.
  vk::MatmulKernels narrow(context().pipelines(),
                           {.int8_dot = vk::Int8Dot::On, .q8_threads = 32, .q8_rows = 3});
  check_q8_matvec(narrow, type, {50, k2, 2}, rng);
}

INSTANTIATE_TEST_SUITE_P(Int8Types, MatvecInt8, testing::ValuesIn(q8_types()), type_param_name);

TEST(MatvecInt8Choice, OnlyQuantTypesWithKernelsAndOnlyWhenEnabled) {
  vk::MatmulKernels off(context().pipelines(), {.int8_dot = vk::Int8Dot::Off});
  vk::MatmulKernels on(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  vk::MatmulKernels autom(context().pipelines());
  for (TensorType t : all_weight_types()) {
    const bool has = std::find(q8_types().begin(), q8_types().end(), t) != q8_types().end();
    EXPECT_FALSE(off.int8_dot(t));
    EXPECT_EQ(on.int8_dot(t), has && int8_dot_available()) << gguf::type_name(t);
    EXPECT_EQ(autom.int8_dot(t),
              has && int8_dot_available() && context().caps().int8_dot_accelerated)
        << gguf::type_name(t);
  }
}

TEST(MatvecInt8Choice, FallsBackToFloatKernelWhenDisabled) {
  // With Off, q8 activations are ignored and the f32 x is used: the float reference holds at the
  // float kernels' tolerance.
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  vk::MatmulKernels off(context().pipelines(), {.int8_dot = vk::Int8Dot::Off});
  vk::Device& dev = context().device();
  const uint32_t rows = 40, cols = 512, batch = 2;
  vk::Buffer xq(dev, vk::q8_activation_bytes(cols, batch), vk::MemoryKind::DeviceLocal, "xq");
  Recorder fill(dev);
  fill.begin();
  fill.fill(xq.slice(), 0x7F7F7F7Fu);  // garbage that would show if it were read
  fill.submit_and_wait();
  run_and_check(TensorType::Q4_K, {rows, cols, batch}, rng, [&](Recorder& r, vk::MatmulArgs a) {
    a.xq = xq.slice();
    off.record_matvec(r, a);
  });
}

TEST(MatvecInt8Choice, RejectsBadQuantizeArguments) {
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  vk::Device& dev = context().device();
  vk::Buffer b(dev, 1 << 14, vk::MemoryKind::DeviceLocal, "args");
  Recorder rec(dev);
  rec.begin();
  EXPECT_THROW(kernels.record_quantize_q8(rec, b.slice(), 48, 1, 0, b.slice()),
               std::invalid_argument);  // not a multiple of 32
  EXPECT_THROW(kernels.record_quantize_q8(rec, b.slice(), 256, 2, 0, b.slice(0, 500)),
               std::invalid_argument);  // xq too small
  EXPECT_THROW(kernels.record_quantize_q8(rec, b.slice(0, 1000), 256, 2, 0, b.slice()),
               std::invalid_argument);  // x too small
  rec.submit_and_wait();
}

// The indirect expert products on q8 rows (matvec_<type>_q8_moe): the up products of each
// (token, rank) pair from its token's row, and the down products of each token's pairs weighted
// by the router and summed into y, against double-precision products of the CPU-dequantized
// experts and the GPU's own quantized rows. The last expert is never selected and poisoned
// (0xFF bytes: NaN scales), so a read of it would show.
TEST_P(MatvecInt8, ExpertProductsOnQ8RowsMatchTheReference) {
  if (!int8_dot_available()) GTEST_SKIP() << "no integer dot product / subgroup arithmetic";
  const TensorType type = GetParam();
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  vk::Device& dev = context().device();
  vk::MatmulKernels kernels(context().pipelines(), {.int8_dot = vk::Int8Dot::On});
  ASSERT_TRUE(kernels.int8_dot(type));
  const uint32_t n_expert = 5, K = 3, T = 2, rows = 37;
  const uint32_t cols = block_elements(type) == 256 ? 512 : 288;
  std::vector<uint8_t> wq = random_weights(type, rows * n_expert, cols, rng);
  const uint64_t expert_bytes = vk::weight_tensor_bytes(type, rows, cols);
  std::fill(wq.begin() + 4 * expert_bytes, wq.begin() + 5 * expert_bytes, 0xFF);
  const std::vector<float> deq = dequantize_rows(type, wq, rows * n_expert, cols);
  const std::vector<uint32_t> ids = {2, 0, 3, 1, 3, 0};  // T x K, expert 4 never
  std::uniform_real_distribution<float> weight(0.1f, 1.0f);
  std::vector<float> weights(T * K);
  for (float& w : weights) w = weight(rng);
  vk::Buffer xt, xtq, xp, xpq;
  const Q8Vectors tok = quantize_on_gpu(kernels, random_floats(T * cols, rng), cols, T, 0, xt, xtq);
  const Q8Vectors pair =
      quantize_on_gpu(kernels, random_floats(T * K * cols, rng), cols, T * K, 0, xp, xpq);
  const std::vector<float> y0 = random_floats(T * rows, rng);
  auto buffer = [&](auto v, const char* name) {
    vk::Buffer b(dev, v.size() * 4, vk::MemoryKind::DeviceLocal, name);
    vk::upload(dev, b.slice(), std::span(std::as_const(v)));
    return b;
  };
  vk::Buffer wb = device_weights(type, wq), idb = buffer(ids, "ids"),
             wtb = buffer(weights, "weights"), sum = buffer(y0, "summed");
  vk::Buffer pairs_out(dev, T * K * rows * 4, vk::MemoryKind::DeviceLocal, "pairs");
  Recorder rec(dev);
  rec.begin();
  vk::MoeMatvecArgs a;
  a.type = type;
  a.w = wb.slice();
  a.ids = idb.slice();
  a.weights = wtb.slice();
  a.cols = cols;
  a.rows = rows;
  a.n_expert = n_expert;
  a.n_used = K;
  a.n_items = T * K;
  a.x = xt.slice();
  a.xq = xtq.slice();
  a.y = pairs_out.slice();
  kernels.record_moe_matvec(rec, a);
  a.n_items = T;
  a.x = xp.slice();
  a.xq = xpq.slice();
  a.y = sum.slice();
  a.x_per_pair = a.combine = true;
  kernels.record_moe_matvec(rec, a);
  rec.submit_and_wait();
  const std::vector<float> x_tok = tok.dequantized(), x_pair = pair.dequantized();
  std::vector<float> want_pairs(T * K * rows), want_sum(y0.begin(), y0.end());
  double worst = 0;
  for (uint32_t q = 0; q < T * K; ++q) {
    const float* w = deq.data() + uint64_t{ids[q]} * rows * cols;
    for (uint32_t r = 0; r < rows; ++r) {
      double up = 0, down = 0, mag = 0;
      for (uint32_t k = 0; k < cols; ++k) {
        up += double(w[r * cols + k]) * x_tok[(q / K) * cols + k];
        down += double(w[r * cols + k]) * x_pair[q * cols + k];
        mag += std::fabs(double(w[r * cols + k]) * x_pair[q * cols + k]);
      }
      want_pairs[q * rows + r] = float(up);
      want_sum[(q / K) * rows + r] += float(weights[q] * down);
      worst = std::max(worst, mag);
    }
  }
  const std::vector<float> got_pairs = vk::download<float>(dev, pairs_out.slice(), T * K * rows);
  const std::vector<float> got_sum = vk::download<float>(dev, sum.slice(), T * rows);
  // f32 accumulation of int8 products: relative to the largest sum of |w x|.
  for (size_t i = 0; i < got_pairs.size(); ++i)
    ASSERT_NEAR(got_pairs[i], want_pairs[i], 2e-4 * worst) << "pair row " << i;
  for (size_t i = 0; i < got_sum.size(); ++i)
    ASSERT_NEAR(got_sum[i], want_sum[i], 6e-4 * worst) << "summed row " << i;
}

}  // namespace
}  // namespace vkllm::matmul_test
