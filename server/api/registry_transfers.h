// /api/pull and /api/push backed by the registry's OCI pull/push into the ModelStore, with
// their TransferStatus lines turned into Ollama ProgressResponse objects.
#pragma once

#include "server/api/model_routes.h"

namespace vkllm::api {

TransferFn registry_pull(registry::ModelStore& store);
TransferFn registry_push(registry::ModelStore& store);

}  // namespace vkllm::api
