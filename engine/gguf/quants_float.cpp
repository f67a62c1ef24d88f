// IEEE binary16 and bfloat16 conversions and the F32/F16/BF16 "formats".
#include <cmath>
#include <cstring>

#include "engine/gguf/quants.h"
#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf {

namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // Inf / NaN
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    // NaN: keep the top payload bits and force a quiet NaN so it never turns into Inf.
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds (to even) to Inf
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half: the result is round(|f| / 2^-24), whose scaling is exact.
    // The default FP environment rounds to nearest even; 1024 correctly encodes 2^-14.
    const float units = std::nearbyint(std::fabs(f) * 0x1p24f);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  const uint32_t exponent = (magnitude >> 23) - 112;
  const uint32_t mantissa = magnitude & 0x7fffffu;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t dropped = mantissa & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u))) ++h;  // carries into the exponent
  return static_cast<uint16_t>(sign | h);
}

float bf16_to_fp32(uint16_t h) {
  return bits_float(static_cast<uint32_t>(h) << 16);
}

uint16_t fp32_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN even if the payload was low
  }
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

namespace detail {
namespace {

void dequantize_f32(const uint8_t* src, float* dst, size_t n) {
  std::memcpy(dst, src, n * sizeof(float));
}
void quantize_f32(const float* src, uint8_t* dst, size_t n) {
  std::memcpy(dst, src, n * sizeof(float));
}

void dequantize_f16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = fp16_to_fp32(h);
  }
}
void quantize_f16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void dequantize_bf16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = bf16_to_fp32(h);
  }
}
void quantize_bf16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

constexpr FormatKernels kFloatKernels[] = {
    {TensorType::F32, 1, 4, dequantize_f32, quantize_f32},
    {TensorType::F16, 1, 2, dequantize_f16, quantize_f16},
    {TensorType::BF16, 1, 2, dequantize_bf16, quantize_bf16},
};

}  // namespace

std::span<const FormatKernels> float_kernels() {
  return kFloatKernels;
}

}  // namespace detail
}  // namespace vkllm::gguf
