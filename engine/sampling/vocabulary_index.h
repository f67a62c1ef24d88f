// A model's tokens as byte strings, and a trie over them in preorder so a walk can skip a whole
// subtree (every token that starts with a rejected prefix) in one step. Control and
// end-of-generation tokens are there as grammar::special_token_bytes of their text, which only a
// format that names them allows (grammar.h: kSpecialByte); tokens whose bytes hold 0xFF are not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {

class VocabularyIndex {
 public:
  struct TrieNode {
    uint8_t byte;          // the last byte of the prefix this node stands for
    uint16_t depth;        // the prefix's length; the root is 0
    int32_t end;           // one past the last node of this subtree
    int32_t tokens_begin;  // tokens whose bytes are exactly this prefix: token_ids()[begin, end)
    int32_t tokens_end;
  };

  explicit VocabularyIndex(const tokenizer::Tokenizer& tok);
  // `pieces[id]` is a token's bytes (a special token's: grammar::special_token_bytes of its
  // text); `usable[id]` false for tokens never allowed. End-of-generation tokens are in the trie
  // when their piece is a special token's.
  VocabularyIndex(std::vector<std::string> pieces, std::vector<bool> usable,
                  std::vector<int32_t> end_of_generation);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  std::string_view bytes(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  bool is_end_of_generation(int32_t id) const { return eog_flag_[static_cast<size_t>(id)] != 0; }
  const std::vector<int32_t>& end_of_generation() const { return eog_; }
  // In the trie: a special token's marked text, or ordinary non-empty bytes without 0xFF.
  bool in_trie(int32_t id) const { return in_trie_[static_cast<size_t>(id)] != 0; }
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  size_t max_depth() const { return max_depth_; }
  // The trie's tokens, longest first.
  const std::vector<int32_t>& longest_first() const { return longest_first_; }
  // How many tokens have at least `n` bytes (a prefix of longest_first()).
  size_t count_at_least(size_t n) const;

 private:
  void build();

  std::vector<std::string> pieces_;
  std::vector<char> in_trie_;
  std::vector<char> eog_flag_;
  std::vector<int32_t> eog_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> token_ids_;
  std::vector<int32_t> longest_first_;
  size_t max_depth_ = 0;
};

}  // namespace vkllm::sampling
