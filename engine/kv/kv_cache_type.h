// The element type of the paged KV cache (OLLAMA_KV_CACHE_TYPE): f16, or K and V quantized in
// blocks of 32 values of a head row, with GGML's q8_0 / q4_0 arithmetic (one f16 scale a block;
// q8_0: q = round(x / d), d = max|x| / 127; q4_0: q = x / d + 8 in 0..15, d = the value of
// largest magnitude / -8).
//
// Row layout (one (block, head, slot) row of head_dim values, head_dim a multiple of 32), in
// uint32 words so the kernels read it with aligned loads:
//   f16:  head_dim / 2 words, value pairs (packHalf2x16 order)
//   q8_0: head_dim / 4 words of int8 quants (value i in byte i), then the block scales as f16
//         pairs: ceil(head_dim / 64) words
//   q4_0: head_dim / 8 words of 4-bit quants (value i in nibble i: byte i / 2, low nibble first),
//         then the scales as for q8_0
// Bytes per value: 2, 1.0625 and 0.5625 (GGML's q8_0 / q4_0 block sizes: 34 and 18 bytes for 32).
// Rows are written and read by shaders/rope.comp and shaders/kv_quant.glsl on Vulkan, and by
// engine/cpu/kv_rows.h on the CPU.
#pragma once

#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vkllm::kv {

enum class CacheType : uint32_t { F16 = 0, Q8_0 = 1, Q4_0 = 2 };

// "f16", "q8_0" or "q4_0" (Ollama's names).
inline std::string_view cache_type_name(CacheType type) {
  switch (type) {
    case CacheType::Q8_0:
      return "q8_0";
    case CacheType::Q4_0:
      return "q4_0";
    default:
      return "f16";
  }
}
// Parses Ollama's names (case-insensitive; empty: f16). Throws std::invalid_argument naming the
// accepted values otherwise.
inline CacheType parse_cache_type(std::string_view text) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty() || s == "f16") return CacheType::F16;
  if (s == "q8_0") return CacheType::Q8_0;
  if (s == "q4_0") return CacheType::Q4_0;
  throw std::invalid_argument("unknown KV cache type '" + std::string(text) +
                              "' (OLLAMA_KV_CACHE_TYPE: f16, q8_0 or q4_0)");
}

inline constexpr uint32_t kQuantBlock = 32;

// Whether rows of head_dim values can be stored as `type` (quantized types need a multiple of 32).
inline bool cache_type_fits(CacheType type, uint32_t head_dim) {
  return type == CacheType::F16 || (head_dim > 0 && head_dim % kQuantBlock == 0);
}
// uint32 words of one row of head_dim values; and the word where a quantized row's scales start.
inline uint32_t row_words(CacheType type, uint32_t head_dim) {
  switch (type) {
    case CacheType::Q8_0:
      return head_dim / 4 + (head_dim / kQuantBlock + 1) / 2;
    case CacheType::Q4_0:
      return head_dim / 8 + (head_dim / kQuantBlock + 1) / 2;
    default:
      return (head_dim + 1) / 2;
  }
}
inline uint32_t scale_word(CacheType type, uint32_t head_dim) {
  return type == CacheType::Q8_0 ? head_dim / 4 : head_dim / 8;
}
inline uint64_t row_bytes(CacheType type, uint32_t head_dim) {
  return 4ull * row_words(type, head_dim);
}

}  // namespace vkllm::kv
