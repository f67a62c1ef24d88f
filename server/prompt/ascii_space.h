// ASCII whitespace as C's isspace sees it in the "C" locale, without the locale.
#pragma once

namespace vkllm::prompt {

inline bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace vkllm::prompt
