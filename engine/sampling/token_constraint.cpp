#include "engine/sampling/token_constraint.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <list>
#include <mutex>

#include "engine/sampling/compiled_format.h"
#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/json_schema_compiler.h"
#include "engine/sampling/token_mask_cache.h"
#include "engine/sampling/vocabulary_index.h"

namespace vkllm::sampling {

std::shared_ptr<TokenMaskCache> CompiledFormat::cache_for(
    const std::shared_ptr<const VocabularyIndex>& vocab) const {
  std::lock_guard lock(mu_);
  std::erase_if(caches_, [](const auto& c) { return c.first.expired(); });
  for (const auto& [v, cache] : caches_) {
    if (v.lock() == vocab) return cache;
  }
  auto cache = std::make_shared<TokenMaskCache>(grammar_, *vocab);
  caches_.emplace_back(vocab, cache);
  return cache;
}

std::shared_ptr<const CompiledFormat> compile_format_ordered(const nlohmann::ordered_json& format) {
  // Requests repeat their formats; handing back the same CompiledFormat keeps its token mask
  // caches warm (a first use walks the vocabulary trie: tens of ms on 128k vocabularies).
  constexpr size_t kRecent = 16;
  static std::mutex mu;
  static std::list<std::pair<std::string, std::shared_ptr<const CompiledFormat>>> recent;
  std::string key = format.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  {
    std::lock_guard lock(mu);
    for (auto it = recent.begin(); it != recent.end(); ++it) {
      if (it->first == key) {
        recent.splice(recent.begin(), recent, it);
        return it->second;
      }
    }
  }
  auto compiled = std::make_shared<const CompiledFormat>(compile_json_grammar(format));
  std::lock_guard lock(mu);
  recent.emplace_front(std::move(key), compiled);
  if (recent.size() > kRecent) recent.pop_back();
  return compiled;
}

std::shared_ptr<const CompiledFormat> compile_format(const nlohmann::json& format) {
  return compile_format_ordered(nlohmann::ordered_json(format));
}

std::shared_ptr<const VocabularyIndex> build_vocabulary_index(const tokenizer::Tokenizer& tok) {
  return std::make_shared<const VocabularyIndex>(tok);
}

struct TokenConstraint::Impl {
  std::shared_ptr<const CompiledFormat> format;
  std::shared_ptr<const VocabularyIndex> vocab;
  std::shared_ptr<TokenMaskCache> cache;
  grammar::Matcher matcher;
  bool ended = false;  // an end-of-generation token was accepted
  mutable std::vector<uint64_t> bits;
  mutable bool bits_valid = false;

  Impl(std::shared_ptr<const CompiledFormat> f, std::shared_ptr<const VocabularyIndex> v)
      : format(std::move(f)),
        vocab(std::move(v)),
        cache(format->cache_for(vocab)),
        matcher(format->grammar()) {}

  const std::vector<uint64_t>& allowed() const {
    if (bits_valid) return bits;
    bits.assign((static_cast<size_t>(vocab->size()) + 63) / 64, 0);
    if (!ended) {
      for (const grammar::Stack& s : matcher.stacks()) cache->add_allowed(s, bits);
      if (matcher.complete()) {
        for (int32_t id : vocab->end_of_generation())
          bits[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
      }
    }
    bits_valid = true;
    return bits;
  }
};

TokenConstraint::TokenConstraint(std::shared_ptr<const CompiledFormat> format,
                                 std::shared_ptr<const VocabularyIndex> vocab)
    : impl_(std::make_unique<Impl>(std::move(format), std::move(vocab))) {}

TokenConstraint::~TokenConstraint() = default;
TokenConstraint::TokenConstraint(TokenConstraint&&) noexcept = default;

void TokenConstraint::mask(std::span<float> logits) const {
  const auto& bits = impl_->allowed();
  const size_t n = std::min(logits.size(), static_cast<size_t>(impl_->vocab->size()));
  constexpr float kOff = -std::numeric_limits<float>::infinity();
  // Per word of 64 tokens, touch only the minority: the blocked tokens where most are allowed
  // (inside strings), the allowed ones (saved, then the word filled) where few are.
  for (size_t w = 0; w * 64 < n; ++w) {
    const size_t base = w * 64;
    const size_t len = std::min<size_t>(64, n - base);
    const uint64_t valid = len < 64 ? (uint64_t{1} << len) - 1 : ~uint64_t{0};
    const uint64_t on = bits[w] & valid;
    const uint64_t off = ~bits[w] & valid;
    float* row = logits.data() + base;
    if (std::popcount(off) <= std::popcount(on)) {
      for (uint64_t b = off; b != 0; b &= b - 1) row[std::countr_zero(b)] = kOff;
      continue;
    }
    float kept[64];
    int k = 0;
    for (uint64_t b = on; b != 0; b &= b - 1) kept[k++] = row[std::countr_zero(b)];
    std::fill(row, row + len, kOff);
    k = 0;
    for (uint64_t b = on; b != 0; b &= b - 1) row[std::countr_zero(b)] = kept[k++];
  }
  for (size_t i = n; i < logits.size(); ++i) logits[i] = kOff;
}

bool TokenConstraint::allows(int32_t token) const {
  if (token < 0 || token >= impl_->vocab->size() || impl_->ended) return false;
  if (impl_->bits_valid) return (impl_->bits[static_cast<size_t>(token) / 64] >> (token % 64)) & 1;
  if (impl_->vocab->is_end_of_generation(token)) return impl_->matcher.complete();
  if (!impl_->vocab->in_trie(token)) return false;
  grammar::Matcher probe = impl_->matcher;
  return probe.advance(impl_->vocab->bytes(token));
}

bool TokenConstraint::accept(int32_t token) {
  if (!allows(token)) return false;
  if (impl_->vocab->is_end_of_generation(token)) {
    impl_->ended = true;
  } else {
    impl_->matcher.advance(impl_->vocab->bytes(token));
  }
  impl_->bits_valid = false;
  return true;
}

bool TokenConstraint::complete() const {
  return impl_->matcher.complete();
}

bool TokenConstraint::finished() const {
  return impl_->ended || impl_->matcher.finished();
}

}  // namespace vkllm::sampling
