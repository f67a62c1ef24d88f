// ggml tensor element types as they appear in GGUF files, with their block layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vkllm::gguf {

// Numeric values are ggml's on-disk type ids; they must never change.
enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ4_XS = 23,
  BF16 = 30,
  MXFP4 = 39,  // gpt-oss's expert weights (OCP microscaling FP4)
};

struct TypeTraits {
  std::string_view name;    // ggml's name, e.g. "q4_K"
  uint32_t block_elements;  // elements per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
};

// nullopt for ids that are not (or no longer) valid ggml types.
std::optional<TypeTraits> type_traits(uint32_t raw_type);
const TypeTraits& traits(TensorType type);
std::string_view type_name(TensorType type);
// Parses names like "Q4_K", "q4_k", "F16" (case-insensitive).
std::optional<TensorType> type_from_name(std::string_view name);

// Bytes needed for a row of n elements; n must be a multiple of the block size.
size_t row_bytes(TensorType type, uint64_t n);

}  // namespace vkllm::gguf
