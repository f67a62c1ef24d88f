// The AMX path of quant_matmul (engine/cpu/amx_matmul.h, taken from amx_min_tokens on)
// against a double-precision reference on the dequantized weights, for every weight type, with
// fresh random inputs: token counts, rows and columns that are not multiples of the 16 x 16
// tiles or of the 1024-column chunks, accumulate on and off, several products in one call.
//
// Tolerances follow from the rounding the path does. Each product term w_c x_c is formed from
// bf16 values (8 significant bits: round to nearest even errs by at most 2^-8 relative). The
// quantized types take w and x rounded once each, errors uniform within those bounds, so the
// sum's error has a standard deviation of at most 2^-8 sqrt(2/3) sqrt(sum_c (w_c x_c)^2); the
// bound is six of those. BF16 weights are exact and their x is split into two bf16 halves
// (hi + lo errs by at most 2^-16 relative per term); F16 / F32 split both sides and drop
// w_lo x_lo (three errors of at most 2^-16 per term, worst case summed: 2^-14). All paths add f32
// accumulation, 1e-5 |w_r|_2 |x_t|_2, as the float paths' tests do. A wrong tile, pair order, scale
// or padding moves whole groups of terms and lands far outside.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/cpu/amx_matmul.h"
#include "engine/cpu/quant_matmul.h"
#include "engine/gguf/quants.h"
#include "tests/unit/cpu/cpu_test_support.h"
#include "tests/unit/cpu/random_weights.h"

namespace vkllm::cpu {
namespace {

using gguf::TensorType;
using test::SeededRng;

using test::make_weights;
using test::Weights;
const auto& kTypes = test::kAllWeightTypes;

// Columns past one 1024-column chunk and, for the float types, not a multiple of 32.
uint64_t cols_for(TensorType type) {
  const uint32_t block = gguf::traits(type).block_elements;
  if (block == 1) return 1100 + 3;
  if (block == 32) return 32 * 37;
  return 256 * 5;
}

void check(const Weights& w, const std::vector<float>& x, uint64_t x_stride, uint32_t n,
           const Product& p, const std::vector<float>& y0) {
  const TensorType type = w.view.type;
  for (uint32_t t = 0; t < n; ++t) {
    const float* xt = x.data() + t * x_stride;
    double xnorm = 0;
    for (uint64_t c = 0; c < w.view.cols; ++c) xnorm += double(xt[c]) * xt[c];
    xnorm = std::sqrt(xnorm);
    for (uint64_t r = 0; r < w.view.rows; ++r) {
      const float* wr = w.values.data() + r * w.view.cols;
      double ref = 0, wnorm = 0, abs_sum = 0, sq_sum = 0;
      for (uint64_t c = 0; c < w.view.cols; ++c) {
        const double term = double(wr[c]) * xt[c];
        ref += term;
        wnorm += double(wr[c]) * wr[c];
        abs_sum += std::fabs(term);
        sq_sum += term * term;
      }
      double tol = 1e-5 * std::sqrt(wnorm) * xnorm + 1e-30;
      if (type == TensorType::F16 || type == TensorType::F32) {
        tol += std::ldexp(abs_sum, -14);
      } else if (type == TensorType::BF16) {
        tol += std::ldexp(abs_sum, -16);
      } else {
        tol += 6.0 * std::ldexp(std::sqrt(2.0 / 3.0 * sq_sum), -8);
      }
      const size_t at = t * p.y_stride + r;
      const double want = (p.accumulate ? double(y0[at]) : 0.0) + ref;
      ASSERT_NEAR(p.y[at], want, tol) << "token " << t << " row " << r;
    }
  }
}

bool has_amx() {
  return supported_isa() >= Isa::Amx;
}

TEST(AmxMatmul, EveryTypeMatchesTheReference) {
  if (!has_amx()) GTEST_SKIP() << "this CPU (or OS) has no AMX-BF16: the AMX path cannot run";
  SeededRng rng;
  ThreadPool pool(3);
  MatmulWorkspace ws;
  for (TensorType type : kTypes) {
    const uint64_t cols = cols_for(type);
    const uint64_t rows = 45;  // not a multiple of 16 or of a task's rows
    const Weights w = make_weights(rng, type, rows, cols);
    const Product probe{&w.view, nullptr, 0, false};
    for (uint32_t n : {detail::amx_min_tokens(std::span(&probe, 1)), 47u, 97u}) {
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(std::string(gguf::type_name(type)) + " n=" + std::to_string(n) +
                     (accumulate ? " accumulate" : ""));
        const uint64_t x_stride = cols + 7, y_stride = rows + 5;
        const std::vector<float> x = rng.vec(n * x_stride, -2.f, 2.f);
        std::vector<float> y = rng.vec(n * y_stride);
        const std::vector<float> y0 = y;
        const Product p{&w.view, y.data(), y_stride, accumulate};
        matmul(std::span(&p, 1), x.data(), x_stride, n, pool, ws, Isa::Amx);
        check(w, x, x_stride, n, p, y0);
        // Outside the product's rows, y is untouched.
        for (uint32_t t = 0; t < n; ++t) {
          for (uint64_t r = rows; r < y_stride; ++r)
            ASSERT_EQ(y[t * y_stride + r], y0[t * y_stride + r]);
        }
      }
    }
  }
}

TEST(AmxMatmul, LongPromptsAndSeveralProductsInOneCall) {
  if (!has_amx()) GTEST_SKIP() << "this CPU (or OS) has no AMX-BF16: the AMX path cannot run";
  SeededRng rng;
  const uint64_t cols = 2048 + 256;  // three chunks, the last partial
  // The Llama Q4_K_M mix plus Q8_0 and the float types, sharing one output row as Q|K|V do.
  const TensorType types[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0,
                              TensorType::F16,  TensorType::BF16, TensorType::Q5_0};
  const uint64_t rows[] = {67, 16, 5, 130, 33, 9};
  uint64_t y_stride = 0;
  std::vector<Weights> weights;
  for (size_t i = 0; i < std::size(types); ++i) {
    weights.push_back(make_weights(rng, types[i], rows[i], cols));
    y_stride += rows[i];
  }
  // With 4 threads the 600-token call is split by tokens as well as rows (too few rows to give
  // every thread four tasks).
  for (unsigned threads : {1u, 4u}) {
    ThreadPool pool(threads);
    MatmulWorkspace ws;
    for (uint32_t n : {600u, 35u}) {
      SCOPED_TRACE("threads=" + std::to_string(threads) + " n=" + std::to_string(n));
      const std::vector<float> x = rng.vec(n * cols, -3.f, 3.f);
      std::vector<float> y = rng.vec(n * y_stride);
      const std::vector<float> y0 = y;
      std::vector<Product> products;
      uint64_t offset = 0;
      for (size_t i = 0; i < weights.size(); ++i) {
        products.push_back({&weights[i].view, y.data() + offset, y_stride, i % 2 == 1});
        offset += rows[i];
      }
      matmul(products, x.data(), cols, n, pool, ws, Isa::Amx);
      // Each product is checked against its own slice of the shared rows; a product writing
      // past its rows breaks its neighbour's check.
      for (size_t i = 0; i < weights.size(); ++i) {
        SCOPED_TRACE(gguf::type_name(types[i]));
        const uint64_t off = products[i].y - y.data();
        std::vector<float> y0_slice(y0.begin() + off, y0.end());
        check(weights[i], x, cols, n, products[i], y0_slice);
      }
    }
  }
}

}  // namespace
}  // namespace vkllm::cpu
