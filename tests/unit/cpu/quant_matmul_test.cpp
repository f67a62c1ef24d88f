// quant_matmul against a double-precision reference on the dequantized weights, for every weight
// type and every code path this CPU runs, with fresh random weights and activations each run.
//
// Tolerances. The float paths (F32/F16/BF16 weights, and every type on the portable path) only
// round in float accumulation: |y - ref| <= 1e-5 * |w_r|_2 * |x_t|_2. The integer paths round the
// activations to 8 bits per block (step d_b = max|x| in the block / 127, error uniform in
// +-d_b / 2, independent per element), so the error of a dot product has a standard deviation of
// at most |w_r|_2 * max_b d_b / sqrt(12); the bound is six of those plus the float term. A wrong
// scale, nibble or bias moves whole groups of elements and lands far outside it.
#include "engine/cpu/quant_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/gguf/quants.h"
#include "tests/unit/cpu/cpu_test_support.h"
#include "tests/unit/cpu/random_weights.h"

namespace vkllm::cpu {
namespace {

using gguf::TensorType;
using test::SeededRng;

using test::make_weights;
using test::Weights;
const auto& kMatmulTypes = test::kAllWeightTypes;

// The types with integer kernels on the SIMD paths; the others dequantize a row and dot floats.
bool uses_8bit_activations(TensorType type, Isa isa) {
  if (isa == Isa::Portable) return false;
  return type == TensorType::Q4_0 || type == TensorType::Q8_0 || type == TensorType::Q4_K ||
         type == TensorType::Q5_K || type == TensorType::Q6_K || type == TensorType::MXFP4;
}

// Checks product p's output against the reference; y0 is what y held before the call.
void check(const Weights& w, const std::vector<float>& x, uint64_t x_stride, uint32_t n,
           const Product& p, const std::vector<float>& y0, bool int_path, uint64_t act_block) {
  for (uint32_t t = 0; t < n; ++t) {
    const float* xt = x.data() + t * x_stride;
    double xnorm = 0, max_step = 0;
    for (uint64_t c = 0; c < w.view.cols; ++c) xnorm += double(xt[c]) * xt[c];
    for (uint64_t b = 0; b < w.view.cols; b += act_block) {
      double amax = 0;
      for (uint64_t c = b; c < std::min(w.view.cols, b + act_block); ++c)
        amax = std::max(amax, std::fabs(double(xt[c])));
      max_step = std::max(max_step, amax / 127.0);
    }
    xnorm = std::sqrt(xnorm);
    for (uint64_t r = 0; r < w.view.rows; ++r) {
      const float* wr = w.values.data() + r * w.view.cols;
      double ref = 0, wnorm = 0;
      for (uint64_t c = 0; c < w.view.cols; ++c) {
        ref += double(wr[c]) * xt[c];
        wnorm += double(wr[c]) * wr[c];
      }
      wnorm = std::sqrt(wnorm);
      double tol = 1e-5 * wnorm * xnorm + 1e-30;
      if (int_path) tol += 6.0 * wnorm * max_step / std::sqrt(12.0);
      const size_t at = t * p.y_stride + r;
      const double want = (p.accumulate ? double(y0[at]) : 0.0) + ref;
      ASSERT_NEAR(p.y[at], want, tol) << "token " << t << " row " << r;
    }
  }
}

uint64_t matmul_cols_for(TensorType type) {
  const uint32_t block = gguf::traits(type).block_elements;
  // Not a multiple of the kernels' 16-element float tile or of four K-quant super-blocks.
  if (block == 1) return 203;
  if (block == 32) return 32 * 13;
  return 256 * 3;
}

TEST(QuantMatmul, EveryTypeAndPathMatchesTheReference) {
  SeededRng rng;
  ThreadPool pool(3);
  MatmulWorkspace ws;
  for (TensorType type : kMatmulTypes) {
    ASSERT_TRUE(matmul_supports(type)) << gguf::type_name(type);
    const uint64_t cols = matmul_cols_for(type);
    const uint64_t rows = 37;  // odd, and not a multiple of the thread count
    Weights w = make_weights(rng, type, rows, cols);
    for (Isa isa : test::testable_isas()) {
      for (uint32_t n : {1u, 3u, 7u, 8u, 17u, 64u}) {
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(std::string(gguf::type_name(type)) + " " + std::string(isa_name(isa)) +
                       " n=" + std::to_string(n) + (accumulate ? " accumulate" : ""));
          const uint64_t x_stride = cols + 5, y_stride = rows + 3;
          std::vector<float> x = rng.vec(n * x_stride, -2.f, 2.f);
          std::vector<float> y = rng.vec(n * y_stride);
          const std::vector<float> y0 = y;
          const Product p{&w.view, y.data(), y_stride, accumulate};
          matmul(std::span(&p, 1), x.data(), x_stride, n, pool, ws, isa);
          const bool int_path = uses_8bit_activations(type, isa);
          const uint64_t act_block = gguf::traits(type).block_elements == 256 ? 256 : 32;
          check(w, x, x_stride, n, p, y0, int_path, act_block);
          // Outside the product's rows, y is untouched.
          for (uint32_t t = 0; t < n; ++t) {
            for (uint64_t r = rows; r < y_stride; ++r)
              ASSERT_EQ(y[t * y_stride + r], y0[t * y_stride + r]);
          }
        }
      }
    }
  }
}

TEST(QuantMatmul, SeveralProductsShareOneCall) {
  SeededRng rng;
  const uint64_t cols = 512;
  // The Llama Q4_K_M mix (Q4_K / Q6_K) plus the 32-element and float formats, in one call.
  const TensorType types[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0,
                              TensorType::Q4_0, TensorType::F16,  TensorType::Q3_K};
  const uint64_t rows[] = {67, 16, 5, 130, 9, 33};
  std::vector<Weights> ws_;
  for (size_t i = 0; i < std::size(types); ++i)
    ws_.push_back(make_weights(rng, types[i], rows[i], cols));
  for (unsigned threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    MatmulWorkspace ws;
    for (Isa isa : test::testable_isas()) {
      for (uint32_t n : {1u, 8u, 17u}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " threads=" + std::to_string(threads) +
                     " n=" + std::to_string(n));
        std::vector<float> x = rng.vec(n * cols, -3.f, 3.f);
        std::vector<std::vector<float>> ys, y0s;
        std::vector<Product> products;
        for (size_t i = 0; i < ws_.size(); ++i) {
          ys.push_back(rng.vec(n * rows[i]));
          y0s.push_back(ys.back());
        }
        for (size_t i = 0; i < ws_.size(); ++i)
          products.push_back({&ws_[i].view, ys[i].data(), rows[i], i % 2 == 1});
        matmul(products, x.data(), cols, n, pool, ws, isa);
        for (size_t i = 0; i < ws_.size(); ++i) {
          SCOPED_TRACE(gguf::type_name(types[i]));
          const uint64_t act_block = gguf::traits(types[i]).block_elements == 256 ? 256 : 32;
          check(ws_[i], x, cols, n, products[i], y0s[i], uses_8bit_activations(types[i], isa),
                act_block);
        }
      }
    }
  }
}

TEST(QuantMatmul, RejectsWhatItCannotCompute) {
  SeededRng rng;
  ThreadPool pool(1);
  MatmulWorkspace ws;
  std::vector<float> x(512), y(64);
  Weights a = make_weights(rng, TensorType::Q4_K, 4, 512);
  Weights b = make_weights(rng, TensorType::Q8_0, 4, 256);
  Product pa{&a.view, y.data(), 4, false}, pb{&b.view, y.data() + 16, 4, false};
  std::vector<Product> mixed = {pa, pb};
  EXPECT_THROW(matmul(mixed, x.data(), 512, 1, pool, ws), std::invalid_argument);
  WeightView odd{TensorType::Q4_K, a.bytes.data(), 300, 1};
  Product po{&odd, y.data(), 1, false};
  EXPECT_THROW(matmul(std::span(&po, 1), x.data(), 512, 1, pool, ws), std::invalid_argument);
  WeightView q8k{TensorType::Q8_K, a.bytes.data(), 256, 1};
  Product pk{&q8k, y.data(), 1, false};
  EXPECT_FALSE(matmul_supports(TensorType::Q8_K));
  EXPECT_THROW(matmul(std::span(&pk, 1), x.data(), 512, 1, pool, ws), std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::cpu
