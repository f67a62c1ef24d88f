// Rows of the paged KV cache on the host (layout: engine/kv/kv_cache_type.h): the CPU backend's
// cache writes and attention loads, and the tests' reference cache contents.
#pragma once

#include <cstdint>

#include "engine/kv/kv_cache_type.h"

namespace vkllm::cpu {

// One row of head_dim floats into its kv::row_words(type, head_dim) words at `row` (f16: round to
// nearest even; q8_0 / q4_0: GGML's reference quantization). Throws std::invalid_argument when
// head_dim does not fit the type.
void quantize_kv_row(kv::CacheType type, const float* x, uint32_t head_dim, uint32_t* row);
// The row's values as floats (what the attention kernels compute with).
void dequantize_kv_row(kv::CacheType type, const uint32_t* row, uint32_t head_dim, float* x);

}  // namespace vkllm::cpu
