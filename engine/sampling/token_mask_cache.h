// Which tokens a grammar position allows, cached per stack suffix (the adaptive token mask cache
// of XGrammar, generalised to any depth). For a stack's top node, one walk of the vocabulary
// trie sorts every token into accepted (it stays inside the top rule, so the frames below do not
// matter), rejected, or uncertain (it only gets through by ending the top rule). The uncertain
// ones are decided by the next frame down, cached per (top, next) and so on; what is still
// uncertain below the real bottom of the stack is rejected, since nothing follows the root.
// Masks of the usual positions then cost a bitset copy, not a vocabulary walk. A new top that
// no token shorter than d bytes can tell from one walked lately (the next character position of
// a bounded string, say) copies that one's entry and checks only the tokens of d bytes or more.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/vocabulary_index.h"

namespace vkllm::sampling {

class TokenMaskCache {
 public:
  TokenMaskCache(const grammar::Grammar& g, const VocabularyIndex& vocab);
  ~TokenMaskCache();

  // Sets in `bits` (one bit per token id, vocab.size() bits) the tokens that the canonical
  // stack `stack` allows next. Thread-safe.
  void add_allowed(const grammar::Stack& stack, std::vector<uint64_t>& bits);

  size_t entries() const;

 private:
  struct Entry {
    std::vector<uint64_t> accepted_bits;  // the top-only entries
    std::vector<int32_t> accepted;        // deeper entries: accepted beyond their parent's
    std::vector<int32_t> uncertain;
    std::unordered_map<int32_t, std::unique_ptr<Entry>> below;
  };
  struct Level {
    std::vector<grammar::Stack> stacks;  // the first `count` are the live ones
    size_t count = 0;
    bool escaped = false;  // some path ended the top rule at or before this byte
  };
  void step_into(const Level& in, uint8_t b, Level& out, std::vector<grammar::Stack>& scratch,
                 bool& popped) const;
  std::unique_ptr<Entry> walk_top(int32_t node) const;
  std::unique_ptr<Entry> derive(int32_t node) const;
  std::unique_ptr<Entry> refine(const Entry& parent, const grammar::Stack& suffix) const;

  const grammar::Grammar& g_;
  const VocabularyIndex& vocab_;
  mutable std::mutex mu_;
  std::unordered_map<int32_t, std::unique_ptr<Entry>> top_;
  std::unordered_map<int32_t, std::vector<int32_t>> recent_;  // per rule: tops walked lately
  size_t entries_ = 0;
};

}  // namespace vkllm::sampling
