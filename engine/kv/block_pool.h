// Accounting for the paged KV cache: which fixed-size blocks are free, which belong to live
// sequences, and which hold a reusable prompt prefix. The device memory itself lives in the KV
// arena (kv_cache.h); a block id here is an index into it.
//
// Prefix caching: a full block is identified by hash(parent block's hash, its tokens), so equal
// hashes mean equal whole prefixes. Full blocks are registered under that hash and become
// immutable; a new sequence reuses the longest chain of registered blocks its prompt starts with.
// Blocks nobody references but that carry a hash stay cached and are evicted least recently used
// first, only when the free list is empty.
//
// A model with recurrent layers also has its live state slots (state_slots.h) and its state
// checkpoints (state_checkpoints.h) here: a checkpoint leaves with the cached block it ends at.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv/state_checkpoints.h"
#include "engine/kv/state_slots.h"

namespace vkllm::kv {

using BlockId = uint32_t;

// Hash of a full block given its parent's hash (kRootHash for the first block).
inline constexpr BlockHash kRootHash = 0x9e3779b97f4a7c15ull;
BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens);

struct BlockPoolStats {
  uint32_t total = 0;
  uint32_t used = 0;           // referenced by at least one sequence
  uint32_t cached = 0;         // unreferenced but holding a registered prefix (evictable)
  uint32_t free = 0;           // neither
  uint64_t prefix_hits = 0;    // blocks reused from the prefix cache
  uint64_t prefix_misses = 0;  // full prompt blocks looked up and not found
  uint64_t evictions = 0;
};

class BlockPool {
 public:
  // `state_slots`: recurrent-state slots for the tables of this pool to take (state_slots.h);
  // 0 for a model without recurrent layers. `checkpoints`: state checkpoint slots
  // (state_checkpoints.h), without which such a model reuses no prefix.
  explicit BlockPool(uint32_t num_blocks, uint32_t state_slots = 0, uint32_t checkpoints = 0);

  uint32_t num_blocks() const { return static_cast<uint32_t>(blocks_.size()); }
  // Blocks an allocation could obtain right now (free plus evictable cached ones).
  uint32_t available() const;

  // A fresh, unshared block with reference count 1; nullopt when none is available.
  std::optional<BlockId> allocate();
  // Allocates n blocks or none (all-or-nothing).
  std::optional<std::vector<BlockId>> allocate(uint32_t n);

  // The registered block for `hash`, if any; takes a reference on it (and counts a hit).
  std::optional<BlockId> acquire_cached(BlockHash hash);
  // Whether a block is registered under `hash` (no reference taken, nothing counted).
  bool is_cached(BlockHash hash) const { return by_hash_.contains(hash); }
  // Counts a lookup of a full prompt block that was not cached.
  void note_miss() { ++stats_.prefix_misses; }

  // Registers a full block of a live sequence under `hash`; afterwards it must not be written.
  // If another block already holds that hash, nothing changes and that block's id is returned
  // (the caller may keep using its own copy).
  BlockId register_full(BlockId block, BlockHash hash);

  void add_ref(BlockId block);
  // Drops one reference; at zero the block becomes cached (if registered) or free.
  void release(BlockId block);
  void release(std::span<const BlockId> blocks);

  uint32_t ref_count(BlockId block) const { return blocks_.at(block).refs; }
  bool is_registered(BlockId block) const { return blocks_.at(block).hash.has_value(); }
  BlockPoolStats stats() const;

  StateSlots& state_slots() { return state_slots_; }
  const StateSlots& state_slots() const { return state_slots_; }
  StateCheckpoints& checkpoints() { return checkpoints_; }
  const StateCheckpoints& checkpoints() const { return checkpoints_; }

 private:
  struct Block {
    uint32_t refs = 0;
    std::optional<BlockHash> hash;
    std::list<BlockId>::iterator lru_pos;  // valid while cached (refs == 0 and hash set)
  };
  std::optional<BlockId> take_free_or_evict();

  std::vector<Block> blocks_;
  std::vector<BlockId> free_;  // LIFO: recently freed blocks are reused first
  std::list<BlockId> lru_;     // cached blocks, least recently used at the front
  std::unordered_map<BlockHash, BlockId> by_hash_;
  BlockPoolStats stats_;
  StateSlots state_slots_;
  StateCheckpoints checkpoints_;
};

}  // namespace vkllm::kv
