// Ollama's inference routes over the GenerationService: /api/generate and /api/chat (NDJSON by
// default, one object with stream:false), /api/ps, /api/tokenize, /api/detokenize, and the
// Prometheus /metrics endpoint.
#pragma once

#include "registry/model_store.h"
#include "server/http/router.h"
#include "server/requests/generation.h"

namespace vkllm::api {

struct InferenceApi {
  requests::GenerationService& service;
  registry::ModelStore& store;
};

void add_inference_routes(http::Router& router, InferenceApi& api);

}  // namespace vkllm::api
