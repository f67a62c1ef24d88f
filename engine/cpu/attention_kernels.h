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
// heads of KV head kv_head, over slice `split` of the visible positions.
struct AttentionGroup {
  uint32_t seq = 0, t0 = 0, n_tokens = 0, kv_head = 0, split = 0;
};

// Split-K partials: unnormalised output rows of split s, then (max, sum) pairs of every row.
inline uint64_t partial_row(const AttentionArgs& a, uint32_t split, uint32_t t, uint32_t h) {
  return (uint64_t(split) * a.batch.n_tokens + t) * a.n_q_heads + h;
}
inline float* partial_out(const AttentionArgs& a, uint32_t split, uint32_t t, uint32_t h) {
  return a.partials + partial_row(a, split, t, h) * a.head_dim;
}
inline float* partial_ml(const AttentionArgs& a, uint32_t split, uint32_t t, uint32_t h) {
  return a.partials + uint64_t(a.kv_splits) * a.batch.n_tokens * a.n_q_heads * a.head_dim +
         partial_row(a, split, t, h) * 2;
}

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
