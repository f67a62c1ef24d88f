#include "engine/kv/block_pool.h"

#include <stdexcept>
#include <string>

namespace vkllm::kv {

namespace {
// splitmix64 finaliser: cheap, well mixed, and stable across builds (the hash is only ever
// compared within one process, but stability keeps test expectations simple).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ (tokens.size() * 0x100000001b3ull));
  for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h;
}

BlockPool::BlockPool(uint32_t num_blocks, uint32_t state_slots, uint32_t checkpoints)
    : blocks_(num_blocks), state_slots_(state_slots), checkpoints_(checkpoints) {
  if (num_blocks == 0) throw std::invalid_argument("BlockPool: need at least one block");
  free_.reserve(num_blocks);
  for (uint32_t i = num_blocks; i-- > 0;) free_.push_back(i);
}

uint32_t BlockPool::available() const {
  return static_cast<uint32_t>(free_.size() + lru_.size());
}

std::optional<BlockId> BlockPool::take_free_or_evict() {
  if (!free_.empty()) {
    BlockId id = free_.back();
    free_.pop_back();
    return id;
  }
  if (lru_.empty()) return std::nullopt;
  BlockId id = lru_.front();
  lru_.pop_front();
  Block& b = blocks_[id];
  by_hash_.erase(*b.hash);
  checkpoints_.drop(*b.hash);  // the state after a prefix that is gone is of no more use
  b.hash.reset();
  ++stats_.evictions;
  return id;
}

std::optional<BlockId> BlockPool::allocate() {
  auto id = take_free_or_evict();
  if (id) blocks_[*id].refs = 1;
  return id;
}

std::optional<std::vector<BlockId>> BlockPool::allocate(uint32_t n) {
  if (n > available()) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) out.push_back(*allocate());
  return out;
}

std::optional<BlockId> BlockPool::acquire_cached(BlockHash hash) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  BlockId id = it->second;
  Block& b = blocks_[id];
  if (b.refs == 0) lru_.erase(b.lru_pos);
  ++b.refs;
  ++stats_.prefix_hits;
  return id;
}

BlockId BlockPool::register_full(BlockId block, BlockHash hash) {
  Block& b = blocks_.at(block);
  if (b.refs == 0) throw std::logic_error("BlockPool: registering an unreferenced block");
  if (b.hash) {
    if (*b.hash != hash) throw std::logic_error("BlockPool: block registered under two hashes");
    return block;
  }
  auto [it, inserted] = by_hash_.emplace(hash, block);
  if (inserted) b.hash = hash;
  return it->second;
}

void BlockPool::add_ref(BlockId block) {
  Block& b = blocks_.at(block);
  if (b.refs == 0) throw std::logic_error("BlockPool: add_ref on an unowned block");
  ++b.refs;
}

void BlockPool::release(BlockId block) {
  Block& b = blocks_.at(block);
  if (b.refs == 0) {
    throw std::logic_error("BlockPool: release of unreferenced block " + std::to_string(block));
  }
  if (--b.refs > 0) return;
  if (b.hash) {
    b.lru_pos = lru_.insert(lru_.end(), block);
  } else {
    free_.push_back(block);
  }
}

void BlockPool::release(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) release(b);
}

BlockPoolStats BlockPool::stats() const {
  BlockPoolStats s = stats_;
  s.total = num_blocks();
  s.cached = static_cast<uint32_t>(lru_.size());
  s.free = static_cast<uint32_t>(free_.size());
  s.used = s.total - s.cached - s.free;
  return s;
}

}  // namespace vkllm::kv
