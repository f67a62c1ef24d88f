// What one token of context costs in the paged KV cache, one rule for the backends (which lay
// their regions out by it) and the scheduler (KV bytes per token).
#pragma once

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

}  // namespace vkllm::runtime
