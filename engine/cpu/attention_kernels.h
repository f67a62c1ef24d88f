// Internal: the attention group kernel built once per ISA (attention_impl.h compiled by
// attention_portable.cpp, attention_avx2.cpp and attention_avx512.cpp); attention.cpp splits the
// batch into groups and picks the kernel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/cpu/attention.h"

namespace vkllm::cpu::detail {

// Cached positions converted from f16 per step of the online softmax.
inline constexpr uint32_t kAttentionKeys = 64;

// One unit of work: n_tokens consecutive batch tokens from t0 of sequence seq, with the query
// heads of KV head kv_head.
struct AttentionGroup {
  uint32_t seq = 0, t0 = 0, n_tokens = 0, kv_head = 0;
};

// Floats of scratch one group of `rows` rows needs.
inline size_t attention_scratch_floats(uint32_t rows, uint32_t head_dim) {
  return size_t(rows) * head_dim * 2 + size_t(kAttentionKeys) * head_dim * 2 + kAttentionKeys +
         size_t(rows) * 2 + 64;
}

using AttendFn = void (*)(const AttentionArgs& a, const AttentionGroup& g, float* scratch);
extern const AttendFn kAttendPortable;
extern const AttendFn kAttendAvx2;
extern const AttendFn kAttendAvx512;

}  // namespace vkllm::cpu::detail
