// Read access to a step's batch metadata words (layout: engine/kv/kv_layout.h) for the CPU
// kernels: the same words the Vulkan kernels read, so both backends share kv::build_batch_meta.
#pragma once

#include <cstdint>
#include <span>

namespace vkllm::cpu {

struct BatchView {
  std::span<const uint32_t> words;  // kv::BatchMeta::words
  uint32_t n_tokens = 0;
  uint32_t n_seqs = 0;

  uint32_t token_seq(uint32_t t) const { return words[t]; }
  uint32_t token_pos(uint32_t t) const { return words[n_tokens + t]; }
  uint32_t seq_kv_len(uint32_t s) const { return words[2 * n_tokens + n_seqs + s]; }
  uint32_t seq_q_start(uint32_t s) const { return words[2 * n_tokens + 2 * n_seqs + s]; }
  uint32_t seq_q_len(uint32_t s) const { return words[2 * n_tokens + 3 * n_seqs + s]; }
  uint32_t seq_state(uint32_t s) const { return words[2 * n_tokens + 4 * n_seqs + s]; }
  // The first position of the sequence's open span (kv::kNoOpenSpan: none).
  uint32_t seq_open(uint32_t s) const { return words[2 * n_tokens + 5 * n_seqs + s]; }
  // The first state slot keeping the state after each of the sequence's tokens but the last (0:
  // none; kv::BatchSequence::capture_from).
  uint32_t seq_capture(uint32_t s) const { return words[2 * n_tokens + 6 * n_seqs + s]; }
  // The sequence's block table (position p lives in block table[p / block_size]).
  const uint32_t* seq_table(uint32_t s) const {
    return words.data() + 2 * n_tokens + 7 * n_seqs + words[2 * n_tokens + s];
  }
  // Block id holding position p of the sequence of token t.
  uint32_t token_block(uint32_t t, uint32_t p, uint32_t block_size) const {
    return seq_table(token_seq(t))[p / block_size];
  }
};

}  // namespace vkllm::cpu
