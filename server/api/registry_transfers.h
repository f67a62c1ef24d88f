// /api/pull and /api/push backed by the registry's OCI pull/push into the ModelStore, with
// their TransferStatus lines turned into Ollama ProgressResponse objects.
#pragma once

#include "registry/insecure_registries.h"
#include "registry/recompress_queue.h"
#include "server/api/model_routes.h"

namespace vkllm::api {

// Blobs a pull stores raw although zstd would pay go to `recompress` (when given) once the pull
// succeeds, so the pull runs at wire speed and the store still ends up compressed. Registries in
// `insecure` (VKLLM_INSECURE_REGISTRIES) are reached over plain HTTP as if the request had set
// "insecure": true.
TransferFn registry_pull(registry::ModelStore& store,
                         registry::RecompressQueue* recompress = nullptr,
                         registry::InsecureRegistries insecure = {});
TransferFn registry_push(registry::ModelStore& store, registry::InsecureRegistries insecure = {});

}  // namespace vkllm::api
