// MXFP4 (GGUF type 39): the quantizer against the bytes ggml's quantize_row_mxfp4_ref wrote for
// fixed rows (tests/reference/mxfp4), and both directions against the format's scalar definition
// (OCP microscaling: value = E2M1 code * 2^(E8M0 - 127)) on fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/quants.h"
#include "tests/unit/gguf/quants_test_util.h"

namespace vkllm::gguf {
namespace {

constexpr size_t kBlock = 32, kBlockBytes = 17;

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  return out;
}

// E2M1 from its definition: sign, 2 exponent bits (bias 1), 1 mantissa bit; exponent 0 is
// subnormal (0 or 0.5).
double e2m1(uint8_t code) {
  const int e = (code >> 1) & 3, m = code & 1;
  const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
  return code & 8 ? -mag : mag;
}

float scalar_value(uint8_t e8m0, uint8_t code) {
  return static_cast<float>(e2m1(code) * std::ldexp(1.0, int{e8m0} - 127));
}

std::vector<float> dequantized(const std::vector<uint8_t>& q) {
  std::vector<float> y(q.size() / kBlockBytes * kBlock);
  dequantize(TensorType::MXFP4, q.data(), y.data(), y.size(), 1);
  return y;
}

std::vector<uint8_t> quantized(const std::vector<float>& x) {
  std::vector<uint8_t> q(x.size() / kBlock * kBlockBytes);
  quantize(TensorType::MXFP4, x.data(), q.data(), x.size(), 1);
  return q;
}

TEST(Mxfp4, TypeTraits) {
  const auto t = type_traits(39);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->name, "mxfp4");
  EXPECT_EQ(t->block_elements, kBlock);
  EXPECT_EQ(t->block_bytes, kBlockBytes);
  EXPECT_EQ(type_from_name("MXFP4"), TensorType::MXFP4);
  EXPECT_EQ(row_bytes(TensorType::MXFP4, 2880), 2880 / 32 * 17);
  EXPECT_TRUE(can_quantize(TensorType::MXFP4));
}

// ggml's bytes for Gaussian rows over many block scales, every midpoint between codes, clamped
// values, zero / NaN / infinite / huge / subnormal blocks and values just below powers of two
// (where log2f rounds up): ours must be identical, byte for byte.
TEST(Mxfp4, QuantizerMatchesGgmlByteForByte) {
  const auto path =
      std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/reference/mxfp4/ggml_rows.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const auto doc = nlohmann::json::parse(in);
  ASSERT_GE(doc.at("cases").size(), 10u);
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name");
    const std::vector<uint8_t> raw = from_hex(c.at("input_f32_le"));
    const std::vector<uint8_t> want = from_hex(c.at("mxfp4"));
    std::vector<float> x(raw.size() / 4);
    std::memcpy(x.data(), raw.data(), raw.size());
    ASSERT_EQ(want.size(), x.size() / kBlock * kBlockBytes) << name;
    const std::vector<uint8_t> got = quantized(x);
    for (size_t b = 0; b < want.size() / kBlockBytes; ++b) {
      for (size_t i = 0; i < kBlockBytes; ++i) {
        ASSERT_EQ(got[b * kBlockBytes + i], want[b * kBlockBytes + i])
            << name << ": block " << b << " byte " << i << (i == 0 ? " (exponent)" : " (codes)");
      }
    }
  }
}

// Every exponent byte with random codes decodes to code * 2^(e - 127) exactly.
TEST(Mxfp4, DequantizeMatchesScalarDefinition) {
  auto rng = test::seeded_rng();
  std::vector<uint8_t> q(256 * kBlockBytes);
  for (auto& b : q) b = static_cast<uint8_t>(rng());
  for (size_t b = 0; b < 256; ++b) q[b * kBlockBytes] = static_cast<uint8_t>(b);
  const std::vector<float> y = dequantized(q);
  for (size_t b = 0; b < 256; ++b) {
    const uint8_t* blk = q.data() + b * kBlockBytes;
    for (size_t j = 0; j < 16; ++j) {
      ASSERT_EQ(y[b * kBlock + j], scalar_value(blk[0], blk[1 + j] & 15)) << "e " << b;
      ASSERT_EQ(y[b * kBlock + 16 + j], scalar_value(blk[0], blk[1 + j] >> 4)) << "e " << b;
    }
  }
}

// Fresh random blocks at scales from 2^-100 to 2^100: the exponent is floor(log2 amax) - 2 + 127
// (log2f may round a value just below the next power up to it: its result near |log2| = 100
// has an ulp of 2^-17, so within a relative 2^-16 of the power; 2^-20 failed about one run in
// 130, at amax 2^-59 less 1.3e-6 relative), and every value decodes to the code nearest to it at
// that scale (the lower-magnitude one at a midpoint).
TEST(Mxfp4, RoundTripPicksTheNearestCode) {
  auto rng = test::seeded_rng();
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(-100, 100);
  constexpr size_t kBlocks = 2000;
  std::vector<float> x(kBlocks * kBlock);
  for (size_t b = 0; b < kBlocks; ++b) {
    const float scale = std::ldexp(1.0f, exponent(rng));
    for (size_t j = 0; j < kBlock; ++j) x[b * kBlock + j] = normal(rng) * scale;
  }
  const std::vector<uint8_t> q = quantized(x);
  const std::vector<float> y = dequantized(q);
  double err2 = 0, sig2 = 0;
  for (size_t b = 0; b < kBlocks; ++b) {
    float amax = 0;
    for (size_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[b * kBlock + j]));
    const int e = q[b * kBlockBytes];
    const int exact = std::ilogb(amax) + 125;
    const bool rounded_up = e == exact + 1 && amax >= std::ldexp(1.0f - 0x1p-16f, exact - 124);
    ASSERT_TRUE(e == exact || rounded_up) << "block " << b << " amax " << amax << " e " << e;
    for (size_t j = 0; j < kBlock; ++j) {
      const float v = x[b * kBlock + j], got = y[b * kBlock + j];
      double best = std::numeric_limits<double>::infinity();
      for (uint8_t c = 0; c < 16; ++c) {
        best = std::min(best, std::fabs(double(scalar_value(uint8_t(e), c)) - v));
      }
      ASSERT_EQ(std::fabs(double(got) - v), best) << "block " << b << " element " << j;
      err2 += (double(got) - v) * (double(got) - v) / (double(amax) * amax);
      sig2 += double(v) * v / (double(amax) * amax);
    }
  }
  // E2M1 on normal data: about 11% relative RMSE (the codes are 0.5 apart near the top).
  const double rel = std::sqrt(err2 / sig2);
  std::printf("MXFP4 relative RMSE on normal blocks: %.4f\n", rel);
  EXPECT_GT(rel, 0.05);
  EXPECT_LT(rel, 0.16);
}

// Blocks no scale formula should trip on: all zero (exponent 0, codes 0), NaN elements (code 0,
// the rest of the block unharmed), an infinite element (ggml's exponent 0: the whole block
// decodes to zeros), the largest floats and subnormals.
TEST(Mxfp4, SpecialBlocks) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(5 * kBlock, 0.0f);
  for (size_t j = 0; j < kBlock; ++j) {
    x[kBlock + j] = j % 3 == 0 ? nan : 0.5f;
    x[2 * kBlock + j] = j == 5 ? inf : (j % 2 ? -1.0f : 1.0f);
    x[3 * kBlock + j] = j == 0 ? 3e38f : 1e37f;
    x[4 * kBlock + j] = j == 0 ? 1e-39f : 1e-41f;
  }
  x[kBlock + 1] = 2.0f;
  const std::vector<uint8_t> q = quantized(x);
  const std::vector<float> y = dequantized(q);
  EXPECT_EQ(q[0], 0);
  for (size_t j = 0; j < kBlock; ++j) EXPECT_EQ(y[j], 0.0f);
  EXPECT_EQ(q[kBlockBytes], 126);  // amax 2: 2^(1 - 2)
  for (size_t j = 0; j < kBlock; ++j) {
    EXPECT_EQ(y[kBlock + j], j % 3 == 0 ? 0.0f : (j == 1 ? 2.0f : 0.5f)) << j;
  }
  EXPECT_EQ(q[2 * kBlockBytes], 0);
  // Scale 2^-128: every code is 1.0 - (a subnormal) = 1.0 away from +-1 in float, so the first,
  // code 0, wins everywhere (as in ggml).
  for (size_t j = 0; j < kBlock; ++j) EXPECT_EQ(y[2 * kBlock + j], 0.0f) << j;
  EXPECT_EQ(q[3 * kBlockBytes], 127 + 127 - 2);
  EXPECT_NEAR(y[3 * kBlock], 3e38f, 0.16 * 3e38);  // 12 * 2^124, the largest code
  for (size_t j = 0; j < 5 * kBlock; ++j) {
    if (j / kBlock != 2) {
      EXPECT_TRUE(std::isfinite(y[j])) << j;
    }
  }
  // amax 1e-39 = 1.36 * 2^-130: -130 - 2 + 127 = -5 wraps to 251 in ggml (and here), a huge
  // scale at which every value is nearest to code 0.
  EXPECT_EQ(q[4 * kBlockBytes], 251);
  for (size_t j = 0; j < kBlock; ++j) EXPECT_EQ(y[4 * kBlock + j], 0.0f);
}

}  // namespace
}  // namespace vkllm::gguf
