#include "engine/tokenizer/special_split.h"

#include <cctype>
#include <cstring>
#include <list>

namespace vkllm::tokenizer {
namespace {

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

uint32_t two_bytes(const char* p) {
  return (uint32_t{static_cast<uint8_t>(p[0])} << 8) | static_cast<uint8_t>(p[1]);
}

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab)
    : vocab_(vocab), with_control_(build_index(true)), user_defined_only_(build_index(false)) {}

SpecialTokenSplitter::Index SpecialTokenSplitter::build_index(bool parse_special) const {
  Index index;
  std::vector<uint32_t> counts(65536, 0);
  std::vector<int32_t> eligible;
  for (int32_t id : vocab_.special_tokens) {
    if (!parse_special && vocab_.type(id) != TokenType::kUserDefined) continue;
    const std::string& t = vocab_.text(id);
    if (t.size() == 1) {
      index.one_byte[static_cast<uint8_t>(t[0])].push_back(id);
    } else {
      ++counts[two_bytes(t.data())];
      eligible.push_back(id);
    }
  }
  index.start.assign(65537, 0);
  for (size_t k = 0; k < 65536; ++k) index.start[k + 1] = index.start[k] + counts[k];
  index.ids.resize(eligible.size());
  std::vector<uint32_t> fill(index.start.begin(), index.start.end() - 1);
  for (int32_t id : eligible) index.ids[fill[two_bytes(vocab_.text(id).data())]++] = id;
  return index;
}

std::vector<int32_t> SpecialTokenSplitter::occurring(std::string_view text,
                                                     const Index& index) const {
  std::vector<bool> seen;
  bool any = false;
  auto mark = [&](int32_t id) {
    if (seen.empty()) seen.assign(static_cast<size_t>(vocab_.size()), false);
    seen[static_cast<size_t>(id)] = true;
    any = true;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    for (int32_t id : index.one_byte[static_cast<uint8_t>(text[i])]) mark(id);
    if (i + 1 >= text.size() || index.ids.empty()) continue;
    const uint32_t key = two_bytes(text.data() + i);
    for (uint32_t k = index.start[key]; k < index.start[key + 1]; ++k) {
      const int32_t id = index.ids[k];
      const std::string& t = vocab_.text(id);
      if (t.size() <= text.size() - i && std::memcmp(t.data(), text.data() + i, t.size()) == 0) {
        mark(id);
      }
    }
  }
  std::vector<int32_t> out;
  if (!any) return out;
  for (int32_t id : vocab_.special_tokens) {
    if (seen[static_cast<size_t>(id)]) out.push_back(id);
  }
  return out;
}

std::vector<Fragment> SpecialTokenSplitter::split(std::string_view text, bool parse_special) const {
  std::list<Fragment> parts;
  if (!text.empty()) parts.push_back(Fragment{-1, text});
  const Index& index = parse_special ? with_control_ : user_defined_only_;
  for (int32_t id : occurring(text, index)) {
    const std::string& special = vocab_.text(id);
    const bool lstrip = vocab_.lstrip[static_cast<size_t>(id)];
    const bool rstrip = vocab_.rstrip[static_cast<size_t>(id)];
    for (auto it = parts.begin(); it != parts.end(); ++it) {
      if (it->token >= 0) continue;
      const std::string_view raw = it->text;
      const size_t match = raw.find(special);
      if (match == std::string_view::npos) continue;
      std::string_view left = raw.substr(0, match);
      std::string_view right = raw.substr(match + special.size());
      if (lstrip) {
        while (!left.empty() && is_space(left.back())) left.remove_suffix(1);
      }
      if (rstrip) {
        while (!right.empty() && is_space(right.front())) right.remove_prefix(1);
      }
      // Replace this fragment by left, token, right; the loop continues into right, which may
      // hold more occurrences.
      it = parts.erase(it);
      if (!left.empty()) parts.insert(it, Fragment{-1, left});
      it = parts.insert(it, Fragment{id, {}});
      if (!right.empty()) {
        it = parts.insert(std::next(it), Fragment{-1, right});
        --it;
      }
    }
  }
  return {parts.begin(), parts.end()};
}

}  // namespace vkllm::tokenizer
