// Packed on-disk block structs of the ggml quantized formats, bit for bit as ggml stores them.
// GPU kernels mirror these layouts, so every size is pinned by a static_assert below.
// Half-precision fields are raw IEEE binary16 bits (see fp16_to_fp32 in quants.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vkllm::gguf {

inline constexpr size_t kLegacyBlock = 32;  // elements per Q4_0..Q8_1 / IQ4_NL block
inline constexpr size_t kSuperBlock = 256;  // elements per K-quant / IQ4_XS super-block
inline constexpr size_t kKScaleBytes = 12;  // packed 6-bit scales/mins of Q3_K/Q4_K/Q5_K

// x[j] = (nibble_j - 8) * d. Element j < 16 is the low nibble of qs[j], j >= 16 the high nibble
// of qs[j - 16].
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kLegacyBlock / 2];
};

// x[j] = nibble_j * d + m, nibbles placed as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kLegacyBlock / 2];
};

// x[j] = (q_j - 16) * d with q_j = nibble_j | bit j of qh (little-endian u32) << 4.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlock / 2];
};

// x[j] = q_j * d + m, q_j as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlock / 2];
};

// x[j] = qs[j] * d.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kLegacyBlock];
};

// Q8_0 plus s = d * sum(qs), used by ggml for dot products against Q4_1/Q5_1.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kLegacyBlock];
};

// 16 groups of 16: x = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4), q 2-bit.
// Element i of each 128-half h lives in qs[32 h + i % 32] at bit 2 * (i / 32).
struct BlockQ2_K {
  uint8_t scales[kSuperBlock / 16];
  uint8_t qs[kSuperBlock / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 groups of 16 with signed 6-bit scales (stored +32): x = d * (scale_g - 32) * (q - 4),
// q = 2 low bits (qs, placed as in Q2_K) | hmask bit << 2.
struct BlockQ3_K {
  uint8_t hmask[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 4];
  uint8_t scales[kKScaleBytes];
  uint16_t d;
};

// 8 groups of 32 with 6-bit scale and min: x = d * sc_g * q - dmin * m_g, q 4-bit.
// Groups 2c and 2c+1 share qs[32 c .. 32 c + 31] as low and high nibbles.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kSuperBlock / 2];
};

// Q4_K plus a fifth bit per element: bit (2 c) / (2 c + 1) of qh[i % 32] for groups 2c / 2c+1.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};

// 16 groups of 16 with int8 scales: x = d * scales[g] * (q - 32), q 6-bit = 4 bits of ql and
// 2 bits of qh.
struct BlockQ6_K {
  uint8_t ql[kSuperBlock / 2];
  uint8_t qh[kSuperBlock / 4];
  int8_t scales[kSuperBlock / 16];
  uint16_t d;
};

// Intermediate format of ggml's CPU dot products; d is a full float.
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlock];
  int16_t bsums[kSuperBlock / 16];
};

// Non-linear 4-bit: x[j] = d * kIq4nlValues[nibble_j], nibbles placed as in Q4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kLegacyBlock / 2];
};

// 8 groups of 32 with 6-bit scales (low 4 bits in scales_l, high 2 in scales_h), stored +32:
// x = d * (scale_g - 32) * kIq4nlValues[nibble].
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kSuperBlock / 64];
  uint8_t qs[kSuperBlock / 2];
};

// The IQ4_NL / IQ4_XS codebook.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// MXFP4 (OCP microscaling FP4): 32 E2M1 values sharing one E8M0 exponent byte, nibbles placed as
// in Q4_0. x[j] = kMxfp4Values[nibble_j] * mxfp4_half_scale(e): the table holds twice the E2M1
// values (so it stays integral) and the scale is half of 2^(e - 127).
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kLegacyBlock / 2];
};

// E2M1 (sign, 2 exponent bits, 1 mantissa bit) doubled: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives.
inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) as a float, bit-exact for every byte: e = 0 and 1 are the subnormals 2^-128 and
// 2^-127. (e = 255, NaN in the OCP format, reads as 2^127 as in ggml; ggml's validation rejects
// it in files.)
inline float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : uint32_t{e - 1u} << 23;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

static_assert(offsetof(BlockQ4_K, qs) == 16);
static_assert(offsetof(BlockQ5_K, qs) == 48);
static_assert(offsetof(BlockQ6_K, d) == 208);
static_assert(offsetof(BlockQ3_K, d) == 108);
static_assert(offsetof(BlockQ2_K, d) == 80);

}  // namespace vkllm::gguf
