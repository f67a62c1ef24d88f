#include "server/models/draft_layer.h"

#include <string>

#include "engine/model/model_spec.h"
#include "registry/errors.h"
#include "server/models/gguf_summary.h"
#include "server/scheduler/blob_model_source.h"

namespace vkllm::models {

using registry::ErrorKind;
using registry::RegistryError;

namespace {

const nlohmann::ordered_json& vocabulary(const GgufSummary& g, const char* which) {
  const auto it = g.model_info.find("tokenizer.ggml.tokens");
  if (it == g.model_info.end() || !it->is_array()) {
    throw RegistryError(ErrorKind::invalid_input,
                        std::string("the ") + which + " has no vocabulary (tokenizer.ggml.tokens)");
  }
  return *it;
}

}  // namespace

void check_same_vocabulary(registry::ModelStore& store, const registry::Digest& draft,
                           const registry::Digest& target) {
  const auto d = read_gguf_summary(store.blobs(), draft);
  const auto t = read_gguf_summary(store.blobs(), target);
  const auto& dv = vocabulary(*d, "draft model");
  const auto& tv = vocabulary(*t, "model");
  if (dv.size() != tv.size()) {
    throw RegistryError(
        ErrorKind::invalid_input,
        "the draft model's vocabulary differs from the model's: " + std::to_string(dv.size()) +
            " tokens in the draft, " + std::to_string(tv.size()) + " in the model");
  }
  for (size_t i = 0; i < dv.size(); ++i) {
    if (dv[i] == tv[i]) continue;
    throw RegistryError(ErrorKind::invalid_input,
                        "the draft model's vocabulary differs from the model's: token " +
                            std::to_string(i) + " is " + dv[i].dump() + " in the draft, " +
                            tv[i].dump() + " in the model");
  }
}

bool add_draft_layer(registry::ModelStore& store, registry::CreateRequest& request,
                     registry::Digest draft, const registry::Digest& target,
                     const std::optional<model::FileType>& quantize,
                     const registry::StatusCallback& status, const QuantizeProgress& quantizing,
                     std::stop_token stop) {
  if (!store.has_blob(draft)) {
    throw RegistryError(ErrorKind::invalid_input,
                        "blob " + draft.str() + " not found: upload it with POST /api/blobs first");
  }
  status("parsing draft GGUF");
  auto g = read_gguf_summary(store.blobs(), draft);
  if (g->is_projector()) {
    throw RegistryError(ErrorKind::invalid_input, "the draft model file is a projector");
  }
  if (quantize) {
    if (g->file_type != "F32" && g->file_type != "F16" && g->file_type != "BF16") {
      // Ollama's words for the same refusal.
      throw RegistryError(
          ErrorKind::invalid_input,
          "draft quantization requires an unquantized draft model, got " + g->file_type);
    }
    const auto quantized = quantize_blob(store, draft, *quantize, quantizing, stop);
    if (!quantized) return false;
    status("verifying draft conversion");
    g = read_gguf_summary(store.blobs(), *quantized);
    draft = *quantized;
  }
  check_same_vocabulary(store, draft, target);
  // A draft vkllm cannot run is refused now rather than at its first load.
  try {
    model::ModelSpec::from_gguf(sched::read_gguf_header(store.blobs(), draft));
  } catch (const std::exception& e) {
    throw RegistryError(ErrorKind::invalid_input,
                        std::string("cannot read the draft model: ") + e.what());
  }
  request.files.push_back({draft, std::string(registry::media_type::kDraft)});
  request.draft_config =
      nlohmann::ordered_json{{"model_format", "gguf"}, {"architecture", g->architecture}};
  return true;
}

}  // namespace vkllm::models
