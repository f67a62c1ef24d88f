// What a model's listing and /api/show derive from its blobs beyond the store's own records:
// its capabilities (config, GGUF header, template) and the GGUF summary of its weights
// (memoised by blob digest: a blob never changes).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "registry/model_store.h"
#include "server/models/gguf_summary.h"

namespace vkllm::models {

// Ollama's capability names, config's first, then the GGUF's, then what the template shows.
std::vector<std::string> capabilities_of(const registry::ModelShow& m, const GgufSummary* g);

// The GGUF summary of the model's weights; null when it has none or they are not readable GGUF
// (such a model still lists).
std::shared_ptr<const GgufSummary> summary_of(registry::ModelStore& store,
                                              const registry::ModelShow& m);

}  // namespace vkllm::models
