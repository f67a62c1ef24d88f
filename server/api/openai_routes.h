// OpenAI-compatible routes over the GenerationService (compat §2): /v1/chat/completions,
// /v1/completions and /v1/responses (stream:false JSON or SSE), /v1/models and
// /v1/models/{model} (namespaced names too). Every error, before or during a stream, is in
// OpenAI's envelope.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include "registry/model_store.h"
#include "server/http/router.h"
#include "server/requests/generation.h"

namespace vkllm::api {

struct OpenAiApi {
  requests::GenerationService& service;
  registry::ModelStore& store;
  boost::asio::thread_pool& workers;  // catalog reads for /v1/models
};

void add_openai_routes(http::Router& router, OpenAiApi& api);

}  // namespace vkllm::api
