// /api/tags: each model's listing facts (size, details, capabilities) as Ollama shows them and
// the body around them. When to compute, store and reuse them is models::ListingCache's.
#pragma once

#include <memory>

#include "registry/model_store.h"
#include "server/models/listing_cache.h"

namespace vkllm::api {

std::shared_ptr<models::ListingCache> make_model_list(registry::ModelStore& store);

}  // namespace vkllm::api
