// Every environment variable vkllm reads, described once: `vkllm serve --help` prints this
// table and docs/configuration.md is checked against it by a test. Parsing lives in settings.h.
#pragma once

#include <span>
#include <string_view>

namespace vkllm::config {

struct SettingInfo {
  std::string_view name;           // the environment variable
  std::string_view group;          // "server", "scheduling", "store", "engine", "testing"
  std::string_view default_value;  // as a user would read it ("" when unset means off/auto)
  std::string_view description;    // one line
};

// In the order --help and the documentation list them.
std::span<const SettingInfo> settings_table();

}  // namespace vkllm::config
