// Gemma 4's tool-call arguments, the way Ollama's gemma4 parser reads them: the text after
// "call:NAME" is an object in Gemma's notation, {key:value,...} with bare keys and strings
// between <|"|> delimiters (numbers, booleans, null, nested objects and arrays as in JSON; JSON
// strings are accepted too). Typed values come from that notation itself. When the strict
// reading fails, Ollama's best-effort repairs are tried in its order: single-quoted values made
// Gemma strings, an unclosed <|"|> string closed (before a final } or ]), then the object closed;
// and, only for a property the tool's schema types as a string, a raw unquoted value quoted up to
// the next known key or the closing brace.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

// The call in `body` (the text between <|tool_call> and <tool_call|>): "call:NAME{...}";
// nullopt when it is not one, or its arguments are not an object even after the repairs.
// tools: the request's tools array (the repairs' schema).
std::optional<ToolCall> parse_gemma4_tool_call(std::string_view body,
                                               const nlohmann::ordered_json& tools);

// Gemma's notation for an object as JSON text (keys quoted, <|"|> strings as JSON strings); the
// text may still not be valid JSON.
std::string gemma4_args_to_json(std::string_view args);

}  // namespace vkllm::prompt
