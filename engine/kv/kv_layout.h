// The paged KV cache's memory layout and the per-step batch metadata, as the Vulkan kernels
// (shaders/rope.comp, shaders/attention.comp, shaders/kv_meta.glsl) read them. Fixed: the
// runtime, the KV manager and the kernels all rely on it.
//
// Cache: element type f16, q8_0 or q4_0 (kv_cache_type.h, which lays out one row of head_dim
// values). For each layer, one K region and one V region (separate buffers or slices of the KV
// arena), each laid out [num_blocks][n_kv_heads][block_size] rows: one (block, head) slab of
// block_size rows is contiguous. A sequence's block table is a
// uint32 array of block ids; the token at position p lives in block table[p / block_size], slot
// p % block_size. block_size is a kernel parameter (default 16), not hard-wired.
//
// Batch metadata: one uint32 array per step (BatchMeta::words), uploaded once and bound by every
// kernel that reads positions or touches the cache. With T tokens and S sequences:
//   [0, T)          token_seq    sequence index (0..S-1) of each batch token
//   [T, 2T)         token_pos    absolute position of each batch token
//   [2T, 2T+S)      seq_table    offset of the sequence's block table within the tables area
//   [2T+S, 2T+2S)   seq_kv_len   the sequence's context length after this step
//   [2T+2S, 2T+3S)  seq_q_start  index of the sequence's first token in the batch
//   [2T+3S, 2T+4S)  seq_q_len    the sequence's tokens in this batch (contiguous, in order)
//   [2T+4S, 2T+5S)  seq_state    the sequence's recurrent-state slot (state_layout.h; 0 for a
//                                model without recurrent layers)
//   [2T+5S, 2T+6S)  seq_open     the first position of the sequence's open span (kNoOpenSpan:
//                                none): queries at or after it also see the keys after them, up
//                                to kv_len (an image's tokens attend to each other both ways)
//   [2T+6S, 2T+7S)  seq_capture  where the states after the sequence's tokens go (0: nowhere): a
//                                speculative verification step of a hybrid model keeps the
//                                recurrent state after its token t (t < q_len - 1) in state slot
//                                capture + t, so a rejected draft's tokens can be taken back
//   [2T+7S, ...)    block tables of all sequences, concatenated
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kv/kv_cache_type.h"

namespace vkllm::kv {

inline constexpr uint32_t kDefaultBlockSize = 16;
// BatchSequence::open_from of a sequence without an open span.
inline constexpr uint32_t kNoOpenSpan = 0xFFFFFFFFu;
// Words of per-sequence metadata before the block tables: table offset, kv_len, q_start, q_len,
// state slot, open span, capture.
inline constexpr uint32_t kMetaSeqWords = 7;

struct KvLayout {
  uint32_t num_blocks = 0;
  uint32_t n_kv_heads = 0;
  uint32_t block_size = kDefaultBlockSize;
  uint32_t head_dim = 0;
  CacheType type = CacheType::F16;

  // uint32 words of one row, and of one layer's K (or V) region.
  uint32_t row_words() const { return kv::row_words(type, head_dim); }
  uint64_t region_words() const {
    return uint64_t(num_blocks) * n_kv_heads * block_size * row_words();
  }
  uint64_t region_bytes() const { return region_words() * 4; }
  // 16-bit units of a region (its f16 elements when the type is f16).
  uint64_t region_elements() const { return region_words() * 2; }
  // Bytes of one block's K and V over n_layer layers (what one more block of context costs).
  uint64_t block_bytes(uint32_t n_layer) const {
    return 2ull * n_layer * n_kv_heads * block_size * row_words() * 4;
  }
  // Row index of (block, head, slot) within a region (times row_words(): its first word).
  uint64_t row(uint32_t block, uint32_t head, uint32_t slot) const {
    return (uint64_t(block) * n_kv_heads + head) * block_size + slot;
  }
  // f16 element index of (block, head, slot, d) within an f16 region.
  uint64_t element(uint32_t block, uint32_t head, uint32_t slot, uint32_t d) const {
    return row(block, head, slot) * head_dim + d;
  }
};

// One sequence's part of a step: its block table, its tokens in the batch (the caller lays each
// sequence's tokens out contiguously, positions kv_len - q_len .. kv_len - 1) and its context
// length after the step.
struct BatchSequence {
  std::span<const uint32_t> block_table;
  uint32_t q_len = 0;
  uint32_t kv_len = 0;
  uint32_t state_slot = 0;  // recurrent-state slot, if the model has recurrent layers
  // Queries at positions >= open_from also see the keys after them (up to kv_len): the open
  // span must end the sequence's tokens in the step (kNoOpenSpan: causal throughout).
  uint32_t open_from = kNoOpenSpan;
  // Hybrid models' speculative verification: the first state slot that keeps the state after
  // each token but the last (StateLayout's captured states; 0: none).
  uint32_t capture_from = 0;
};

struct BatchMeta {
  std::vector<uint32_t> words;
  uint32_t n_tokens = 0;
  uint32_t n_seqs = 0;
  uint32_t max_q_len = 0;  // the longest sequence's q_len (sizes the attention grid)
  uint32_t max_kv_len = 0;
  bool captures = false;  // some sequence keeps its states after each token (capture_from)
};

// Builds the metadata for sequences laid out in the batch in the given order. Throws
// std::invalid_argument naming the sequence when q_len > kv_len, q_len == 0, or its block table
// is shorter than ceil(kv_len / block_size).
inline BatchMeta build_batch_meta(std::span<const BatchSequence> seqs,
                                  uint32_t block_size = kDefaultBlockSize) {
  BatchMeta m;
  m.n_seqs = static_cast<uint32_t>(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const BatchSequence& q = seqs[s];
    const std::string name = "sequence " + std::to_string(s);
    if (q.q_len == 0 || q.q_len > q.kv_len)
      throw std::invalid_argument(name + ": q_len " + std::to_string(q.q_len) + " with kv_len " +
                                  std::to_string(q.kv_len));
    if (q.block_table.size() < (q.kv_len + block_size - 1) / block_size)
      throw std::invalid_argument(name + ": block table of " +
                                  std::to_string(q.block_table.size()) + " blocks for kv_len " +
                                  std::to_string(q.kv_len));
    m.n_tokens += q.q_len;
    m.max_q_len = std::max(m.max_q_len, q.q_len);
    m.max_kv_len = std::max(m.max_kv_len, q.kv_len);
    m.captures |= q.capture_from != 0;
  }
  const uint32_t T = m.n_tokens, S = m.n_seqs;
  m.words.assign(2 * T + kMetaSeqWords * S, 0);
  uint32_t t = 0;
  for (uint32_t s = 0; s < S; ++s) {
    const BatchSequence& q = seqs[s];
    m.words[2 * T + s] = static_cast<uint32_t>(m.words.size() - (2 * T + kMetaSeqWords * S));
    m.words[2 * T + S + s] = q.kv_len;
    m.words[2 * T + 2 * S + s] = t;
    m.words[2 * T + 3 * S + s] = q.q_len;
    m.words[2 * T + 4 * S + s] = q.state_slot;
    m.words[2 * T + 5 * S + s] = q.open_from;
    m.words[2 * T + 6 * S + s] = q.capture_from;
    for (uint32_t i = 0; i < q.q_len; ++i, ++t) {
      m.words[t] = s;
      m.words[T + t] = q.kv_len - q.q_len + i;
    }
    m.words.insert(m.words.end(), q.block_table.begin(), q.block_table.end());
  }
  return m;
}

}  // namespace vkllm::kv
