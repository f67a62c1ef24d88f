#include "engine/sampling/token_mask_cache.h"

#include <algorithm>

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

// grammar::step for the trie walk, which runs it once per trie node: the stacks of each depth
// are kept between calls so that their memory is reused, and a step to a node with only byte
// edges (the common case: inside a string, a literal, a number) needs no closure.
void TokenMaskCache::step_into(const Level& in, uint8_t b, Level& out, std::vector<Stack>& scratch,
                               bool& popped) const {
  out.count = 0;
  auto slot = [&]() -> Stack& {
    if (out.count == out.stacks.size()) out.stacks.emplace_back();
    return out.stacks[out.count++];
  };
  for (size_t k = 0; k < in.count; ++k) {
    const Stack& s = in.stacks[k];
    const int32_t t = g_.step(s.back(), b);
    if (t < 0) continue;
    const grammar::Node& n = g_.nodes[static_cast<size_t>(t)];
    if (n.calls.empty() && !n.final) {
      Stack& o = slot();
      o.assign(s.begin(), s.end());
      o.back() = t;
      continue;
    }
    scratch.clear();
    Stack next = s;
    next.back() = t;
    grammar::close(g_, std::move(next), scratch, popped);
    for (const Stack& c : scratch) slot().assign(c.begin(), c.end());
  }
  if (out.count > 1) {
    const auto first = out.stacks.begin();
    const auto last = first + static_cast<std::ptrdiff_t>(out.count);
    std::sort(first, last);
    out.count = static_cast<size_t>(std::unique(first, last) - first);
  }
}

std::unique_ptr<TokenMaskCache::Entry> TokenMaskCache::walk_top(int32_t node) const {
  auto e = std::make_unique<Entry>();
  e->accepted_bits.assign((static_cast<size_t>(vocab_.size()) + 63) / 64, 0);
  const auto& trie = vocab_.trie();
  const auto& ids = vocab_.token_ids();
  std::vector<Level> levels(vocab_.max_depth() + 1);
  levels[0].stacks.push_back(Stack{node});
  levels[0].count = 1;
  std::vector<Stack> scratch;
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
    step_into(parent, n.byte, here, scratch, popped);
    const bool live = here.count > 0;
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

std::unique_ptr<TokenMaskCache::Entry> TokenMaskCache::derive(int32_t node) const {
  const auto it = recent_.find(g_.nodes[static_cast<size_t>(node)].rule);
  if (it == recent_.end()) return nullptr;
  const int limit = static_cast<int>(vocab_.max_depth());
  // Worth it while the tokens to check are fewer than a walk would visit; the latest walked
  // tops come first (the previous character position, typically).
  const size_t worth = static_cast<size_t>(vocab_.size()) / 8;
  const Entry* best = nullptr;
  size_t n = worth + 1;
  for (auto c = it->second.rbegin(); c != it->second.rend() && n > 256; ++c) {
    const int d = grammar::distinguishing_depth(g_, *c, node, limit);
    const size_t m = vocab_.count_at_least(static_cast<size_t>(d));
    if (m < n) best = top_.at(*c).get(), n = m;
  }
  if (!best || n > worth) return nullptr;
  auto e = std::make_unique<Entry>();
  e->accepted_bits = best->accepted_bits;
  const auto& ids = vocab_.longest_first();
  std::vector<char> recheck(static_cast<size_t>(vocab_.size()), 0);
  for (size_t k = 0; k < n; ++k) {
    const auto id = static_cast<size_t>(ids[k]);
    recheck[id] = 1;
    e->accepted_bits[id / 64] &= ~(uint64_t{1} << (id % 64));
  }
  for (int32_t id : best->uncertain) {
    if (!recheck[static_cast<size_t>(id)]) e->uncertain.push_back(id);
  }
  const Stack start{node};
  for (size_t k = 0; k < n; ++k) {
    const int32_t id = ids[k];
    switch (grammar::classify(g_, start, vocab_.bytes(id))) {
      case Verdict::kAccept:
        e->accepted_bits[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
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
  const int32_t top = stack.back();
  auto& slot = top_[top];
  if (!slot) {
    slot = derive(top);
    if (!slot) slot = walk_top(top);
    ++entries_;
    auto& recent = recent_[g_.nodes[static_cast<size_t>(top)].rule];
    if (recent.size() == 8) recent.erase(recent.begin());
    recent.push_back(top);
  }
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
