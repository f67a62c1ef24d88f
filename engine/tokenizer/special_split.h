// Splits special tokens out of text before the model's tokenizer sees it, the way llama.cpp does:
// user-defined tokens always, control and unknown tokens only when parse_special is set; the
// longest token text is split out first, everywhere, then the next longest in what remains.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace vkllm::tokenizer {

struct Fragment {
  int32_t token = -1;     // a special token, or -1 for raw text
  std::string_view text;  // the raw text (a view into the input) when token == -1
};

class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocab& vocab);
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  // Candidate tokens bucketed by their first two bytes (CSR layout), so that finding which
  // special tokens occur in a text is one cheap pass even with thousands of them.
  struct Index {
    std::array<std::vector<int32_t>, 256> one_byte;  // tokens of length 1
    std::vector<uint32_t> start;                     // 65537 offsets into ids
    std::vector<int32_t> ids;
  };
  Index build_index(bool parse_special) const;
  std::vector<int32_t> occurring(std::string_view text, const Index& index) const;

  const Vocab& vocab_;
  Index with_control_;  // parse_special
  Index user_defined_only_;
};

}  // namespace vkllm::tokenizer
