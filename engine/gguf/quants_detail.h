// Internal to the quants*.cpp files: per-type row kernels and the shared rounding helpers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "engine/gguf/tensor_type.h"

namespace vkllm::gguf::detail {

using DequantizeFn = void (*)(const uint8_t* src, float* dst, size_t blocks);
using QuantizeFn = void (*)(const float* src, uint8_t* dst, size_t blocks);

// One format's CPU kernels; `quantize` is null for dequantize-only formats. Kernels work on
// whole blocks, so the dispatcher can split a tensor across threads at block boundaries.
struct FormatKernels {
  TensorType type;
  uint32_t block_elements;
  uint32_t block_bytes;
  DequantizeFn dequantize;
  QuantizeFn quantize;
};

std::span<const FormatKernels> float_kernels();
std::span<const FormatKernels> legacy_kernels();
std::span<const FormatKernels> k_kernels();
std::span<const FormatKernels> iq_kernels();
std::span<const FormatKernels> fp4_kernels();

// Blocks are copied out of (and into) the byte stream, so callers may pass unaligned data.
template <typename Block>
inline Block load_block(const uint8_t* src, size_t index) {
  Block b;
  std::memcpy(&b, src + index * sizeof(Block), sizeof(Block));
  return b;
}
template <typename Block>
inline void store_block(uint8_t* dst, size_t index, const Block& b) {
  std::memcpy(dst + index * sizeof(Block), &b, sizeof(Block));
}

// Round half to even, valid for |x| < 2^22 (all quantizer inputs are clamped far below that).
// Adding 1.5 * 2^23 moves the integer part into the low mantissa bits with the FPU's
// round-to-nearest-even, which is much cheaper than a libm call per element.
inline int round_to_int(float x) {
  float shifted = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

inline int clamp_int(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

}  // namespace vkllm::gguf::detail
