#include "engine/sampling/token_mask_cache.h"

namespace vkllm::sampling {

using grammar::Stack;
using grammar::Verdict;

TokenMaskCache::TokenMaskCache(const grammar::Grammar& g, const VocabularyIndex& vocab)
    : g_(g), vocab_(vocab) {}

TokenMaskCache::~TokenMaskCache() = default;

size_t TokenMaskCache::entries() const {
  std::lock_guard lock(mu_);
  return entries_;
}

std::unique_ptr<TokenMaskCache::Entry> TokenMaskCache::walk_top(int32_t node) const {
  auto e = std::make_unique<Entry>();
  e->accepted_bits.assign((static_cast<size_t>(vocab_.size()) + 63) / 64, 0);
  const auto& trie = vocab_.trie();
  const auto& ids = vocab_.token_ids();
  struct Level {
    std::vector<Stack> stacks;
    bool escaped = false;  // some path ended the top rule at or before this byte
  };
  std::vector<Level> levels(vocab_.max_depth() + 1);
  levels[0].stacks.push_back(Stack{node});
  auto record = [&](const VocabularyIndex::TrieNode& n, Verdict v) {
    for (int32_t k = n.tokens_begin; k < n.tokens_end; ++k) {
      const int32_t id = ids[static_cast<size_t>(k)];
      if (v == Verdict::kAccept) {
        e->accepted_bits[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
      } else if (v == Verdict::kUncertain) {
        e->uncertain.push_back(id);
      }
    }
  };
  size_t i = 1;
  while (i < trie.size()) {
    const auto& n = trie[i];
    const Level& parent = levels[n.depth - 1];
    Level& here = levels[n.depth];
    bool popped = false;
    grammar::step(g_, parent.stacks, n.byte, here.stacks, popped);
    const bool live = !here.stacks.empty();
    here.escaped = parent.escaped || popped;
    const Verdict v = live || popped ? Verdict::kAccept
                                     : (parent.escaped ? Verdict::kUncertain : Verdict::kReject);
    record(n, v);
    if (live) {
      ++i;
      continue;
    }
    // Nothing below this node can stay inside the rule: all rejected, or all uncertain.
    if (here.escaped) {
      for (size_t j = i + 1; j < static_cast<size_t>(n.end); ++j)
        record(trie[j], Verdict::kUncertain);
    }
    i = static_cast<size_t>(n.end);
  }
  return e;
}

std::unique_ptr<TokenMaskCache::Entry> TokenMaskCache::refine(const Entry& parent,
                                                              const Stack& suffix) const {
  auto e = std::make_unique<Entry>();
  for (int32_t id : parent.uncertain) {
    switch (grammar::classify(g_, suffix, vocab_.bytes(id))) {
      case Verdict::kAccept:
        e->accepted.push_back(id);
        break;
      case Verdict::kUncertain:
        e->uncertain.push_back(id);
        break;
      case Verdict::kReject:
        break;
    }
  }
  return e;
}

void TokenMaskCache::add_allowed(const Stack& stack, std::vector<uint64_t>& bits) {
  std::lock_guard lock(mu_);
  auto& slot = top_[stack.back()];
  if (!slot) slot = walk_top(stack.back()), ++entries_;
  Entry* e = slot.get();
  const size_t words = std::min(bits.size(), e->accepted_bits.size());
  for (size_t w = 0; w < words; ++w) bits[w] |= e->accepted_bits[w];
  for (size_t k = 1; k < stack.size() && !e->uncertain.empty(); ++k) {
    const int32_t frame = stack[stack.size() - 1 - k];
    auto& child = e->below[frame];
    if (!child) {
      child = refine(*e, Stack(stack.end() - static_cast<std::ptrdiff_t>(k) - 1, stack.end()));
      ++entries_;
    }
    e = child.get();
    for (int32_t id : e->accepted) bits[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  }
}

}  // namespace vkllm::sampling
