#include "engine/sampling/token_constraint.h"

#include <algorithm>
#include <bit>
#include <future>
#include <limits>
#include <list>
#include <mutex>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "engine/sampling/compiled_format.h"
#include "engine/sampling/gbnf_compiler.h"
#include "engine/sampling/grammar_matcher.h"
#include "engine/sampling/json_schema_compiler.h"
#include "engine/sampling/regex_compiler.h"
#include "engine/sampling/token_mask_cache.h"
#include "engine/sampling/tool_call_grammar.h"
#include "engine/sampling/vocabulary_index.h"
#include "engine/tokenizer/tokenizer.h"

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

namespace {

grammar::Grammar compile_grammar(const FormatSpec& spec) {
  switch (spec.kind) {
    case FormatSpec::Kind::json:
      return compile_json_grammar(spec.json);
    case FormatSpec::Kind::gbnf:
      return compile_gbnf(spec.text);
    case FormatSpec::Kind::regex: {
      grammar::GrammarBuilder gb("invalid regex: ");
      const int32_t root = gb.declare("root");
      gb.define(root, compile_regex(spec.text),
                "the regex " + nlohmann::json(spec.text).dump(
                                   -1, ' ', false, nlohmann::json::error_handler_t::replace),
                true);
      return gb.finish(root, {}, "invalid regex: it matches no non-empty output");
    }
    case FormatSpec::Kind::choice: {
      grammar::GrammarBuilder gb("invalid choice: ");
      const int32_t root = gb.declare("root");
      std::vector<grammar::Frag> choices;
      for (const std::string& c : spec.choices) choices.push_back(grammar::literal(c));
      gb.define(root, grammar::alt(std::move(choices)), "the choice", true);
      return gb.finish(root, {}, "invalid choice: it needs at least one non-empty string");
    }
    case FormatSpec::Kind::tool_calls:
      return compile_tool_calls(spec.tool_calls);
  }
  throw FormatError("unknown format kind");
}

}  // namespace

std::shared_ptr<const CompiledFormat> compile_format_spec(const FormatSpec& spec) {
  // Requests repeat their formats; handing back the same CompiledFormat keeps its token mask
  // caches warm (a first use walks the vocabulary trie: tens of ms on 128k vocabularies). A
  // format that fails is remembered too: its 400 comes at once the next time.
  constexpr size_t kRecent = 32;
  using Result = std::shared_future<std::shared_ptr<const CompiledFormat>>;
  static std::mutex mu;
  static std::list<std::pair<std::string, Result>> recent;
  const std::string key = spec.cache_key();
  std::promise<std::shared_ptr<const CompiledFormat>> promise;
  Result result;
  bool mine = false;  // this call compiles; the others wait for its result
  {
    std::lock_guard lock(mu);
    auto it =
        std::find_if(recent.begin(), recent.end(), [&](const auto& e) { return e.first == key; });
    if (it != recent.end()) {
      recent.splice(recent.begin(), recent, it);
      result = it->second;
    } else {
      result = promise.get_future().share();
      recent.emplace_front(key, result);
      if (recent.size() > kRecent) recent.pop_back();
      mine = true;
    }
  }
  if (mine) {
    try {
      promise.set_value(std::make_shared<const CompiledFormat>(compile_grammar(spec)));
    } catch (const FormatError&) {
      promise.set_exception(std::current_exception());
    } catch (...) {
      // Not the format's fault (memory): answer this time, try again next time.
      promise.set_exception(std::current_exception());
      std::lock_guard lock(mu);
      std::erase_if(recent, [&](const auto& e) { return e.first == key; });
    }
#if defined(__GLIBC__)
    // A compile allocates and frees up to a few hundred MB; glibc keeps freed memory in its
    // arenas, so the server would stay at the compile's peak RSS for good. Give it back.
    malloc_trim(0);
#endif
  }
  return result.get();
}

std::shared_ptr<const CompiledFormat> compile_format_ordered(const nlohmann::ordered_json& format) {
  return compile_format_spec(FormatSpec::of_json(format));
}

std::shared_ptr<const CompiledFormat> compile_format(const nlohmann::json& format) {
  return compile_format_ordered(nlohmann::ordered_json(format));
}

std::vector<std::string> special_token_texts(const tokenizer::Tokenizer& tok,
                                             const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (const std::string& text : texts) {
    for (const int32_t id : tok.encode(text, false, true)) {
      if (!tok.is_control(id) && !tok.is_end_of_generation(id)) continue;
      const std::string& t = tok.vocab().text(id);
      if (!t.empty() && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    }
  }
  return out;
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
  if (impl_->vocab->is_end_of_generation(token) && impl_->matcher.complete()) return true;
  if (!impl_->vocab->in_trie(token)) return false;
  grammar::Matcher probe = impl_->matcher;
  return probe.advance(impl_->vocab->bytes(token));
}

bool TokenConstraint::accept(int32_t token) {
  if (!allows(token)) return false;
  // An end-of-generation token the format names (Harmony's <|call|>) is read as its bytes;
  // either way nothing follows it.
  if (impl_->vocab->in_trie(token)) impl_->matcher.advance(impl_->vocab->bytes(token));
  if (impl_->vocab->is_end_of_generation(token)) impl_->ended = true;
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
