// A model's draft model (Ollama's DRAFT, /api/create `draft_files` and `draft_quantize`): the
// GGUF stored as its own layer (media type application/vnd.ollama.image.draft) beside the
// weights, which the server loads for speculative decoding (server/scheduler/draft_model.h).
// A draft must share the target's vocabulary token for token, since its token ids are verified
// by the target as they are; that is checked here, at create, rather than at the first request.
#pragma once

#include <optional>
#include <stop_token>

#include "engine/model/quant_mix.h"
#include "registry/model_store.h"
#include "server/models/model_quantize.h"

namespace vkllm::models {

// RegistryError(invalid_input) naming the first difference between the two GGUFs' vocabularies
// (tokenizer.ggml.tokens): their sizes, or the first token id whose text differs.
void check_same_vocabulary(registry::ModelStore& store, const registry::Digest& draft,
                           const registry::Digest& target);

// The draft layer of a create: `draft` parsed (and quantized to `quantize` if given: only an
// F16/BF16/F32 draft, as Ollama refuses a quantized one), checked against `target`'s vocabulary,
// added to `request` with the config's "draft" entry. False when `stop` fired while quantizing.
bool add_draft_layer(registry::ModelStore& store, registry::CreateRequest& request,
                     registry::Digest draft, const registry::Digest& target,
                     const std::optional<model::FileType>& quantize,
                     const registry::StatusCallback& status, const QuantizeProgress& quantizing,
                     std::stop_token stop);

}  // namespace vkllm::models
