// JSON serialisation for the wire: compact, and invalid UTF-8 (which may come from user input
// echoed in an error) replaced by U+FFFD instead of throwing.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vkllm::http {

inline std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
// The same for ordered objects, whose key order (Ollama's, OpenAI's) goes out as built.
inline std::string json_text(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace vkllm::http
