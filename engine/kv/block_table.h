// One sequence's view of the paged KV cache: the ordered list of blocks holding its tokens' K/V
// (token at position p lives in block blocks()[p / block_size], slot p % block_size), plus the
// bookkeeping that lets its full blocks join the prefix cache. For a model with recurrent layers
// the table also holds the sequence's recurrent-state slot (state_slots.h): taken by its first
// reserve(), given back with its blocks when the table is released (finish, cancel, preemption).
// Its state covers the tokens the table computed itself, or, for a table that resumed from a
// reused prefix, the checkpoint restored into it (state_checkpoints.h) and what followed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/kv/block_pool.h"

namespace vkllm::kv {

class BlockTable {
 public:
  BlockTable(BlockPool& pool, uint32_t block_size);
  ~BlockTable();  // releases every block
  BlockTable(const BlockTable&) = delete;
  BlockTable& operator=(const BlockTable&) = delete;
  BlockTable(BlockTable&&) noexcept;
  BlockTable& operator=(BlockTable&&) = delete;

  // For a fresh table: takes the longest chain of cached full blocks that `prompt` starts with,
  // always leaving at least one prompt token to compute (the step needs its logits). Returns the
  // number of prompt tokens whose K/V is already present. With recurrent layers the chain ends
  // at its deepest block that has a state checkpoint (none: nothing is reused), which the table
  // pins as its pending_restore().
  uint32_t reuse_prefix(std::span<const int32_t> prompt);

  // Makes room for `n` more tokens after the committed ones, and takes a recurrent-state slot
  // first if the pool has them and the table holds none; all-or-nothing. False when the pool
  // cannot supply the blocks or the slot (the caller may preempt another sequence and retry).
  bool reserve(uint32_t n);
  // Records that K/V for `tokens` (which follow the committed ones) has been written; newly
  // filled blocks are registered in the prefix cache.
  void commit(std::span<const int32_t> tokens);

  // Drops the blocks past the committed tokens (e.g. after a cancelled step).
  void trim_reserved();

  uint32_t block_size() const { return block_size_; }
  uint32_t num_tokens() const { return static_cast<uint32_t>(tokens_.size()); }
  uint32_t capacity() const { return static_cast<uint32_t>(blocks_.size()) * block_size_; }
  std::span<const BlockId> blocks() const { return blocks_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  // The recurrent-state slot (none before the first reserve(), or when the pool has no slots).
  std::optional<uint32_t> state_slot() const { return state_slot_; }
  // The checkpoint slot to copy into the state slot before the next step (reuse_prefix); the
  // runner calls restored() once it has.
  std::optional<uint32_t> pending_restore() const { return restore_from_; }
  void restored();
  // Tokens the slot's state covers; a step may only run when that is num_tokens().
  uint32_t state_tokens() const { return state_tokens_; }
  bool state_current() const {
    return state_slot_ && !restore_from_ && state_tokens_ == num_tokens();
  }

  // Saving a checkpoint of the state after a step: begin_checkpoint() gives the checkpoint slot
  // to copy the state slot into, if the committed tokens end at a block boundary, that block
  // has no checkpoint yet and the pool has a slot to give; end_checkpoint() then attaches it to
  // the block (`rolling`: replacing this table's previous rolling checkpoint).
  std::optional<uint32_t> begin_checkpoint();
  void end_checkpoint(uint32_t slot, bool rolling);

 private:
  void register_full_blocks();

  BlockPool* pool_;
  uint32_t block_size_;
  std::vector<BlockId> blocks_;
  std::vector<int32_t> tokens_;      // committed tokens, in position order
  uint32_t registered_blocks_ = 0;   // leading blocks already hashed into the prefix cache
  BlockHash last_hash_ = kRootHash;  // hash of block registered_blocks_-1
  void release_all();

  std::optional<uint32_t> state_slot_;
  uint32_t state_tokens_ = 0;
  std::optional<uint32_t> restore_from_;  // pinned in the pool's checkpoints
  std::optional<BlockHash> rolling_;      // this table's last rolling checkpoint
};

}  // namespace vkllm::kv
