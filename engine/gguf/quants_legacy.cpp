// The 32-element "legacy" formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q8_1.
// Quantizers follow ggml's reference rules (one scale from the block's extreme value, or
// min/max for the _1 variants), so files match what llama.cpp writes.
#include <cmath>
#include <cstring>

#include "engine/gguf/block_layouts.h"
#include "engine/gguf/quants.h"
#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf::detail {
namespace {

constexpr size_t kHalf = kLegacyBlock / 2;

// Truncates toward zero like a C cast, but NaN and out-of-range inputs clamp instead of being UB.
int truncate_clamped(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(v);
}

// The signed value with the largest magnitude (first one on ties), as ggml picks it.
float signed_extreme(const float* x, size_t n) {
  float amax = 0.0f, extreme = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      extreme = x[j];
    }
  }
  return extreme;
}

void min_max(const float* x, size_t n, float& lo, float& hi) {
  lo = x[0];
  hi = x[0];
  for (size_t j = 1; j < n; ++j) {
    lo = std::fmin(lo, x[j]);
    hi = std::fmax(hi, x[j]);
  }
}

uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Nibble j of a 32-element block: low nibbles hold elements 0..15, high nibbles 16..31.
int nibble(const uint8_t* qs, size_t j) {
  return j < kHalf ? qs[j] & 15 : qs[j - kHalf] >> 4;
}

void pack_nibbles(const int* q, uint8_t* qs) {
  for (size_t j = 0; j < kHalf; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 15) | (q[j + kHalf] & 15) << 4);
}

// ---- Q4_0 ----
void dequantize_q4_0(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockQ4_0>(src, b);
    const float d = fp16_to_fp32(blk.d);
    for (size_t j = 0; j < kLegacyBlock; ++j)
      dst[j] = static_cast<float>(nibble(blk.qs, j) - 8) * d;
  }
}
void quantize_q4_0(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    // Scale so that the extreme value maps to -8, using the asymmetric range fully.
    const float d = signed_extreme(src, kLegacyBlock) / -8.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 blk;
    blk.d = fp32_to_fp16(d);
    int q[kLegacyBlock];
    for (size_t j = 0; j < kLegacyBlock; ++j) q[j] = truncate_clamped(src[j] * inv + 8.5f, 0, 15);
    pack_nibbles(q, blk.qs);
    store_block(dst, b, blk);
  }
}

// ---- Q4_1 ----
void dequantize_q4_1(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockQ4_1>(src, b);
    const float d = fp16_to_fp32(blk.d), m = fp16_to_fp32(blk.m);
    for (size_t j = 0; j < kLegacyBlock; ++j)
      dst[j] = static_cast<float>(nibble(blk.qs, j)) * d + m;
  }
}
void quantize_q4_1(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    float lo, hi;
    min_max(src, kLegacyBlock, lo, hi);
    const float d = (hi - lo) / 15.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 blk;
    blk.d = fp32_to_fp16(d);
    blk.m = fp32_to_fp16(lo);
    int q[kLegacyBlock];
    for (size_t j = 0; j < kLegacyBlock; ++j)
      q[j] = truncate_clamped((src[j] - lo) * inv + 0.5f, 0, 15);
    pack_nibbles(q, blk.qs);
    store_block(dst, b, blk);
  }
}

// ---- Q5_0 / Q5_1: nibble plus a fifth bit from qh ----
int five_bit(const uint8_t* qs, uint32_t qh, size_t j) {
  return nibble(qs, j) | static_cast<int>((qh >> j) & 1u) << 4;
}
uint32_t pack_five_bit(const int* q, uint8_t* qs) {
  pack_nibbles(q, qs);
  uint32_t qh = 0;
  for (size_t j = 0; j < kLegacyBlock; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  return qh;
}

void dequantize_q5_0(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockQ5_0>(src, b);
    const float d = fp16_to_fp32(blk.d);
    const uint32_t qh = load_u32(blk.qh);
    for (size_t j = 0; j < kLegacyBlock; ++j)
      dst[j] = static_cast<float>(five_bit(blk.qs, qh, j) - 16) * d;
  }
}
void quantize_q5_0(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    const float d = signed_extreme(src, kLegacyBlock) / -16.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 blk;
    blk.d = fp32_to_fp16(d);
    int q[kLegacyBlock];
    for (size_t j = 0; j < kLegacyBlock; ++j) q[j] = truncate_clamped(src[j] * inv + 16.5f, 0, 31);
    store_u32(blk.qh, pack_five_bit(q, blk.qs));
    store_block(dst, b, blk);
  }
}

void dequantize_q5_1(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockQ5_1>(src, b);
    const float d = fp16_to_fp32(blk.d), m = fp16_to_fp32(blk.m);
    const uint32_t qh = load_u32(blk.qh);
    for (size_t j = 0; j < kLegacyBlock; ++j)
      dst[j] = static_cast<float>(five_bit(blk.qs, qh, j)) * d + m;
  }
}
void quantize_q5_1(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    float lo, hi;
    min_max(src, kLegacyBlock, lo, hi);
    const float d = (hi - lo) / 31.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 blk;
    blk.d = fp32_to_fp16(d);
    blk.m = fp32_to_fp16(lo);
    int q[kLegacyBlock];
    for (size_t j = 0; j < kLegacyBlock; ++j)
      q[j] = truncate_clamped((src[j] - lo) * inv + 0.5f, 0, 31);
    store_u32(blk.qh, pack_five_bit(q, blk.qs));
    store_block(dst, b, blk);
  }
}

// ---- Q8_0 / Q8_1 ----
float max_abs(const float* x, size_t n) {
  float amax = 0.0f;
  for (size_t j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  return amax;
}

// Rounds half away from zero like C's roundf, which is what ggml's Q8 quantizers use.
int8_t round_q8(float v) {
  const float r = std::round(v);
  if (!(r >= -127.0f)) return -127;  // also catches NaN
  if (r > 127.0f) return 127;
  return static_cast<int8_t>(r);
}

void dequantize_q8_0(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockQ8_0>(src, b);
    const float d = fp16_to_fp32(blk.d);
    for (size_t j = 0; j < kLegacyBlock; ++j) dst[j] = static_cast<float>(blk.qs[j]) * d;
  }
}
void quantize_q8_0(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    const float d = max_abs(src, kLegacyBlock) / 127.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 blk;
    blk.d = fp32_to_fp16(d);
    for (size_t j = 0; j < kLegacyBlock; ++j) blk.qs[j] = round_q8(src[j] * inv);
    store_block(dst, b, blk);
  }
}

void dequantize_q8_1(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, dst += kLegacyBlock) {
    const auto blk = load_block<BlockQ8_1>(src, b);
    const float d = fp16_to_fp32(blk.d);
    for (size_t j = 0; j < kLegacyBlock; ++j) dst[j] = static_cast<float>(blk.qs[j]) * d;
  }
}
void quantize_q8_1(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kLegacyBlock) {
    const float d = max_abs(src, kLegacyBlock) / 127.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_1 blk;
    blk.d = fp32_to_fp16(d);
    int sum = 0;
    for (size_t j = 0; j < kLegacyBlock; ++j) {
      blk.qs[j] = round_q8(src[j] * inv);
      sum += blk.qs[j];
    }
    blk.s = fp32_to_fp16(static_cast<float>(sum) * d);
    store_block(dst, b, blk);
  }
}

constexpr FormatKernels kLegacyKernels[] = {
    {TensorType::Q4_0, kLegacyBlock, sizeof(BlockQ4_0), dequantize_q4_0, quantize_q4_0},
    {TensorType::Q4_1, kLegacyBlock, sizeof(BlockQ4_1), dequantize_q4_1, quantize_q4_1},
    {TensorType::Q5_0, kLegacyBlock, sizeof(BlockQ5_0), dequantize_q5_0, quantize_q5_0},
    {TensorType::Q5_1, kLegacyBlock, sizeof(BlockQ5_1), dequantize_q5_1, quantize_q5_1},
    {TensorType::Q8_0, kLegacyBlock, sizeof(BlockQ8_0), dequantize_q8_0, quantize_q8_0},
    {TensorType::Q8_1, kLegacyBlock, sizeof(BlockQ8_1), dequantize_q8_1, quantize_q8_1},
};

}  // namespace

std::span<const FormatKernels> legacy_kernels() {
  return kLegacyKernels;
}

}  // namespace vkllm::gguf::detail
