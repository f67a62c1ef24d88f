#include "engine/kv/block_table.h"

#include <stdexcept>

namespace vkllm::kv {

BlockTable::BlockTable(BlockPool& pool, uint32_t block_size)
    : pool_(&pool), block_size_(block_size) {
  if (block_size == 0) throw std::invalid_argument("BlockTable: block size must be positive");
}

BlockTable::~BlockTable() {
  if (!pool_) return;
  pool_->release(blocks_);
  if (state_slot_) pool_->state_slots().release(*state_slot_);
}

BlockTable::BlockTable(BlockTable&& o) noexcept
    : pool_(o.pool_),
      block_size_(o.block_size_),
      blocks_(std::move(o.blocks_)),
      tokens_(std::move(o.tokens_)),
      registered_blocks_(o.registered_blocks_),
      last_hash_(o.last_hash_),
      state_slot_(o.state_slot_),
      state_origin_(o.state_origin_) {
  o.pool_ = nullptr;
  o.blocks_.clear();
  o.state_slot_.reset();
}

uint32_t BlockTable::reuse_prefix(std::span<const int32_t> prompt) {
  if (!blocks_.empty() || !tokens_.empty()) {
    throw std::logic_error("BlockTable: reuse_prefix on a table that already holds tokens");
  }
  // Never reuse the block holding the last prompt token: that token must be computed.
  const size_t reusable_blocks = prompt.empty() ? 0 : (prompt.size() - 1) / block_size_;
  for (size_t i = 0; i < reusable_blocks; ++i) {
    auto block_tokens = prompt.subspan(i * block_size_, block_size_);
    BlockHash h = hash_block(last_hash_, block_tokens);
    auto id = pool_->acquire_cached(h);
    if (!id) {
      pool_->note_miss();
      break;
    }
    blocks_.push_back(*id);
    tokens_.insert(tokens_.end(), block_tokens.begin(), block_tokens.end());
    last_hash_ = h;
    ++registered_blocks_;
  }
  return num_tokens();
}

bool BlockTable::reserve(uint32_t n) {
  const uint64_t needed_tokens = uint64_t{num_tokens()} + n;
  const uint64_t needed_blocks = (needed_tokens + block_size_ - 1) / block_size_;
  const bool take_slot = !state_slot_ && pool_->state_slots().size() > 0;
  if (take_slot) {
    state_slot_ = pool_->state_slots().acquire();
    if (!state_slot_) return false;
    state_origin_ = num_tokens();
  }
  if (needed_blocks <= blocks_.size()) return true;
  auto fresh = pool_->allocate(static_cast<uint32_t>(needed_blocks - blocks_.size()));
  if (!fresh) {
    if (take_slot) {
      pool_->state_slots().release(*state_slot_);
      state_slot_.reset();
    }
    return false;
  }
  blocks_.insert(blocks_.end(), fresh->begin(), fresh->end());
  return true;
}

void BlockTable::commit(std::span<const int32_t> tokens) {
  if (num_tokens() + tokens.size() > capacity()) {
    throw std::logic_error("BlockTable: commit past reserved capacity");
  }
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  register_full_blocks();
}

void BlockTable::register_full_blocks() {
  const uint32_t full = num_tokens() / block_size_;
  for (; registered_blocks_ < full; ++registered_blocks_) {
    std::span<const int32_t> block_tokens(tokens_.data() + size_t{registered_blocks_} * block_size_,
                                          block_size_);
    last_hash_ = hash_block(last_hash_, block_tokens);
    // If an identical block is already registered we keep our own copy: swapping it in would
    // save memory but the KV data is the same, and our copy is simply not shared.
    pool_->register_full(blocks_[registered_blocks_], last_hash_);
  }
}

void BlockTable::trim_reserved() {
  const size_t keep = (size_t{num_tokens()} + block_size_ - 1) / block_size_;
  while (blocks_.size() > keep) {
    pool_->release(blocks_.back());
    blocks_.pop_back();
  }
}

}  // namespace vkllm::kv
