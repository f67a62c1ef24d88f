// Ollama's /api/chat and /api/generate request bodies mapped to server/prompt's types (compat §1.2,
// §1.5, §1.6): message field names, roles lower-cased, tool calls, base64 images decoded, `think`.
// One mapping for the routes and `vkllm debug render`. Bad input throws http::StatusError(400).
// Both json flavours are accepted; ordered_json keeps tool-argument and property order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"

namespace vkllm::api {

template <class Json>
prompt::Message parse_message(const Json& j);
template <class Json>
std::vector<prompt::Message> parse_messages(const Json& array);  // null/absent → empty
template <class Json>
prompt::ToolCall parse_tool_call(const Json& j, int default_index);
// `think`: true/false or a level ("high", "medium", "low", "max"); absent or null → not set.
// Any other level or type is StatusError(400) with Ollama's text.
template <class Json>
prompt::Think parse_think(const Json* think);

// The prompt inputs of a chat body (messages, tools, think, truncate).
template <class Json>
prompt::ChatInput chat_input(const Json& body);
// The prompt inputs of a generate body (prompt, suffix, system, template, images, context, think).
template <class Json>
prompt::GenerateInput generate_input(const Json& body);

// Standard base64 with padding (Go's []byte in JSON); "\r" and "\n" are skipped as Go does.
// Throws StatusError(400) "illegal base64 data at input byte N".
std::string decode_base64(std::string_view text);

}  // namespace vkllm::api
