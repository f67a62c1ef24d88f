// What one token of context costs in the paged KV cache, one rule for the backends (which lay
// their regions out by it) and the scheduler (KV bytes per token).
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/kv/kv_cache_type.h"
#include "engine/model/model_spec.h"

namespace vkllm::runtime {

// The layer whose K (or V) rows of one token take the most words in `type`: its head count and
// size lay out every layer's cache region. Layers differ only in Gemma 4 (local and global
// heads); a layer with fewer or smaller heads uses the front of its region, rows in its own
// [block][head][slot] order.
inline uint32_t widest_kv_layer(const model::ModelSpec& s, kv::CacheType type) {
  auto words = [&](uint32_t l) {
    return uint64_t(s.n_head_kv_of(l)) * kv::row_words(type, s.head_dim_of(l));
  };
  uint32_t widest = 0;
  for (uint32_t l = 1; l < s.n_layer; ++l)
    if (words(l) > words(widest)) widest = l;
  return widest;
}

// K and V bytes of one token in every layer that owns a cache (ModelSpec::owns_kv: not a
// hybrid's recurrent layers, not Gemma 3n's or Gemma 4's shared ones).
inline uint64_t kv_bytes_per_token(const model::ModelSpec& s, kv::CacheType type) {
  const uint32_t w = widest_kv_layer(s, type);
  return 2ull * s.n_kv_layers() * s.n_head_kv_of(w) * kv::row_bytes(type, s.head_dim_of(w));
}

// State checkpoints (kv::StateCheckpoints) beside a hybrid model's live states, each as large
// as one live slot (`slot_bytes`): `share` of the KV budget that the live states leave, in whole
// slots. The backends take them out of that budget before they size the K/V blocks.
inline uint32_t state_checkpoint_slots(uint64_t budget_after_states, uint64_t slot_bytes,
                                       double share) {
  if (slot_bytes == 0 || share <= 0) return 0;
  const double bytes = static_cast<double>(budget_after_states) * std::min(share, 1.0);
  return static_cast<uint32_t>(std::min<double>(bytes / static_cast<double>(slot_bytes), 1 << 16));
}

// A KV budget split as both backends lay it out: the live recurrent states first (`state_bytes`,
// all slots), then the checkpoint slots (state_checkpoint_slots of what is left), the rest for
// K/V blocks.
struct KvBudgetSplit {
  uint32_t checkpoints = 0;  // checkpoint slots of `slot_bytes` each
  uint64_t block_bytes = 0;  // what is left for K/V blocks
};
inline KvBudgetSplit split_kv_budget(uint64_t budget, uint64_t state_bytes, uint64_t slot_bytes,
                                     double checkpoint_share) {
  budget -= std::min(budget, state_bytes);
  KvBudgetSplit out;
  out.checkpoints = state_checkpoint_slots(budget, slot_bytes, checkpoint_share);
  out.block_bytes = budget - uint64_t(out.checkpoints) * slot_bytes;
  return out;
}

// Bytes of one sequence's recurrent state, every recurrent layer's (0 without any).
inline uint64_t recurrent_state_bytes(const model::ModelSpec& s) {
  uint64_t bytes = 0;
  for (uint64_t f : s.recurrent_state_floats()) bytes += 4 * f;
  return bytes;
}

// The KV budget that leaves `kv_bytes` for K/V blocks once a hybrid model's live recurrent
// states (`state_bytes`, all slots) and its checkpoint share (state_checkpoint_slots) are out
// of it, as the backends take them.
inline uint64_t kv_budget_with_states(uint64_t kv_bytes, uint64_t state_bytes,
                                      double checkpoint_share) {
  if (state_bytes == 0) return kv_bytes;
  const double kept = 1.0 - std::clamp(checkpoint_share, 0.0, 0.9);
  return state_bytes + static_cast<uint64_t>(static_cast<double>(kv_bytes) / kept);
}

}  // namespace vkllm::runtime
