// The "details" object of /api/tags and /api/show entries, from the store's ModelDetails and
// (for listings) the GGUF's context and embedding lengths.
#pragma once

#include <nlohmann/json.hpp>

#include "registry/model_store.h"
#include "server/models/gguf_summary.h"

namespace vkllm::api {

nlohmann::json details_json(const registry::ModelDetails& d, const models::GgufSummary* g,
                            bool with_lengths);

}  // namespace vkllm::api
