// One Qwen XML tool call (the text between <tool_call> and </tool_call>) into a ToolCall, with
// parameter values typed by the request's tool schema as Ollama's qwen3-coder parser types them:
// one newline trimmed at each end; "null" (any case) is null; then by the property's type (or its
// anyOf types) in the order boolean, integer, number, array, object, string: the first that
// parses wins (a number without a fraction becomes an integer); with no type, or none that
// parses, the text stays a string (a lone boolean type that does not parse is false).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

// The call, or nullopt when the text holds no <function=NAME>. A parameter whose closing tag is
// missing ends at the next parameter or at </function>.
std::optional<ToolCall> parse_qwen_tool_call(std::string_view raw,
                                             const nlohmann::ordered_json& tools);

// A parameter's raw text typed by the schema's type names.
nlohmann::ordered_json qwen_typed_value(std::string_view raw,
                                        const std::vector<std::string>& types);

}  // namespace vkllm::prompt
