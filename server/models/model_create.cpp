#include "server/models/model_create.h"

#include <algorithm>

#include "engine/model/lora_adapter.h"
#include "registry/errors.h"
#include "registry/modelfile.h"
#include "registry/parameters.h"
#include "server/models/draft_layer.h"
#include "server/models/gguf_summary.h"
#include "server/models/model_reference.h"
#include "server/prompt/prompt.h"
#include "server/scheduler/blob_model_source.h"

namespace vkllm::models {

using registry::Digest;
using registry::ErrorKind;
using registry::RegistryError;

namespace {

// A GGUF chat_template that matches one of Ollama's named templates brings that template (unless
// the request has its own) and its parameters under the request's (compat §5.6).
void autodetect_template(registry::CreateRequest& request, const std::string& chat_template) {
  const auto name = prompt::detect_named_template(chat_template);
  if (!name) return;
  const auto text = prompt::named_template_text(*name);
  if (!text) return;
  if (!request.template_text) {
    request.template_text = *text;
    request.template_status = "using autodetected template " + *name;
  }
  request.parameters = registry::merge_parameters(
      registry::normalize_parameters(prompt::named_template_parameters(*name)), request.parameters);
}

// An adapter must be a LoRA GGUF that fits the weights it will be merged into (the same
// architecture, every adapted tensor present with matching shape): refused here with a 400
// rather than at the first request's load.
void check_adapter(registry::ModelStore& store, const Digest& adapter,
                   const std::optional<Digest>& base) {
  auto reader = store.blobs().open(adapter);
  std::vector<uint8_t> bytes(reader.size());
  if (reader.read_at(0, std::as_writable_bytes(std::span(bytes))) != bytes.size()) {
    throw RegistryError(ErrorKind::invalid_input, "adapter blob " + adapter.str() + " ends early");
  }
  try {
    const auto lora = model::LoraAdapter::from_bytes(std::move(bytes));
    if (base) lora.check_base(sched::read_gguf_header(store.blobs(), *base));
  } catch (const gguf::GgufError& e) {
    throw RegistryError(ErrorKind::invalid_input,
                        std::string("supplied adapter was not in GGUF format: ") + e.what());
  } catch (const model::LoraError& e) {
    throw RegistryError(ErrorKind::invalid_input, std::string("invalid adapter: ") + e.what());
  }
}

}  // namespace

void apply_modelfile(CreatePlan& plan, const std::string& text) {
  const auto mf = registry::Modelfile::parse(text);
  std::vector<std::pair<std::string, std::string>> params;
  for (const auto& c : mf.commands) {
    if (c.name == "from") {
      std::string v = c.value;
      if (!v.empty() && v.front() == '@') v.erase(0, 1);
      if (v.rfind("sha256:", 0) == 0 || v.rfind("sha256-", 0) == 0) {
        plan.gguf_files.push_back(parse_blob_digest(v));
      } else if (!v.empty() && v.front() == '/' && std::filesystem::is_regular_file(v)) {
        plan.server_files.emplace_back(v);
      } else {
        const auto from = parse_model_reference(v);
        if (!from)
          throw RegistryError(ErrorKind::invalid_input, "invalid model name in FROM: " + v);
        plan.request.from = *from;
      }
    } else if (c.name == "parameter") {
      params.emplace_back(c.key, c.value);
    } else if (c.name == "template") {
      plan.request.template_text = c.value;
    } else if (c.name == "system") {
      plan.request.system = c.value;
    } else if (c.name == "license") {
      plan.request.licenses.push_back(c.value);
    } else if (c.name == "message") {
      plan.request.messages.push_back({c.key, c.value});
    } else if (c.name == "adapter") {
      std::string v = c.value;
      if (!v.empty() && v.front() == '@') v.erase(0, 1);
      plan.adapters.push_back(parse_blob_digest(v));
    } else if (c.name == "draft") {
      // As FROM: a blob, a file on the server's machine, or an installed model's weights.
      std::string v = c.value;
      if (!v.empty() && v.front() == '@') v.erase(0, 1);
      if (v.rfind("sha256:", 0) == 0 || v.rfind("sha256-", 0) == 0) {
        plan.draft_files.push_back(parse_blob_digest(v));
      } else if (!v.empty() && v.front() == '/' && std::filesystem::is_regular_file(v)) {
        plan.draft_server_files.emplace_back(v);
      } else {
        const auto from = parse_model_reference(v);
        if (!from)
          throw RegistryError(ErrorKind::invalid_input, "invalid model name in DRAFT: " + v);
        plan.draft_from = *from;
      }
    } else if (c.name == "requires") {
      plan.request.requires_version = c.value;
    } else if (c.name == "renderer") {
      plan.request.renderer = c.value;
    } else if (c.name == "parser") {
      plan.request.parser = c.value;
    }
  }
  if (!params.empty()) {
    plan.request.parameters =
        registry::merge_parameters(plan.request.parameters, registry::typed_parameters(params));
  }
}

void check_create_plan(const CreatePlan& plan) {
  if (plan.adapters.size() > 1) {
    throw RegistryError(ErrorKind::invalid_input, "only one adapter is currently supported");
  }
  const size_t drafts =
      plan.draft_files.size() + plan.draft_server_files.size() + (plan.draft_from ? 1 : 0);
  if (drafts > 1) {
    throw RegistryError(ErrorKind::invalid_input, "only one draft model file is supported");
  }
  if (plan.draft_quantize && drafts == 0) {
    // Ollama's words for the same refusal.
    throw RegistryError(ErrorKind::invalid_input, "--draft-quantize requires a DRAFT model");
  }
  if (!plan.request.from && plan.gguf_files.empty() && plan.server_files.empty()) {
    throw RegistryError(ErrorKind::invalid_input, "neither 'from' or 'files' was specified");
  }
  if (plan.request.template_text) {
    if (auto err = prompt::check_template(*plan.request.template_text)) {
      throw RegistryError(ErrorKind::invalid_input, "template error: " + *err);
    }
  }
}

void create_model(registry::ModelStore& store, CreatePlan plan, const PullFn& pull,
                  const registry::StatusCallback& status, const QuantizeProgress& quantizing,
                  std::stop_token stop) {
  if (plan.request.from && !store.find(*plan.request.from)) {
    if (!pull) {
      throw RegistryError(ErrorKind::not_found,
                          "model \"" + plan.request.from->display() + "\" not found");
    }
    pull(*plan.request.from);
    if (stop.stop_requested()) return;
  }
  for (const auto& path : plan.server_files) {
    status("copying file " + path.filename().string());
    plan.gguf_files.push_back(store.put_blob_file(path).digest);
  }
  for (const auto& d : plan.gguf_files) {
    if (!store.has_blob(d)) {
      throw RegistryError(ErrorKind::invalid_input,
                          "blob " + d.str() + " not found: upload it with POST /api/blobs first");
    }
    status("parsing GGUF");
    const auto g = read_gguf_summary(store.blobs(), d);
    plan.request.files.push_back(
        {d, std::string(g->is_projector() ? registry::media_type::kProjector
                                          : registry::media_type::kModel)});
    if (!g->is_projector()) autodetect_template(plan.request, g->chat_template);
  }
  if (plan.quantize) {
    // The request's weights, else the FROM model's, are replaced by their quantized copy.
    auto& files = plan.request.files;
    auto weights = std::find_if(files.begin(), files.end(), [](const auto& f) {
      return f.media_type == registry::media_type::kModel;
    });
    std::optional<Digest> source;
    if (weights != files.end()) {
      source = weights->digest;
    } else if (plan.request.from) {
      source = store.show(*plan.request.from).model_blob;
    }
    if (!source) throw RegistryError(ErrorKind::invalid_input, "no model weights to quantize");
    const auto quantized = quantize_blob(store, *source, *plan.quantize, quantizing, stop);
    if (!quantized) return;
    status("verifying conversion");
    read_gguf_summary(store.blobs(), *quantized);  // throws for a blob that does not parse
    if (weights != files.end()) {
      weights->digest = *quantized;
    } else {
      files.insert(files.begin(), {*quantized, std::string(registry::media_type::kModel)});
    }
  }
  // The weights an adapter applies to: this request's model file, else the FROM model's.
  std::optional<Digest> base;
  for (const auto& f : plan.request.files) {
    if (f.media_type == registry::media_type::kModel) base = f.digest;
  }
  if (!base && plan.request.from) {
    if (store.find(*plan.request.from)) base = store.show(*plan.request.from).model_blob;
  }
  for (const auto& d : plan.adapters) {
    if (!store.has_blob(d)) {
      throw RegistryError(ErrorKind::invalid_input, "blob " + d.str() + " not found");
    }
    status("parsing adapter");
    check_adapter(store, d, base);
    plan.request.files.push_back({d, std::string(registry::media_type::kAdapter)});
  }
  // The draft: checked against the weights the model ends up with (a FROM model's draft is kept
  // as it is, but new weights must still share its vocabulary).
  for (const auto& path : plan.draft_server_files) {
    status("copying file " + path.filename().string());
    plan.draft_files.push_back(store.put_blob_file(path).digest);
  }
  if (plan.draft_from) {
    if (!store.find(*plan.draft_from)) {
      throw RegistryError(ErrorKind::not_found,
                          "draft model \"" + plan.draft_from->display() + "\" not found");
    }
    const auto weights = store.show(*plan.draft_from).model_blob;
    if (!weights) throw RegistryError(ErrorKind::invalid_input, "the draft model has no weights");
    plan.draft_files.push_back(*weights);
  }
  if (!plan.draft_files.empty()) {
    if (!base) throw RegistryError(ErrorKind::invalid_input, "a draft model needs model weights");
    if (!add_draft_layer(store, plan.request, plan.draft_files.front(), *base, plan.draft_quantize,
                         status, quantizing, stop))
      return;
  } else if (base && plan.request.from && store.find(*plan.request.from)) {
    if (const auto kept = store.show(*plan.request.from).draft; kept && *kept != *base) {
      check_same_vocabulary(store, *kept, *base);
    }
  }
  std::string last;
  store.create(
      plan.request, [&](const Digest& d) { return read_gguf_summary(store.blobs(), d)->details(); },
      [&](const std::string& line) {
        last = line;
        status(line);
      });
  if (last != "success") status("success");
}

}  // namespace vkllm::models
