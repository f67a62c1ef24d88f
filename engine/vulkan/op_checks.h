// Helpers the ops' dispatch code shares: argument checks, and the lower-case type names the
// shader variants are named by.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace vkllm::vk {

inline void require_arg(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

inline std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace vkllm::vk
