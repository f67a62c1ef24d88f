#include "registry/env_value.h"

#include <cstdlib>
#include <string_view>

namespace vkllm::registry {

std::string env_value(const char* name) {
  const char* raw = std::getenv(name);
  std::string text = raw ? raw : "";
  auto strip = [&](std::string_view chars) {
    size_t b = text.find_first_not_of(chars), e = text.find_last_not_of(chars);
    text = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
  };
  strip(" \t\r\n");
  strip("\"'");
  return text;
}

}  // namespace vkllm::registry
