#include "engine/kv/block_table.h"

#include <stdexcept>

namespace vkllm::kv {

BlockTable::BlockTable(BlockPool& pool, uint32_t block_size)
    : pool_(&pool), block_size_(block_size) {
  if (block_size == 0) throw std::invalid_argument("BlockTable: block size must be positive");
}

BlockTable::~BlockTable() {
  release_all();
}

void BlockTable::release_all() {
  if (!pool_) return;
  if (restore_from_) pool_->checkpoints().unpin(*restore_from_);
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
      state_tokens_(o.state_tokens_),
      restore_from_(o.restore_from_),
      rolling_(o.rolling_) {
  o.pool_ = nullptr;
  o.blocks_.clear();
  o.state_slot_.reset();
  o.restore_from_.reset();
}

uint32_t BlockTable::reuse_prefix(std::span<const int32_t> prompt) {
  if (!blocks_.empty() || !tokens_.empty()) {
    throw std::logic_error("BlockTable: reuse_prefix on a table that already holds tokens");
  }
  // Never reuse the block holding the last prompt token: that token must be computed.
  const size_t reusable_blocks = prompt.empty() ? 0 : (prompt.size() - 1) / block_size_;
  // With recurrent layers only a prefix whose state was kept can be resumed: the chain ends at
  // its deepest checkpoint.
  const bool recurrent = pool_->state_slots().size() > 0;
  std::vector<BlockHash> chain;
  size_t take = 0;
  BlockHash h = last_hash_;
  for (size_t i = 0; i < reusable_blocks; ++i) {
    h = hash_block(h, prompt.subspan(i * block_size_, block_size_));
    if (!pool_->is_cached(h)) {
      pool_->note_miss();
      break;
    }
    chain.push_back(h);
    if (!recurrent || pool_->checkpoints().find(h)) take = chain.size();
  }
  for (size_t i = 0; i < take; ++i) {
    blocks_.push_back(*pool_->acquire_cached(chain[i]));
    auto block_tokens = prompt.subspan(i * block_size_, block_size_);
    tokens_.insert(tokens_.end(), block_tokens.begin(), block_tokens.end());
    last_hash_ = chain[i];
    ++registered_blocks_;
  }
  if (recurrent && take > 0) {
    restore_from_ = pool_->checkpoints().find(last_hash_);
    pool_->checkpoints().pin(*restore_from_);
  }
  return num_tokens();
}

void BlockTable::restored() {
  if (!restore_from_ || !state_slot_)
    throw std::logic_error("BlockTable: restored() without a restore and a slot");
  pool_->checkpoints().unpin(*restore_from_);
  restore_from_.reset();
  state_tokens_ = num_tokens();
}

std::optional<uint32_t> BlockTable::begin_checkpoint() {
  if (!state_current() || num_tokens() == 0 || num_tokens() % block_size_ != 0 ||
      registered_blocks_ * block_size_ != num_tokens() || pool_->checkpoints().find(last_hash_))
    return std::nullopt;
  return pool_->checkpoints().acquire();
}

void BlockTable::end_checkpoint(uint32_t slot, bool rolling) {
  StateCheckpoints& cps = pool_->checkpoints();
  if (!cps.attach(slot, last_hash_) || !rolling) return;
  if (rolling_) cps.replace(*rolling_);
  rolling_ = last_hash_;
}

bool BlockTable::reserve(uint32_t n) {
  const uint64_t needed_tokens = uint64_t{num_tokens()} + n;
  const uint64_t needed_blocks = (needed_tokens + block_size_ - 1) / block_size_;
  const bool take_slot = !state_slot_ && pool_->state_slots().size() > 0;
  if (take_slot) {
    state_slot_ = pool_->state_slots().acquire();
    if (!state_slot_) return false;
    state_tokens_ = 0;  // a fresh state: whole for a table that starts at its first token
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
  // The step that wrote these tokens' K/V advanced a current state over them too.
  if (state_current()) state_tokens_ += static_cast<uint32_t>(tokens.size());
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
