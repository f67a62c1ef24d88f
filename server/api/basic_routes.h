// Routes that need no model: liveness ("/"), version, and Ollama's cloud/account stubs
// (vkllm has no cloud: /api/status says it is disabled, /api/me is unauthorized).
#pragma once

#include "server/http/router.h"

namespace vkllm::api {

void add_basic_routes(http::Router& router);

}  // namespace vkllm::api
