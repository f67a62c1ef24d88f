// Constrained decoding: `format: "json"` and JSON-Schema formats compiled once per request shape
// into a grammar, and a per-sequence matcher that masks the logits of every token that cannot
// extend the output to a valid prefix. The vocabulary index (every token's bytes in a trie) is
// built once per model and shared by all sequences.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampling/format_spec.h"

namespace vkllm::tokenizer {
class Tokenizer;
}

namespace vkllm::sampling {

// A format the compiler does not support or a schema that is not valid; what() is the text of
// the 400 the server answers.
class FormatError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class CompiledFormat;   // a grammar: immutable, shareable across threads
class VocabularyIndex;  // a model's tokens as byte strings in a trie: immutable, shareable

// Compiles `spec` (blocking: up to the compiler's work budget, a fraction of a second; call off
// the I/O threads). Throws FormatError. Compiles are cached by spec.cache_key(): the same spec
// again gives the same CompiledFormat (whose token masks, per vocabulary, are then warm) or the
// same FormatError, and a request that asks while another compiles the same spec waits for that
// compile instead of doing it again.
std::shared_ptr<const CompiledFormat> compile_format_spec(const FormatSpec& spec);

// `format` is the string "json" or a JSON Schema object (OpenAI json_schema's `schema`).
std::shared_ptr<const CompiledFormat> compile_format(const nlohmann::json& format);
// The same for a format parsed as ordered_json: nlohmann::json sorts object keys, and the
// properties of a schema are written in the order the schema gives them.
std::shared_ptr<const CompiledFormat> compile_format_ordered(const nlohmann::ordered_json& format);

// The texts of the special tokens (control and end-of-generation tokens) that `texts` contain,
// as the tokenizer splits them out: what a format must name with grammar::special_token to get
// those tokens (the vocabulary index has no other bytes for them).
std::vector<std::string> special_token_texts(const tokenizer::Tokenizer& tok,
                                             const std::vector<std::string>& texts);

// Built once per loaded model (may take a while for 128k vocabularies: call off the I/O threads).
std::shared_ptr<const VocabularyIndex> build_vocabulary_index(const tokenizer::Tokenizer& tok);

// One sequence's position in the grammar. Not thread-safe; one per sequence.
class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const CompiledFormat> format,
                  std::shared_ptr<const VocabularyIndex> vocab);
  ~TokenConstraint();
  TokenConstraint(TokenConstraint&&) noexcept;

  // Sets to -infinity the logits of tokens that cannot come next. End-of-generation tokens stay
  // allowed only where the output is complete. `logits` covers the whole vocabulary.
  void mask(std::span<float> logits) const;
  // Whether `token` may come next.
  bool allows(int32_t token) const;
  // Advances past `token`; returns false (and changes nothing) if it is not allowed.
  bool accept(int32_t token);
  // The output so far is a complete value (end-of-generation may follow).
  bool complete() const;
  // Complete and nothing else can follow: the sequence should stop now.
  bool finished() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::sampling
