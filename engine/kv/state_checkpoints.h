// Which recurrent-state checkpoints exist. A hybrid model's recurrent layers keep one state per
// running sequence (state_slots.h) that covers every token the sequence computed; the prefix
// cache can only hand a new sequence K/V blocks, not that state. A checkpoint is a copy of a
// sequence's whole state (all recurrent layers) taken when its computed tokens end exactly at a
// block boundary, kept in a bounded pool of checkpoint slots beside the live ones (the backend
// holds the memory; this is the accounting, as StateSlots is for the live slots).
//
// A checkpoint belongs to the prefix-cache block it ends at, named by that block's hash (equal
// hashes mean equal whole prefixes, so the state after them is the same): the BlockPool drops it
// when it evicts that block, and when every slot is taken a new checkpoint replaces the least
// recently used one. A table about to restore a checkpoint pins it, so it stays until copied.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace vkllm::kv {

using BlockHash = uint64_t;

// What a step's sequence does with its state once the step has run (runtime::SequenceStep):
// nothing, keep a checkpoint, or keep one that replaces the last `rolling` one the same table
// took (a decoding sequence checkpoints every block it fills; only its latest is worth memory).
enum class Checkpoint : uint8_t { none, keep, rolling };

struct StateCheckpointStats {
  uint32_t total = 0;
  uint32_t held = 0;      // attached to a block, or being taken
  uint64_t taken = 0;     // checkpoints attached
  uint64_t restored = 0;  // restores pinned (sequences that resumed from one)
  uint64_t replaced = 0;  // dropped for a newer one (pool full, or a rolling successor)
  uint64_t dropped = 0;   // dropped with their block (evicted from the prefix cache)
};

class StateCheckpoints {
 public:
  explicit StateCheckpoints(uint32_t n = 0);

  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }

  // A slot to copy a new checkpoint into: a free one, else the least recently used checkpoint
  // that no table has pinned (dropped). nullopt when there is none. The slot is then taken until
  // attach() or discard().
  std::optional<uint32_t> acquire();
  // The taken slot now holds the state after the block of `hash`. False when `hash` has a
  // checkpoint already: the slot is freed and the existing one stays.
  bool attach(uint32_t slot, BlockHash hash);
  // Frees a taken slot that was never attached.
  void discard(uint32_t slot);

  // The checkpoint after the block of `hash`, if any.
  std::optional<uint32_t> find(BlockHash hash) const;
  // A table will restore `slot`: it is used now (LRU) and cannot be dropped until unpin().
  void pin(uint32_t slot);
  void unpin(uint32_t slot);

  // The block of `hash` left the prefix cache: its checkpoint (if any) goes with it.
  void drop(BlockHash hash);
  // Drops the checkpoint of `hash` unless a table has pinned it (a rolling successor).
  void replace(BlockHash hash);

  StateCheckpointStats stats() const;

 private:
  enum class Use : uint8_t { free, taken, attached };
  struct Slot {
    Use use = Use::free;
    BlockHash hash = 0;
    uint32_t pins = 0;
    std::list<uint32_t>::iterator lru_pos;  // valid while attached
  };
  void free_slot(uint32_t slot);

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::list<uint32_t> lru_;  // attached checkpoints, least recently used at the front
  std::unordered_map<BlockHash, uint32_t> by_hash_;
  StateCheckpointStats stats_;
};

}  // namespace vkllm::kv
