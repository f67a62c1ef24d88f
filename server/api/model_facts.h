// What /api/tags and /api/show derive from a model's blobs: its capabilities, the details
// object, and the GGUF summary of its weights (memoised by blob digest: a blob never changes).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "registry/model_store.h"
#include "server/api/gguf_summary.h"

namespace vkllm::api {

std::vector<std::string> capabilities_of(const registry::ModelShow& m, const GgufSummary* g);

nlohmann::json details_json(const registry::ModelDetails& d, const GgufSummary* g,
                            bool with_lengths);

// The GGUF summary of the model's weights; null when it has none or they are not readable GGUF
// (such a model still lists).
std::shared_ptr<const GgufSummary> summary_of(registry::ModelStore& store,
                                              const registry::ModelShow& m);

}  // namespace vkllm::api
