// The values Ollama hands to templates (compat §5.2), built from the request's messages and
// tools with the Go types' field names, String() forms and encoding/json output.
#pragma once

#include <nlohmann/json.hpp>

#include "server/prompt/go_value.h"
#include "server/prompt/prompt.h"

namespace vkllm::prompt {

// Any JSON as Go's encoding/json decodes it into `any` (numbers float64, objects map[string]any).
Value json_to_value(const nlohmann::ordered_json& j);
// Go encoding/json of a JSON value with object keys kept in order (ordered maps).
std::string go_json_ordered(const nlohmann::ordered_json& j);

// api.Message (images as their [img-N] tags), api.ToolCall.
Value message_value(const Message& m);
// api.Tools: the request's tools array (null or absent: an empty list printing "null").
Value tools_value(const nlohmann::ordered_json& tools);

}  // namespace vkllm::prompt
