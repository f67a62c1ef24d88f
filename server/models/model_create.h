// Creating a model (/api/create, `vkllm create`): what a request asks for once its JSON is read
// (CreatePlan), the legacy Modelfile form of it, and the run that pulls a missing FROM model,
// classifies GGUF blobs into weights and projectors, adopts the template a GGUF's
// chat_template names, quantizes the weights when asked, and has the ModelStore write layers,
// config and manifest. Errors are
// RegistryErrors (invalid input: 400, not found: 404).
#pragma once

#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "engine/model/quant_mix.h"
#include "registry/model_store.h"
#include "server/models/model_quantize.h"

namespace vkllm::models {

struct CreatePlan {
  registry::CreateRequest request;
  std::vector<registry::Digest> gguf_files;  // classified into model/projector by create_model
  std::vector<registry::Digest> adapters;
  std::vector<std::filesystem::path> server_files;  // legacy modelfile FROM <server path>
  std::optional<model::FileType> quantize;          // the weights' new file type
  // The draft model (draft_files, Modelfile DRAFT): a blob, or (legacy modelfile) a file on the
  // server's machine or an installed model whose weights become the draft.
  std::vector<registry::Digest> draft_files;
  std::vector<std::filesystem::path> draft_server_files;
  std::optional<registry::ModelName> draft_from;
  std::optional<model::FileType> draft_quantize;  // the draft's new file type
};

// Legacy /api/create {"modelfile": "..."}: FROM may name a model, a blob (@sha256:... or
// sha256:...) or a file on the server's machine; the other commands fill the request.
void apply_modelfile(CreatePlan& plan, const std::string& text);

// What every plan must satisfy before any work starts: at most one adapter and one draft, a FROM
// model or files, draft_quantize only with a draft, and a template that parses.
void check_create_plan(const CreatePlan& plan);

// Pulls a model the plan builds FROM (reporting its own progress); empty when pulling is off.
using PullFn = std::function<void(const registry::ModelName&)>;

// Runs the plan; `status` gets Ollama's progress lines, "success" last, and `quantizing` the
// byte counts of a quantization. Returns early, creating nothing, when `stop` fires during the
// pull or the quantization.
void create_model(registry::ModelStore& store, CreatePlan plan, const PullFn& pull,
                  const registry::StatusCallback& status, const QuantizeProgress& quantizing,
                  std::stop_token stop);

}  // namespace vkllm::models
