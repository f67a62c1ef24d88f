// One sequence driven through a Runner: prefill in chunks, then decode token by token. The
// building block of the engine CLI commands (generate, debug logits, perplexity); the server's
// scheduler batches many sequences through Runner::step directly.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/runtime/runner.h"

namespace vkllm::runtime {

class Generator {
 public:
  explicit Generator(Runner& runner) : runner_(runner) { reset(); }

  // Appends tokens (in chunks of the runner's batch limit) and returns the logits after the
  // last one; with all_rows, the logits after every token (rows of n_vocab).
  std::vector<float> feed(std::span<const int32_t> tokens, bool all_rows = false);
  // Appends one token and returns the device-side argmax of the next logits.
  int32_t feed_greedy(int32_t token);

  uint32_t n_past() const { return table_->num_tokens(); }
  void reset() {
    table_.reset();
    table_.emplace(runner_.pool(), runner_.block_size());
  }

 private:
  Runner& runner_;
  std::optional<kv::BlockTable> table_;
};

}  // namespace vkllm::runtime
