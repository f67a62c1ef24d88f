#include "server/config/environment.h"

#include <cstdlib>

#include "server/config/settings_table.h"

namespace vkllm::config {

Environment Environment::from_process() {
  std::map<std::string, std::string, std::less<>> vars;
  auto take = [&vars](std::string_view name) {
    const std::string key(name);
    if (const char* v = std::getenv(key.c_str())) vars.emplace(key, v);
  };
  for (const SettingInfo& s : settings_table()) take(s.name);
  take("HOME");
  return Environment(std::move(vars));
}

Environment::Environment(std::map<std::string, std::string, std::less<>> variables)
    : variables_(std::move(variables)) {}

std::optional<std::string> Environment::raw(std::string_view name) const {
  const auto it = variables_.find(name);
  if (it == variables_.end()) return std::nullopt;
  return it->second;
}

std::string Environment::value(std::string_view name) const {
  const auto v = raw(name);
  return v ? clean_env_value(*v) : std::string();
}

std::string clean_env_value(std::string_view text) {
  auto strip = [&text](std::string_view chars) {
    const size_t b = text.find_first_not_of(chars);
    if (b == std::string_view::npos) {
      text = {};
      return;
    }
    text = text.substr(b, text.find_last_not_of(chars) - b + 1);
  };
  strip(" \t\r\n\v\f");
  strip("\"'");
  return std::string(text);
}

}  // namespace vkllm::config
