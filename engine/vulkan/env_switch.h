// The environment switches for A/B runs and sweeps: env_off for those that turn a kernel's fast
// path off (VKLLM_COOPMAT, VKLLM_ATTN_COOPMAT: "0" or "off" turns it off, anything else or nothing
// leaves it on), env_u32 for the numeric ones.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace vkllm::vk {

inline bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v && (std::string_view(v) == "0" || std::string_view(v) == "off");
}

// The decimal value of `name`, or `fallback` where it is unset or empty.
inline uint32_t env_u32(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

}  // namespace vkllm::vk
