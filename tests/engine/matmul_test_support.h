// Shared pieces of the matvec/matmul kernel tests: random weights in each ggml block format, a
// double-precision scalar reference built on the CPU dequantizer, and the tolerance check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/quants.h"
#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/weight_layout.h"
#include "tests/engine/vk_test_context.h"
#include "tests/support/f16.h"

namespace vkllm::matmul_test {

using gguf::TensorType;

inline vk::Context& context() {
  return test::vk_context();
}

inline const std::vector<TensorType>& all_weight_types() {
  static const std::vector<TensorType> types = {
      TensorType::F32,    TensorType::F16,  TensorType::BF16,   TensorType::Q4_0,
      TensorType::Q4_1,   TensorType::Q5_0, TensorType::Q5_1,   TensorType::Q8_0,
      TensorType::IQ4_NL, TensorType::Q2_K, TensorType::Q3_K,   TensorType::Q4_K,
      TensorType::Q5_K,   TensorType::Q6_K, TensorType::IQ4_XS, TensorType::MXFP4};
  return types;
}

// Types for tests of type-independent logic (reductions, tile shapes): a float type with 4-weight
// decode units and a 2-byte-aligned K-quant with 32-weight units.
inline const std::vector<TensorType>& layout_sample_types() {
  static const std::vector<TensorType> types = {TensorType::F16, TensorType::Q6_K};
  return types;
}

inline std::string type_param_name(const testing::TestParamInfo<TensorType>& info) {
  return std::string(gguf::type_name(info.param));
}

inline uint32_t block_elements(TensorType type) {
  return gguf::traits(type).block_elements;
}

// Offsets of the f16 scale fields (d, dmin, m) inside one block: random bytes there could be
// NaN/Inf, so they are overwritten with finite values. Everything else stays random bits, which
// exercises every quant pattern and sub-scale.
inline std::vector<uint32_t> half_fields(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS:
      return {0};
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
      return {0, 2};
    case TensorType::Q2_K:
      return {80, 82};
    case TensorType::Q3_K:
      return {108};
    case TensorType::Q6_K:
      return {208};
    default:
      return {};
  }
}

// rows x cols weights of `type` followed by kWeightReadSlackBytes of random slack.
inline std::vector<uint8_t> random_weights(TensorType type, uint32_t rows, uint32_t cols,
                                           std::mt19937& rng) {
  const uint64_t bytes = vk::weight_tensor_bytes(type, rows, cols);
  std::vector<uint8_t> out(bytes + vk::kWeightReadSlackBytes);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const uint64_t n = uint64_t{rows} * cols;
  auto put16 = [&](uint64_t at, uint16_t v) { std::memcpy(out.data() + at, &v, 2); };
  if (type == TensorType::F32) {
    for (uint64_t i = 0; i < n; ++i) {
      const float v = value(rng);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  } else if (type == TensorType::F16 || type == TensorType::BF16) {
    for (uint64_t i = 0; i < n; ++i)
      put16(2 * i, type == TensorType::F16 ? gguf::fp32_to_fp16(value(rng))
                                           : gguf::fp32_to_bf16(value(rng)));
  } else {
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : out) b = static_cast<uint8_t>(byte(rng));
    const uint32_t block_bytes = gguf::traits(type).block_bytes;
    std::uniform_real_distribution<float> scale(0.01f, 0.1f);
    for (uint64_t at = 0; at < bytes; at += block_bytes)
      for (uint32_t field : half_fields(type))
        put16(at + field, gguf::fp32_to_fp16((value(rng) < 0 ? -1.0f : 1.0f) * scale(rng)));
    // MXFP4's E8M0 exponent byte: scales 2^-10 .. 2^-3 (values up to 0.75), where random bytes
    // would reach 2^127.
    std::uniform_int_distribution<int> exponent(117, 124);
    if (type == TensorType::MXFP4)
      for (uint64_t at = 0; at < bytes; at += block_bytes) out[at] = uint8_t(exponent(rng));
  }
  for (uint64_t i = bytes; i < out.size(); ++i) out[i] = 0xA5;
  return out;
}

// A device buffer holding `file` (random_weights' bytes: the tensor, then its read slack) in the
// device layout of vulkan/weight_layout.h.
inline vk::Buffer device_weights(TensorType type, const std::vector<uint8_t>& file) {
  vk::Context& ctx = context();
  const uint64_t bytes = file.size() - vk::kWeightReadSlackBytes;
  vk::Buffer b(ctx.device(), vk::device_weight_bytes(type, bytes) + vk::kWeightReadSlackBytes,
               vk::MemoryKind::DeviceLocal, "test weights");
  vk::upload_weights(ctx.pipelines(), type, b.slice(),
                     std::span<const uint8_t>(file.data(), bytes));
  return b;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& f : v) f = value(rng);
  return v;
}

// n random values that f16 holds exactly (multiples of 1/128 in [-2, 2]) and their f16 bits: a
// GEMM given them as f16 rows multiplies what converting the floats would give.
struct ExactF16 {
  std::vector<float> values;
  std::vector<uint16_t> bits;
};
inline ExactF16 exact_f16_floats(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> step(-256, 256);
  ExactF16 r{std::vector<float>(n), std::vector<uint16_t>(n)};
  for (size_t i = 0; i < n; ++i) {
    r.values[i] = float(step(rng)) / 128.f;
    r.bits[i] = test::f16_bits(r.values[i]);
  }
  return r;
}

// Row-major rows x cols floats from the CPU dequantizer (the reference decoder).
inline std::vector<float> dequantize_rows(TensorType type, const std::vector<uint8_t>& w,
                                          uint32_t rows, uint32_t cols) {
  std::vector<float> out(uint64_t{rows} * cols);
  const uint64_t row_bytes = vk::weight_tensor_bytes(type, 1, cols);
  for (uint32_t r = 0; r < rows; ++r)
    gguf::dequantize(type, w.data() + r * row_bytes, out.data() + uint64_t{r} * cols, cols);
  return out;
}

// Relative error tolerance, against sum_k |w_k x_k| of each output (the scale of the rounding
// error of an f32 accumulation, independent of cancellation in the sum itself).
inline double tolerance(TensorType type) {
  return type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16 ? 1e-4
                                                                                        : 2e-4;
}

struct Shape {
  uint32_t rows, cols, batch;
  uint32_t x_stride = 0, y_stride = 0;
  bool accumulate = false;
};

// Checks y (batch vectors, y_stride apart) against y0 (if accumulating) + W x in double.
// `tol`: relative tolerance (0: tolerance(type), the f32 kernels').
inline void expect_matches_reference(TensorType type, const Shape& s, const std::vector<float>& w,
                                     const std::vector<float>& x, const std::vector<float>& y0,
                                     const std::vector<float>& y, double tol = 0) {
  if (tol == 0) tol = tolerance(type);
  const uint32_t xs = s.x_stride ? s.x_stride : s.cols;
  const uint32_t ys = s.y_stride ? s.y_stride : s.rows;
  double worst = 0;
  int failures = 0;
  for (uint32_t b = 0; b < s.batch; ++b) {
    for (uint32_t n = 0; n < s.rows; ++n) {
      double ref = s.accumulate ? y0[uint64_t{b} * ys + n] : 0.0;
      double mag = std::fabs(ref);
      for (uint32_t k = 0; k < s.cols; ++k) {
        const double p = double(w[uint64_t{n} * s.cols + k]) * x[uint64_t{b} * xs + k];
        ref += p;
        mag += std::fabs(p);
      }
      const double got = y[uint64_t{b} * ys + n];
      const double rel = std::fabs(got - ref) / std::max(mag, 1e-30);
      worst = std::max(worst, std::isnan(got) ? 1e30 : rel);
      if (!(rel <= tol) && ++failures <= 5)
        ADD_FAILURE() << "y[" << b << "][" << n << "] = " << got << ", reference " << ref
                      << " (|w||x| sum " << mag << ", relative error " << rel << ")";
    }
  }
  EXPECT_EQ(failures, 0) << failures << " wrong outputs, worst relative error " << worst;
  // Untouched padding between strided outputs proves the kernel writes only its own elements.
  for (uint32_t b = 0; b < s.batch; ++b)
    for (uint32_t n = s.rows; n < ys && uint64_t{b} * ys + n < y.size(); ++n)
      ASSERT_EQ(y[uint64_t{b} * ys + n], y0[uint64_t{b} * ys + n]) << "padding overwritten";
}

// Optional for run_and_check: x read through its RMSNorm with a random weight
// (MatmulArgs::norm_weight); the reference multiplies the normalized rows, made in double.
struct NormIn {
  float eps = 1e-5f;
  float x_scale = 3.f;  // activations scaled so that their RMS is away from 1
};

// Uploads weights and activations, runs `record` (matvec or matmul) once, and checks the result.
template <typename Record>
void run_and_check(TensorType type, const Shape& s, std::mt19937& rng, Record record,
                   double tol = 0, std::optional<NormIn> norm = std::nullopt) {
  vk::Context& ctx = context();
  vk::Device& dev = ctx.device();
  SCOPED_TRACE("rows=" + std::to_string(s.rows) + " cols=" + std::to_string(s.cols) +
               " batch=" + std::to_string(s.batch));
  const uint32_t xs = s.x_stride ? s.x_stride : s.cols;
  const uint32_t ys = s.y_stride ? s.y_stride : s.rows;
  const std::vector<uint8_t> wq = random_weights(type, s.rows, s.cols, rng);
  std::vector<float> x = random_floats(uint64_t{s.batch} * xs, rng);
  const std::vector<float> y0 = random_floats(uint64_t{s.batch} * ys, rng);
  std::vector<float> gamma, x_ref = x;
  if (norm) {
    for (auto& v : x) v *= norm->x_scale;
    gamma = random_floats(s.cols, rng);
    for (uint32_t b = 0; b < s.batch; ++b) {
      double ss = 0;
      for (uint32_t k = 0; k < s.cols; ++k) ss += double(x[b * xs + k]) * x[b * xs + k];
      const double inv = 1.0 / std::sqrt(ss / s.cols + norm->eps);
      for (uint32_t k = 0; k < s.cols; ++k)
        x_ref[b * xs + k] = static_cast<float>(x[b * xs + k] * inv * gamma[k]);
    }
  }

  vk::Buffer wb = device_weights(type, wq);
  vk::Buffer xb(dev, x.size() * 4, vk::MemoryKind::DeviceLocal, "test x");
  vk::Buffer yb(dev, y0.size() * 4, vk::MemoryKind::DeviceLocal, "test y");
  vk::Buffer gb(dev, std::max<size_t>(gamma.size(), 1) * 4, vk::MemoryKind::DeviceLocal,
                "test norm weight");
  vk::upload(dev, xb.slice(), std::span<const float>(x));
  vk::upload(dev, yb.slice(), std::span<const float>(y0));
  if (norm) vk::upload(dev, gb.slice(), std::span<const float>(gamma));

  vk::MatmulArgs args{.type = type,
                      .weights = wb.slice(),
                      .x = xb.slice(),
                      .y = yb.slice(),
                      .rows = s.rows,
                      .cols = s.cols,
                      .batch = s.batch,
                      .x_stride = s.x_stride,
                      .y_stride = s.y_stride,
                      .accumulate = s.accumulate,
                      .norm_weight = norm ? gb.slice() : vk::BufferSlice{},
                      .norm_eps = norm ? norm->eps : 0.f};
  vk::CommandRecorder rec(dev);
  rec.begin();
  record(rec, args);
  rec.submit_and_wait();
  const std::vector<float> y = vk::download<float>(dev, yb.slice(), y0.size());
  expect_matches_reference(type, s, dequantize_rows(type, wq, s.rows, s.cols), x_ref, y0, y, tol);
}

}  // namespace vkllm::matmul_test
