// The process environment, read once: the only place vkllm calls getenv. Settings (settings.h)
// are parsed from an Environment, so tests build one from a map instead of touching the
// process's variables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vkllm::config {

class Environment {
 public:
  // A snapshot of the variables vkllm reads (every name in the settings table, and HOME).
  static Environment from_process();
  Environment() = default;
  explicit Environment(std::map<std::string, std::string, std::less<>> variables);

  // The value as Ollama's envconfig reads it: surrounding blanks, then surrounding quotes,
  // stripped, so OLLAMA_MODELS="/data/models" and OLLAMA_NOPRUNE=' 1 ' mean what they say.
  // "" when unset.
  std::string value(std::string_view name) const;
  // The value exactly as set (API keys and paths keep inner blanks); nullopt when unset.
  std::optional<std::string> raw(std::string_view name) const;

 private:
  std::map<std::string, std::string, std::less<>> variables_;
};

// Ollama's cleaning of one value (see Environment::value).
std::string clean_env_value(std::string_view text);

}  // namespace vkllm::config
