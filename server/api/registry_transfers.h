// /api/pull and /api/push backed by the registry's OCI pull/push into the ModelStore, with
// their TransferStatus lines turned into Ollama ProgressResponse objects.
#pragma once

#include "registry/recompress_queue.h"
#include "server/api/model_routes.h"

namespace vkllm::api {

// Blobs a pull stores raw although zstd would pay go to `recompress` (when given) once the pull
// succeeds, so the pull runs at wire speed and the store still ends up compressed.
TransferFn registry_pull(registry::ModelStore& store,
                         registry::RecompressQueue* recompress = nullptr);
TransferFn registry_push(registry::ModelStore& store);

}  // namespace vkllm::api
