#include "engine/cpu/attention.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cpu/attention_kernels.h"

namespace vkllm::cpu {

namespace {

void check(const AttentionArgs& a) {
  if (a.n_kv_heads == 0 || a.n_q_heads == 0 || a.n_q_heads % a.n_kv_heads != 0)
    throw std::invalid_argument("attention: " + std::to_string(a.n_q_heads) + " query heads over " +
                                std::to_string(a.n_kv_heads) + " KV heads");
  if (a.head_dim == 0 || a.head_dim > 512)
    throw std::invalid_argument("attention: head_dim " + std::to_string(a.head_dim) +
                                " (1 to 512)");
  if (a.block_size == 0) throw std::invalid_argument("attention: block_size 0");
}

uint32_t tiles(uint32_t q_len, uint32_t tile) {
  return (q_len + tile - 1) / tile;
}

detail::AttendFn kernel(Isa isa) {
  switch (usable_isa(isa)) {
    case Isa::Avx512:
      return detail::kAttendAvx512;
    case Isa::Avx2:
      return detail::kAttendAvx2;
    default:
      return detail::kAttendPortable;
  }
}

}  // namespace

uint32_t attention_tile_tokens(const AttentionArgs& a) {
  check(a);
  const uint32_t r = a.n_q_heads / a.n_kv_heads;
  return r >= 64 ? 1 : 64 / r;
}

uint32_t attention_work_units(const AttentionArgs& a) {
  const uint32_t tile = attention_tile_tokens(a);
  uint32_t units = 0;
  for (uint32_t s = 0; s < a.batch.n_seqs; ++s)
    units += tiles(a.batch.seq_q_len(s), tile) * a.n_kv_heads;
  return units;
}

void attention(const AttentionArgs& a, uint32_t unit_begin, uint32_t unit_end, Isa isa) {
  const uint32_t tile = attention_tile_tokens(a);
  if (unit_begin >= unit_end) return;
  const detail::AttendFn attend = kernel(isa);
  const uint32_t R = a.n_q_heads / a.n_kv_heads;
  std::vector<float> scratch(detail::attention_scratch_floats(tile * R, a.head_dim));
  // Find the sequence holding unit_begin, then walk units in order.
  uint32_t s = 0, first = 0;
  for (; s < a.batch.n_seqs; ++s) {
    const uint32_t n = tiles(a.batch.seq_q_len(s), tile) * a.n_kv_heads;
    if (unit_begin < first + n) break;
    first += n;
  }
  for (uint32_t u = unit_begin; u < unit_end && s < a.batch.n_seqs;) {
    const uint32_t q_len = a.batch.seq_q_len(s);
    const uint32_t n = tiles(q_len, tile) * a.n_kv_heads;
    for (; u < unit_end && u < first + n; ++u) {
      const uint32_t i = (u - first) / a.n_kv_heads, g = (u - first) % a.n_kv_heads;
      detail::AttentionGroup group;
      group.seq = s;
      group.t0 = a.batch.seq_q_start(s) + i * tile;
      group.n_tokens = q_len - i * tile < tile ? q_len - i * tile : tile;
      group.kv_head = g;
      attend(a, group, scratch.data());
    }
    first += n;
    ++s;
  }
}

}  // namespace vkllm::cpu
