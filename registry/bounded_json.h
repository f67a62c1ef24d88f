// JSON from outside the process (request bodies, registry manifests and configs) parsed with a
// nesting limit. nlohmann's parser itself is iterative, but dump(), conversions and our own
// walks recurse once per level: 60,000 nested '[' overflow the stack. Every such document is
// parsed through here instead of json::parse.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace vkllm::registry {

// Deeper than any real request or manifest (Go's encoding/json stops at 10,000; its stack
// grows, ours does not).
inline constexpr int kMaxJsonDepth = 512;

// Parses `text`; throws RegistryError(invalid_input) "JSON nested too deeply (more than 512
// levels)" past the limit and nlohmann's parse_error for malformed text.
nlohmann::json parse_bounded_json(std::string_view text);
nlohmann::ordered_json parse_bounded_ordered_json(std::string_view text);

// As above but never throws: a discarded value for malformed or too-deep text.
nlohmann::json parse_bounded_json_or_discarded(std::string_view text);
nlohmann::ordered_json parse_bounded_ordered_json_or_discarded(std::string_view text);

}  // namespace vkllm::registry
