#include "engine/sampling/vocabulary_index.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "engine/sampling/grammar.h"
#include "engine/tokenizer/tokenizer.h"

namespace vkllm::sampling {

namespace {

// In the trie: a special token's marked text, or ordinary bytes without the special byte (a
// byte token 0xFF must not spell a special token's start).
bool trie_piece(std::string_view piece) {
  return grammar::is_special_token_bytes(piece) ||
         (!piece.empty() && piece.find(static_cast<char>(grammar::kSpecialByte)) == piece.npos);
}

}  // namespace

VocabularyIndex::VocabularyIndex(const tokenizer::Tokenizer& tok) {
  const int32_t n = tok.vocab_size();
  pieces_.resize(static_cast<size_t>(n));
  in_trie_.assign(static_cast<size_t>(n), 0);
  eog_flag_.assign(static_cast<size_t>(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    const bool eog = tok.is_end_of_generation(id);
    if (eog) {
      eog_flag_[static_cast<size_t>(id)] = 1;
      eog_.push_back(id);
    }
    std::string& piece = pieces_[static_cast<size_t>(id)];
    if (eog || tok.is_control(id)) {
      // Only a format that names the token by its text (grammar::special_token) reaches it.
      const std::string& text = tok.vocab().text(id);
      if (!text.empty()) piece = grammar::special_token_bytes(text);
    } else {
      piece = tok.token_to_piece(id, false);
    }
    in_trie_[static_cast<size_t>(id)] = trie_piece(piece);
  }
  build();
}

VocabularyIndex::VocabularyIndex(std::vector<std::string> pieces, std::vector<bool> usable,
                                 std::vector<int32_t> end_of_generation)
    : pieces_(std::move(pieces)) {
  const size_t n = pieces_.size();
  if (usable.size() != n) throw std::invalid_argument("usable must cover every token");
  in_trie_.assign(n, 0);
  eog_flag_.assign(n, 0);
  for (int32_t id : end_of_generation) {
    if (id < 0 || static_cast<size_t>(id) >= n) throw std::invalid_argument("bad eog token id");
    eog_flag_[static_cast<size_t>(id)] = 1;
  }
  for (size_t id = 0; id < n; ++id) {
    if (eog_flag_[id]) {
      eog_.push_back(static_cast<int32_t>(id));
      if (!grammar::is_special_token_bytes(pieces_[id])) pieces_[id].clear();
    }
    in_trie_[id] = usable[id] && trie_piece(pieces_[id]);
  }
  build();
}

void VocabularyIndex::build() {
  std::vector<int32_t> order;
  for (int32_t id = 0; id < size(); ++id) {
    if (in_trie(id)) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes(a) != bytes(b) ? bytes(a) < bytes(b) : a < b;
  });
  trie_.push_back({0, 0, 0, 0, 0});
  std::vector<int32_t> path{0};  // path[d]: the node of the current prefix of length d
  std::string_view prev;
  auto close_to = [&](size_t depth) {
    while (path.size() > depth + 1) {
      trie_[static_cast<size_t>(path.back())].end = static_cast<int32_t>(trie_.size());
      path.pop_back();
    }
  };
  for (int32_t id : order) {
    const std::string_view b = bytes(id);
    size_t common = 0;
    while (common < b.size() && common < prev.size() && b[common] == prev[common]) ++common;
    close_to(common);
    for (size_t d = common; d < b.size(); ++d) {
      const int32_t tokens_at = static_cast<int32_t>(token_ids_.size());
      trie_.push_back({static_cast<uint8_t>(b[d]),
                       static_cast<uint16_t>(std::min<size_t>(d + 1, 65535)), 0, tokens_at,
                       tokens_at});
      path.push_back(static_cast<int32_t>(trie_.size() - 1));
    }
    TrieNode& node = trie_[static_cast<size_t>(path.back())];
    if (node.tokens_end != static_cast<int32_t>(token_ids_.size())) {
      node.tokens_begin = node.tokens_end = static_cast<int32_t>(token_ids_.size());
    }
    token_ids_.push_back(id);
    ++node.tokens_end;
    max_depth_ = std::max(max_depth_, b.size());
    prev = b;
  }
  close_to(0);
  trie_[0].end = static_cast<int32_t>(trie_.size());
  longest_first_ = order;
  std::stable_sort(longest_first_.begin(), longest_first_.end(),
                   [&](int32_t a, int32_t b) { return bytes(a).size() > bytes(b).size(); });
}

size_t VocabularyIndex::count_at_least(size_t n) const {
  const auto it = std::partition_point(longest_first_.begin(), longest_first_.end(),
                                       [&](int32_t id) { return bytes(id).size() >= n; });
  return static_cast<size_t>(it - longest_first_.begin());
}

}  // namespace vkllm::sampling
