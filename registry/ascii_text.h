// ASCII text helpers of the registry, whatever the locale: lower-casing for its case-insensitive
// names (hosts, schemes, auth parameters) and trimming of blanks.
#pragma once

#include <string>
#include <string_view>

namespace vkllm::registry {

inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// `text` without leading and trailing ASCII whitespace (space, \t, \n, \r, \v, \f).
inline std::string_view ascii_trim(std::string_view text) {
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace vkllm::registry
