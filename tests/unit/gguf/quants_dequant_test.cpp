// Dequantization of hand-built blocks (random bytes, sane scales) against a plain per-element
// reference written from the format descriptions, independent of the library's block loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "engine/gguf/quants.h"
#include "tests/unit/gguf/quants_test_util.h"

namespace vkllm::gguf {
namespace {

// The IQ4_NL codebook as published with the format.
constexpr int kCodebook[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                               1,    13,   25,  38,  53,  69,  89,  113};

double half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}
int s8(uint8_t b) {
  return static_cast<int8_t>(b);
}
// Nibble i of a 32-element run stored in 16 bytes: elements 0..15 low, 16..31 high.
int nibble32(const uint8_t* qs, size_t i) {
  return (qs[i % 16] >> (4 * (i / 16))) & 15;
}

// 6-bit scale/min j of Q4_K/Q5_K's 12-byte field.
void k4_scale_min(const uint8_t* s, size_t j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

struct Format {
  TensorType type;
  size_t block_elements;
  size_t block_bytes;
  std::vector<size_t> half_offsets;  // fp16 scale fields to overwrite with sane values
  std::function<double(const uint8_t*, size_t)> element;
};

std::vector<Format> formats() {
  std::vector<Format> f;
  f.push_back({TensorType::Q4_0, 32, 18, {0}, [](const uint8_t* p, size_t i) {
                 return (nibble32(p + 2, i) - 8) * half_at(p);
               }});
  f.push_back({TensorType::Q4_1, 32, 20, {0, 2}, [](const uint8_t* p, size_t i) {
                 return nibble32(p + 4, i) * half_at(p) + half_at(p + 2);
               }});
  f.push_back({TensorType::Q5_0, 32, 22, {0}, [](const uint8_t* p, size_t i) {
                 const int hi = (p[2 + i / 8] >> (i % 8)) & 1;
                 return ((nibble32(p + 6, i) | hi << 4) - 16) * half_at(p);
               }});
  f.push_back({TensorType::Q5_1, 32, 24, {0, 2}, [](const uint8_t* p, size_t i) {
                 const int hi = (p[4 + i / 8] >> (i % 8)) & 1;
                 return (nibble32(p + 8, i) | hi << 4) * half_at(p) + half_at(p + 2);
               }});
  f.push_back({TensorType::Q8_0, 32, 34, {0}, [](const uint8_t* p, size_t i) {
                 return s8(p[2 + i]) * half_at(p);
               }});
  f.push_back({TensorType::Q8_1, 32, 36, {0, 2}, [](const uint8_t* p, size_t i) {
                 return s8(p[4 + i]) * half_at(p);
               }});
  f.push_back({TensorType::Q2_K, 256, 84, {80, 82}, [](const uint8_t* p, size_t i) {
                 const int sc = p[i / 16];
                 const int q = (p[16 + 32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
                 return half_at(p + 80) * (sc & 15) * q - half_at(p + 82) * (sc >> 4);
               }});
  f.push_back({TensorType::Q3_K, 256, 110, {108}, [](const uint8_t* p, size_t i) {
                 const size_t g = i / 16;
                 const uint8_t* s = p + 96;
                 const int low = (s[g % 8] >> (4 * (g / 8))) & 15;
                 const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
                 const int scale = (low | high << 4) - 32;
                 const int q2 = (p[32 + 32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
                 const int hbit = (p[i % 32] >> (i / 32)) & 1;
                 return half_at(p + 108) * scale * ((q2 | hbit << 2) - 4);
               }});
  f.push_back({TensorType::Q4_K, 256, 144, {0, 2}, [](const uint8_t* p, size_t i) {
                 int sc, m;
                 k4_scale_min(p + 4, i / 32, sc, m);
                 const int q = (p[16 + 32 * (i / 64) + i % 32] >> (4 * ((i % 64) / 32))) & 15;
                 return half_at(p) * sc * q - half_at(p + 2) * m;
               }});
  f.push_back({TensorType::Q5_K, 256, 176, {0, 2}, [](const uint8_t* p, size_t i) {
                 int sc, m;
                 k4_scale_min(p + 4, i / 32, sc, m);
                 const int low = (p[48 + 32 * (i / 64) + i % 32] >> (4 * ((i % 64) / 32))) & 15;
                 const int hbit = (p[16 + i % 32] >> (i / 32)) & 1;
                 return half_at(p) * sc * (low | hbit << 4) - half_at(p + 2) * m;
               }});
  f.push_back({TensorType::Q6_K, 256, 210, {208}, [](const uint8_t* p, size_t i) {
                 const size_t h = i / 128, k = (i % 128) / 32, l = i % 32;
                 const int low = (p[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 15;
                 const int high = (p[128 + 32 * h + l] >> (2 * k)) & 3;
                 return half_at(p + 208) * s8(p[192 + i / 16]) * ((low | high << 4) - 32);
               }});
  f.push_back({TensorType::Q8_K, 256, 292, {}, [](const uint8_t* p, size_t i) {
                 float d;
                 std::memcpy(&d, p, 4);
                 return double{d} * s8(p[4 + i]);
               }});
  f.push_back({TensorType::IQ4_NL, 32, 18, {0}, [](const uint8_t* p, size_t i) {
                 return half_at(p) * kCodebook[nibble32(p + 2, i)];
               }});
  f.push_back({TensorType::IQ4_XS, 256, 136, {0}, [](const uint8_t* p, size_t i) {
                 const size_t g = i / 32;
                 const int scales_h = p[2] | p[3] << 8;
                 const int ls = ((p[4 + g / 2] >> (4 * (g % 2))) & 15) | ((scales_h >> (2 * g)) & 3)
                                                                             << 4;
                 return half_at(p) * (ls - 32) * kCodebook[nibble32(p + 8 + 16 * g, i % 32)];
               }});
  return f;
}

TEST(QuantsDequantize, HandBuiltBlocksMatchScalarReference) {
  auto rng = test::seeded_rng();
  constexpr size_t kBlocks = 64;
  for (const Format& f : formats()) {
    SCOPED_TRACE(test::format_name(f.type));
    ASSERT_TRUE(can_dequantize(f.type));
    ASSERT_EQ(quantized_size(f.type, kBlocks * f.block_elements), kBlocks * f.block_bytes);
    // One spare byte in front makes the input deliberately misaligned.
    std::vector<uint8_t> storage(kBlocks * f.block_bytes + 1);
    uint8_t* data = storage.data() + 1;
    test::random_bytes(rng, data, kBlocks * f.block_bytes);
    for (size_t b = 0; b < kBlocks; ++b) {
      uint8_t* blk = data + b * f.block_bytes;
      for (size_t off : f.half_offsets) {
        const uint16_t h = test::random_half(rng, -12, 2);
        std::memcpy(blk + off, &h, 2);
      }
      if (f.type == TensorType::Q8_K) {
        const float d = std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f, -7);
        std::memcpy(blk, &d, 4);
      }
    }
    std::vector<float> out(kBlocks * f.block_elements);
    dequantize(f.type, data, out.data(), out.size());
    size_t nonzero = 0;
    for (size_t b = 0; b < kBlocks; ++b) {
      const uint8_t* blk = data + b * f.block_bytes;
      for (size_t i = 0; i < f.block_elements; ++i) {
        const double expected = f.element(blk, i);
        const float got = out[b * f.block_elements + i];
        ASSERT_NEAR(got, expected, 1e-6 * std::fabs(expected) + 1e-9)
            << "block " << b << " element " << i;
        nonzero += got != 0.0f;
      }
    }
    EXPECT_GT(nonzero, out.size() / 2);
  }
}

TEST(QuantsDequantize, ResultIndependentOfThreadCount) {
  auto rng = test::seeded_rng();
  const size_t n = 256 * 3000;  // enough blocks to be split across threads
  const auto x = test::random_values(rng, n, test::Distribution::kNormal, 1.0f);
  for (auto type : {TensorType::Q4_K, TensorType::Q8_0, TensorType::F16}) {
    std::vector<uint8_t> one(quantized_size(type, n)), many(one.size());
    quantize(type, x.data(), one.data(), n, 1);
    quantize(type, x.data(), many.data(), n, 7);
    EXPECT_EQ(one, many) << test::format_name(type);
    std::vector<float> y1(n), y7(n);
    dequantize(type, one.data(), y1.data(), n, 1);
    dequantize(type, one.data(), y7.data(), n, 7);
    EXPECT_EQ(y1, y7) << test::format_name(type);
  }
}

TEST(QuantsDequantize, RejectsBadSizesAndUnsupportedTypes) {
  std::vector<uint8_t> bytes(1024);
  std::vector<float> floats(512);
  EXPECT_THROW(dequantize(TensorType::Q4_K, bytes.data(), floats.data(), 100),
               std::invalid_argument);
  EXPECT_THROW(quantize(TensorType::Q8_0, floats.data(), bytes.data(), 33), std::invalid_argument);
  EXPECT_THROW(dequantize(TensorType::I32, bytes.data(), floats.data(), 4), std::invalid_argument);
  EXPECT_THROW(quantize(TensorType::IQ4_XS, floats.data(), bytes.data(), 256),
               std::invalid_argument);
  EXPECT_FALSE(can_dequantize(TensorType::I8));
  EXPECT_TRUE(can_dequantize(TensorType::IQ4_XS));
  EXPECT_FALSE(can_quantize(TensorType::IQ4_XS));
  EXPECT_TRUE(can_quantize(TensorType::Q6_K));
  try {
    dequantize(TensorType::Q4_K, bytes.data(), floats.data(), 100);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkllm::gguf
