// The StepBackend of a Vulkan device: activations and the paged KV cache in device memory, each
// graph operation recorded as dispatches into one command buffer (submitted in parts as the step
// is recorded), quantized decode products on q8 activations written by the norm or gated
// activation that precedes them, GPU timestamps for profiles and a dry-recording warm-up that
// creates every pipeline a step can use.
#pragma once

#include <memory>

#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

// `opt` comes with the Runner's limits filled in; the backend lowers max_batch_tokens and
// max_logits_rows to what one storage-buffer binding holds (throws std::invalid_argument when
// max_seqs rows do not fit).
std::unique_ptr<StepBackend> make_vulkan_backend(const Model& model, RunnerOptions& opt);

}  // namespace vkllm::runtime
