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

// One unit of work, resolved by attention.cpp into plain pointers so the per-ISA files call no
// shared inline code (see row_kernels_impl.h): n_tokens consecutive tokens of one sequence with
// the query heads of KV head kv_head, over slice `split` of n_splits of the visible positions.
struct AttentionGroup {
  uint32_t n_tokens = 0, kv_head = 0, split = 0, n_splits = 1;
  uint32_t kv_len = 0;  // the sequence's context length
  // Queries at positions >= open_from also see the later keys up to kv_len (kv::kNoOpenSpan:
  // none; the batch metadata's seq_open).
  uint32_t open_from = 0xFFFFFFFFu;
  const uint32_t* table = nullptr;  // its block table
  const uint32_t* pos = nullptr;    // positions of the group's tokens
  const float* q = nullptr;         // token 0's query row (head 0)
  uint32_t q_stride = 0;            // between tokens
  float* out = nullptr;             // token 0's output row (head 0), or its partial output
  uint32_t out_stride = 0;
  float* ml = nullptr;  // split-K: token 0's (max, sum) pairs (head 0), 2 per head
  uint32_t ml_stride = 0;
};

// The factor that turns an unnormalised output (running max m, sum l) into the softmax-weighted
// sum when a sink logit joins the denominator, 1 / (l + e^{sink - m}), computed around the
// larger of m and the sink so that neither exponent overflows.
inline float sink_scaled_inverse(float m, float l, float sink) {
  if (!(l > 0.f)) return 0.f;  // nothing visible: the output stays zero
  const float top = m > sink ? m : sink;
  const float keep = __builtin_expf(m - top);
  return keep / (l * keep + __builtin_expf(sink - top));
}

// Query rows whose scores one pass over a key tile computes together (attention_impl.h).
inline constexpr uint32_t kAttentionRowBlock = 4;

// Floats of scratch one group of `rows` rows needs.
inline size_t attention_scratch_floats(uint32_t rows, uint32_t head_dim) {
  return size_t(rows) * head_dim * 2 + size_t(kAttentionKeys) * head_dim * 3 +
         size_t(kAttentionKeys) * kAttentionRowBlock + size_t(rows) * 2 + 64;
}

using AttendFn = void (*)(const AttentionArgs& a, const AttentionGroup& g, float* scratch);
extern const AttendFn kAttendPortable;
extern const AttendFn kAttendAvx2;
extern const AttendFn kAttendAvx512;

}  // namespace vkllm::cpu::detail
