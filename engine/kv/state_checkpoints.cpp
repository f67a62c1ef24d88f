#include "engine/kv/state_checkpoints.h"

#include <stdexcept>

namespace vkllm::kv {

StateCheckpoints::StateCheckpoints(uint32_t n) : slots_(n) {
  free_.reserve(n);
  for (uint32_t i = n; i-- > 0;) free_.push_back(i);  // slot 0 handed out first
}

std::optional<uint32_t> StateCheckpoints::acquire() {
  if (free_.empty()) {
    // The least recently used checkpoint nobody is about to restore.
    auto it = lru_.begin();
    while (it != lru_.end() && slots_[*it].pins > 0) ++it;
    if (it == lru_.end()) return std::nullopt;
    ++stats_.replaced;
    free_slot(*it);
  }
  const uint32_t s = free_.back();
  free_.pop_back();
  slots_[s].use = Use::taken;
  return s;
}

bool StateCheckpoints::attach(uint32_t slot, BlockHash hash) {
  Slot& s = slots_.at(slot);
  if (s.use != Use::taken) throw std::logic_error("StateCheckpoints: attach of a slot not taken");
  if (by_hash_.contains(hash)) {
    discard(slot);
    return false;
  }
  s.use = Use::attached;
  s.hash = hash;
  s.lru_pos = lru_.insert(lru_.end(), slot);
  by_hash_.emplace(hash, slot);
  ++stats_.taken;
  return true;
}

void StateCheckpoints::discard(uint32_t slot) {
  Slot& s = slots_.at(slot);
  if (s.use != Use::taken) throw std::logic_error("StateCheckpoints: discard of a slot not taken");
  s.use = Use::free;
  free_.push_back(slot);
}

std::optional<uint32_t> StateCheckpoints::find(BlockHash hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

void StateCheckpoints::pin(uint32_t slot) {
  Slot& s = slots_.at(slot);
  if (s.use != Use::attached) throw std::logic_error("StateCheckpoints: pin of a free slot");
  ++s.pins;
  lru_.splice(lru_.end(), lru_, s.lru_pos);
  ++stats_.restored;
}

void StateCheckpoints::unpin(uint32_t slot) {
  Slot& s = slots_.at(slot);
  if (s.pins == 0) throw std::logic_error("StateCheckpoints: unpin of an unpinned slot");
  --s.pins;
}

void StateCheckpoints::drop(BlockHash hash) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return;
  // A pinned checkpoint's table holds references on the blocks up to its own: that block cannot
  // be evicted.
  if (slots_[it->second].pins > 0)
    throw std::logic_error("StateCheckpoints: dropping a checkpoint a table will restore");
  ++stats_.dropped;
  free_slot(it->second);
}

void StateCheckpoints::replace(BlockHash hash) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end() || slots_[it->second].pins > 0) return;
  ++stats_.replaced;
  free_slot(it->second);
}

void StateCheckpoints::free_slot(uint32_t slot) {
  Slot& s = slots_[slot];
  lru_.erase(s.lru_pos);
  by_hash_.erase(s.hash);
  s = Slot{};
  free_.push_back(slot);
}

StateCheckpointStats StateCheckpoints::stats() const {
  StateCheckpointStats st = stats_;
  st.total = size();
  st.held = size() - static_cast<uint32_t>(free_.size());
  return st;
}

}  // namespace vkllm::kv
