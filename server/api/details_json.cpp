#include "server/api/details_json.h"

namespace vkllm::api {

using json = nlohmann::json;

json details_json(const registry::ModelDetails& d, const models::GgufSummary* g,
                  bool with_lengths) {
  json j;
  j["parent_model"] = d.parent_model;
  j["format"] = d.format;
  j["family"] = d.family;
  j["families"] = d.families.empty() ? json(nullptr) : json(d.families);
  j["parameter_size"] = d.parameter_size;
  j["quantization_level"] = d.quantization_level;
  if (with_lengths && g != nullptr) {
    if (g->context_length) j["context_length"] = *g->context_length;
    if (g->embedding_length) j["embedding_length"] = *g->embedding_length;
  }
  return j;
}

}  // namespace vkllm::api
