// What compile_format returns: the grammar, and the token mask caches built for it, one per
// vocabulary it has been used with (filled lazily by the sequences that use it).
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/sampling/grammar.h"
#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {

class TokenMaskCache;

class CompiledFormat {
 public:
  explicit CompiledFormat(grammar::Grammar g) : grammar_(std::move(g)) {}

  const grammar::Grammar& grammar() const { return grammar_; }
  // The cache for `vocab`, made on first use. Thread-safe.
  std::shared_ptr<TokenMaskCache> cache_for(
      const std::shared_ptr<const VocabularyIndex>& vocab) const;

 private:
  grammar::Grammar grammar_;
  mutable std::mutex mu_;
  mutable std::vector<
      std::pair<std::weak_ptr<const VocabularyIndex>, std::shared_ptr<TokenMaskCache>>>
      caches_;
};

}  // namespace vkllm::sampling
