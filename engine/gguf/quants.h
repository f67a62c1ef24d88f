// CPU dequantization and quantization of ggml block formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/gguf/tensor_type.h"

namespace vkllm::gguf {

// Converts n elements (a multiple of the type's block size) of `type` to float.
// Throws std::invalid_argument for types without a dequantizer or a bad n.
void dequantize(TensorType type, const void* src, float* dst, size_t n);

// Quantizes n floats (a multiple of the block size) into dst (row_bytes(type, n) bytes),
// using llama.cpp-quality scale search for the K-quants. Throws for unsupported types.
void quantize(TensorType type, const float* src, void* dst, size_t n);

// Same, with an explicit thread count (0: one per hardware thread). Results never depend on
// the thread count: every block is independent.
void dequantize(TensorType type, const void* src, float* dst, size_t n, unsigned threads);
void quantize(TensorType type, const float* src, void* dst, size_t n, unsigned threads);

// Bytes that n elements of `type` occupy (n a multiple of the block size); throws like
// dequantize for types without kernels.
size_t quantized_size(TensorType type, size_t n);

bool can_dequantize(TensorType type);
bool can_quantize(TensorType type);

// IEEE half and bfloat16 conversions (round-to-nearest-even).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

}  // namespace vkllm::gguf
