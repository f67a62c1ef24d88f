// Which recurrent-state slots are taken. A model with recurrent layers (model::ModelSpec::
// has_recurrent_state: LFM2's short convolutions, later Mamba-2 and DeltaNet) keeps a fixed-size
// state per running sequence beside its paged KV cache; the backend holds one state per slot
// (kv::StateLayout) and a sequence's BlockTable holds its slot from its first step until the
// table is released. This is only the accounting: slot ids into that memory.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace vkllm::kv {

class StateSlots {
 public:
  explicit StateSlots(uint32_t n = 0) : taken_(n, false) {
    free_.reserve(n);
    for (uint32_t i = n; i-- > 0;) free_.push_back(i);  // slot 0 handed out first
  }

  uint32_t size() const { return static_cast<uint32_t>(taken_.size()); }
  uint32_t available() const { return static_cast<uint32_t>(free_.size()); }

  // A free slot; nullopt when every slot is taken.
  std::optional<uint32_t> acquire() {
    if (free_.empty()) return std::nullopt;
    const uint32_t s = free_.back();
    free_.pop_back();
    taken_[s] = true;
    return s;
  }
  void release(uint32_t slot) {
    if (slot >= taken_.size() || !taken_[slot])
      throw std::logic_error("StateSlots: release of a slot that is not taken");
    taken_[slot] = false;
    free_.push_back(slot);
  }

 private:
  std::vector<bool> taken_;
  std::vector<uint32_t> free_;
};

}  // namespace vkllm::kv
