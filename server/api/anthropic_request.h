// Anthropic Messages request bodies (/v1/messages, /v1/messages/count_tokens) → the shared
// GenerationRequest, as Ollama's and llama.cpp's Anthropic layers map them: `system` (a string or
// text blocks) first; text, base64 image, tool_use, tool_result and thinking blocks; `tools`
// (input_schema → function parameters) and `tool_choice` (none: the model never sees the tools;
// tool: only the named one); `thinking` / `output_config.effort` → the model's think level;
// max_tokens, temperature, top_p, top_k, stop_sequences, metadata; and Ollama's `options`
// object and `format` (JSON or a JSON Schema) as on every /v1 route. Bad input throws
// http::StatusError(400), an unknown model name 404; the routes wrap them in Anthropic's error
// shape.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/requests/generation.h"

namespace vkllm::api {

struct AnthropicRequest {
  requests::GenerationRequest request;
  bool stream = false;
  std::vector<std::string> stop_sequences;  // the client's, to tell them from template stops
  // tool_choice any / tool: a tool call must come out (request.tool_choice carries it to the
  // constrained decoding that forces it; tool: only the named one is offered).
  bool tool_required = false;
};

// /v1/messages: model, max_tokens and messages are required.
AnthropicRequest parse_messages_request(const nlohmann::ordered_json& body);
// /v1/messages/count_tokens: the same body without max_tokens (sampling fields are ignored).
AnthropicRequest parse_count_tokens_request(const nlohmann::ordered_json& body);

// thinking.budget_tokens → think level: under 4096 low, under 16384 medium, else high.
std::string think_level_for_budget(int64_t budget_tokens);

}  // namespace vkllm::api
