// OpenAI request bodies → the shared GenerationRequest (compat §2.1, §2.2, §2.5, §10):
// /v1/chat/completions, /v1/completions and /v1/responses. OpenAI's sampling defaults
// (temperature and top_p 1.0 when absent), its field names mapped onto Ollama's options, and
// Ollama's own `options` object accepted on every route underneath the OpenAI fields (so
// `options.num_ctx` works through /v1, which Ollama ignores). Bad input throws
// http::StatusError(400); the routes wrap it in OpenAI's error envelope.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/requests/generation.h"

namespace vkllm::api {

struct OpenAiRequest {
  requests::GenerationRequest request;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // /v1/responses echoes these in its response object.
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
};

// Parses a body that must be a JSON object, keeping key order (tool arguments, schemas).
nlohmann::ordered_json parse_openai_body(std::string_view body);

OpenAiRequest parse_chat_completion_request(const nlohmann::ordered_json& body);
OpenAiRequest parse_completion_request(const nlohmann::ordered_json& body);
OpenAiRequest parse_responses_request(const nlohmann::ordered_json& body);

}  // namespace vkllm::api
