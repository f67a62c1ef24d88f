// Ollama's /api/generate and /api/chat bodies → the shared GenerationRequest (compat §1.4-1.6):
// field types checked as Go's decoder checks them (400 with its text), Ollama's validation
// errors (raw with template, top_logprobs range, think values, keep_alive, format, images).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"
#include "server/requests/generation.h"

namespace vkllm::api {

struct InferenceEnvelope {
  requests::GenerationRequest request;
  bool stream = true;
};

// Throw http::StatusError(400/404) for bad input.
InferenceEnvelope parse_generate_request(const nlohmann::json& body);
InferenceEnvelope parse_chat_request(const nlohmann::json& body);

// keep_alive: seconds (number) or a Go duration string; StatusError(400) otherwise.
std::optional<std::chrono::nanoseconds> parse_keep_alive(const nlohmann::json& body);
// Since Ollama v0.40 a think level the model does not know means its default level.
void normalise_think(prompt::Think& think);

}  // namespace vkllm::api
