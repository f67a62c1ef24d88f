// The effective runtime options of one generation: the built-in defaults, then the model's
// parameters layer (and a detected named template's defaults under it), then the request's
// `options`, typed as Ollama types them (compat §1.3): unknown keys ignored, wrong types a 500
// `option "X" must be of type integer`, nulls ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampling/sampling_params.h"

namespace vkllm::requests {

struct RequestOptions {
  sampling::SamplingParams sampling;
  int32_t num_predict = -1;
  std::optional<int64_t> num_ctx;  // as given (clamped later against the model)
  int32_t num_keep = 4;
  std::vector<std::string> stop;
  int32_t draft_num_predict = 4;  // Ollama's default (speculation.h kDefaultDraftNumPredict)
};

// Layers apply in order, later ones winning key by key. Throws http::StatusError(400).
RequestOptions resolve_options(const std::vector<const nlohmann::ordered_json*>& layers);

}  // namespace vkllm::requests
