// The environment switches that turn a kernel's fast path off for A/B runs (VKLLM_COOPMAT,
// VKLLM_ATTN_COOPMAT): "0" or "off" turns it off, anything else (or nothing) leaves it on.
#pragma once

#include <cstdlib>
#include <string_view>

namespace vkllm::vk {

inline bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v && (std::string_view(v) == "0" || std::string_view(v) == "off");
}

}  // namespace vkllm::vk
