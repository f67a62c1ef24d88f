// Shared helpers of the quants tests: seeded random data and error statistics.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/quants.h"

namespace vkllm::gguf::test {

// A generator seeded from std::random_device; the seed is recorded in the test's output so a
// failing run can be reproduced.
inline std::mt19937_64 seeded_rng() {
  const uint64_t seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  std::printf("[   seed   ] %llu\n", static_cast<unsigned long long>(seed));
  return std::mt19937_64(seed);
}

enum class Distribution { kNormal, kUniform };

// Test-local names, so these tests do not depend on the traits table.
inline std::string format_name(TensorType type) {
  switch (type) {
    case TensorType::F32:
      return "F32";
    case TensorType::F16:
      return "F16";
    case TensorType::BF16:
      return "BF16";
    case TensorType::Q4_0:
      return "Q4_0";
    case TensorType::Q4_1:
      return "Q4_1";
    case TensorType::Q5_0:
      return "Q5_0";
    case TensorType::Q5_1:
      return "Q5_1";
    case TensorType::Q8_0:
      return "Q8_0";
    case TensorType::Q8_1:
      return "Q8_1";
    case TensorType::Q2_K:
      return "Q2_K";
    case TensorType::Q3_K:
      return "Q3_K";
    case TensorType::Q4_K:
      return "Q4_K";
    case TensorType::Q5_K:
      return "Q5_K";
    case TensorType::Q6_K:
      return "Q6_K";
    case TensorType::Q8_K:
      return "Q8_K";
    case TensorType::IQ4_NL:
      return "IQ4_NL";
    case TensorType::IQ4_XS:
      return "IQ4_XS";
    default:
      return "type" + std::to_string(static_cast<uint32_t>(type));
  }
}

inline std::vector<float> random_values(std::mt19937_64& rng, size_t n, Distribution dist,
                                        float scale) {
  std::vector<float> v(n);
  std::normal_distribution<float> normal(0.0f, scale);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (auto& x : v) x = dist == Distribution::kNormal ? normal(rng) : uniform(rng);
  return v;
}

inline double rms(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double{x[i]} * x[i];
  return std::sqrt(s / static_cast<double>(n));
}

inline double rmse(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double{a[i]} - b[i];
    s += d * d;
  }
  return std::sqrt(s / static_cast<double>(n));
}

// Quantizes and dequantizes; returns the reconstruction.
inline std::vector<float> round_trip(TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(quantized_size(type, x.size()));
  quantize(type, x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize(type, q.data(), y.data(), x.size());
  return y;
}

// Random fp16 with a magnitude in [2^lo_exp, 2^hi_exp), either sign.
inline uint16_t random_half(std::mt19937_64& rng, int lo_exp, int hi_exp, bool positive = false) {
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(lo_exp, hi_exp - 1);
  float v = std::ldexp(mant(rng), ex(rng));
  if (!positive && (rng() & 1)) v = -v;
  return fp32_to_fp16(v);
}

inline void random_bytes(std::mt19937_64& rng, uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

}  // namespace vkllm::gguf::test
