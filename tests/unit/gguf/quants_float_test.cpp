// fp16 / bf16 conversions: exhaustive decoding, round-to-nearest-even encoding checked against a
// brute-force nearest-value search, and the special values (NaN, Inf, subnormals, overflow).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/gguf/quants.h"
#include "tests/unit/gguf/quants_test_util.h"

namespace vkllm::gguf {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// binary16 value from its fields, in double.
double half_value(uint16_t h) {
  const int exponent = (h >> 10) & 31, mantissa = h & 1023;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Nearest binary16 (ties to even) by search over all positive encodings. Inf takes part as
// 65536, the value the next exponent would give, as IEEE 754's overflow rule prescribes.
uint16_t nearest_half(float f) {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (uint32_t h = 0; h <= 0x7c00; ++h) v.push_back(h == 0x7c00 ? 65536.0 : half_value(h));
    return v;
  }();
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double{f});
  if (a >= 65536.0) return sign | 0x7c00;
  const auto it = std::lower_bound(values.begin(), values.end(), a);
  const auto hi = static_cast<uint16_t>(it - values.begin());
  if (values[hi] == a || hi == 0) return sign | hi;
  const auto lo = static_cast<uint16_t>(hi - 1);
  const double dlo = a - values[lo], dhi = values[hi] - a;
  if (dlo < dhi) return sign | lo;
  if (dhi < dlo) return sign | hi;
  return sign | ((lo & 1) ? hi : lo);
}

TEST(Fp16, DecodesEveryEncoding) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float got = fp16_to_fp32(static_cast<uint16_t>(h));
    const double expected = half_value(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    } else {
      ASSERT_EQ(got, expected) << std::hex << h;
      ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    }
  }
}

TEST(Fp16, EncodeDecodeIsIdentityAndNaNStaysNaN) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t back = fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h)));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      ASSERT_EQ(back & 0x7c00, 0x7c00) << std::hex << h;
      ASSERT_NE(back & 0x3ff, 0) << "NaN became Inf: " << std::hex << h;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(Fp16, RoundsRandomFloatsToNearestEven) {
  auto rng = test::seeded_rng();
  // Exponents from float subnormals through fp16 subnormals, normals and overflow.
  std::uniform_int_distribution<uint32_t> exponent(90, 150);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = (exponent(rng) << 23) | static_cast<uint32_t>(rng() & 0x7fffff);
    if (i % 4 == 0) u = (u & ~0x1fffu) | 0x1000u;  // an exact tie between two normal halves
    if (rng() & 1) u |= 0x80000000u;
    const float f = from_bits(u);
    ASSERT_EQ(fp32_to_fp16(f), nearest_half(f)) << f << " bits " << std::hex << u;
  }
}

TEST(Fp16, SpecialValuesAndTies) {
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);      // tie, down to even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie, up to even
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);             // largest finite
  EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // tie with the overflow value
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);             // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);             // tie, down to zero
  EXPECT_EQ(fp32_to_fp16(3 * 0x1p-25f), 0x0002);         // tie, up to even
  EXPECT_EQ(fp32_to_fp16(0x1p-14f - 0x1p-25f), 0x0400);  // rounds up into the normals
  EXPECT_EQ(fp32_to_fp16(0x1p-149f), 0x0000);            // float subnormal
  const uint16_t nan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(nan)));
  // A signalling NaN whose payload lies only in the dropped low bits must not become Inf.
  const uint16_t low_payload = fp32_to_fp16(from_bits(0xff800001u));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(low_payload)));
  EXPECT_EQ(low_payload & 0x8000, 0x8000);
}

TEST(Bf16, RoundsToNearestEvenAndKeepsSpecials) {
  auto rng = test::seeded_rng();
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 4 == 0) u = (u & ~0xffffu) | 0x8000u;  // exact tie
    const float f = from_bits(u);
    const uint16_t got = fp32_to_bf16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16_to_fp32(got))) << std::hex << u;
      ASSERT_EQ(got & 0x8000, (u >> 16) & 0x8000) << std::hex << u;
      continue;
    }
    // Candidates: truncation and the next encoding up in magnitude; Inf counts as 2^128.
    const uint16_t lo = static_cast<uint16_t>(u >> 16), hi = static_cast<uint16_t>(lo + 1);
    auto value = [](uint16_t b) {
      if ((b & 0x7fff) == 0x7f80) return std::copysign(0x1p128, (b & 0x8000) ? -1.0 : 1.0);
      return double{bf16_to_fp32(b)};
    };
    const double dlo = std::fabs(double{f} - value(lo)), dhi = std::fabs(value(hi) - double{f});
    const uint16_t expected = dlo < dhi ? lo : (dhi < dlo ? hi : ((lo & 1) ? hi : lo));
    ASSERT_EQ(got, expected) << f << " bits " << std::hex << u;
  }
  EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to Inf
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00018000u)), 0x0002);             // subnormal tie, up to even
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00008000u)), 0x0000);  // subnormal tie, down to even
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(from_bits(0x7f800001u)))));  // low payload
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(fp32_to_bf16(f), b) << std::hex << b;
    }
  }
}

TEST(FloatFormats, BulkConversionsMatchScalarOnes) {
  auto rng = test::seeded_rng();
  const auto x = test::random_values(rng, 1000, test::Distribution::kNormal, 100.0f);
  std::vector<uint8_t> f16(2000), b16(2000), f32(4000);
  quantize(TensorType::F16, x.data(), f16.data(), x.size());
  quantize(TensorType::BF16, x.data(), b16.data(), x.size());
  quantize(TensorType::F32, x.data(), f32.data(), x.size());
  std::vector<float> y16(1000), yb(1000), y32(1000);
  dequantize(TensorType::F16, f16.data(), y16.data(), 1000);
  dequantize(TensorType::BF16, b16.data(), yb.data(), 1000);
  dequantize(TensorType::F32, f32.data(), y32.data(), 1000);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y16[i], fp16_to_fp32(fp32_to_fp16(x[i])));
    ASSERT_EQ(yb[i], bf16_to_fp32(fp32_to_bf16(x[i])));
    ASSERT_EQ(to_bits(y32[i]), to_bits(x[i]));
  }
}

}  // namespace
}  // namespace vkllm::gguf
