// The recurrent-state memory's layout, beside the paged KV cache: one state per slot
// (kv::StateSlots), each the concatenation of its recurrent layers' states, f32. A layer's state
// is what its kind of recurrence carries from one token to the next: LFM2's short convolution
// the last L-1 inputs of its depthwise conv ((L-1) x n_embd, oldest first); a Mamba-2 or DeltaNet
// layer will add its conv state and its SSM / delta-rule matrix as more floats of the same layer.
// Layer l of slot s starts at float s * slot_floats + layer_offset[l]. After the n_slots live
// slots come n_capture slots of the same size where a speculative verification step keeps the
// state after each drafted token (kv::BatchSequence::capture_from), so a sequence can keep the
// state after the tokens it accepts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace vkllm::kv {

struct StateLayout {
  static constexpr uint64_t kNone = ~uint64_t{0};
  std::vector<uint64_t> layer_offset;  // floats into a slot; kNone: the layer has no state
  uint64_t slot_floats = 0;
  uint32_t n_slots = 0;
  uint32_t n_capture = 0;  // captured states, slots n_slots .. n_slots + n_capture - 1

  // From each layer's state size in floats (0: none).
  static StateLayout make(std::span<const uint64_t> layer_floats, uint32_t n_slots,
                          uint32_t n_capture = 0) {
    StateLayout s;
    for (uint64_t f : layer_floats) {
      s.layer_offset.push_back(f ? s.slot_floats : kNone);
      s.slot_floats += f;
    }
    s.n_slots = s.slot_floats ? n_slots : 0;
    s.n_capture = s.n_slots ? n_capture : 0;
    return s;
  }
  bool empty() const { return n_slots == 0; }
  uint64_t floats() const { return slot_floats * (n_slots + n_capture); }
  uint64_t bytes() const { return 4 * floats(); }
  bool has(uint32_t layer) const {
    return layer < layer_offset.size() && layer_offset[layer] != kNone;
  }
};

}  // namespace vkllm::kv
