// Anthropic's Messages API over the GenerationService, as Ollama (v0.14+) and llama.cpp serve it
// for Claude Code and the `@anthropic-ai/sdk`: POST /v1/messages (stream:false JSON or SSE
// events) and POST /v1/messages/count_tokens (the prompt's tokens, from the model's template and
// vocabulary without loading its weights). Every error, before or during a stream, is in
// Anthropic's shape with its status.
#pragma once

#include "server/http/router.h"
#include "server/requests/generation.h"

namespace vkllm::api {

struct AnthropicApi {
  requests::GenerationService& service;
};

void add_anthropic_routes(http::Router& router, AnthropicApi& api);

}  // namespace vkllm::api
