// ASCII lower-casing for the registry's case-insensitive names (hosts, schemes, auth parameters):
// only A-Z change, whatever the locale.
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

}  // namespace vkllm::registry
