#include "server/models/model_facts.h"

#include <algorithm>
#include <optional>

namespace vkllm::models {

namespace {

// llama.cpp's architecture name and Ollama's own converter's.
bool gpt_oss_family(const GgufSummary* g) {
  return g != nullptr && (g->architecture == "gpt-oss" || g->architecture == "gptoss");
}

// Text architectures whose projector layer the engine's image encoders run.
bool runs_projector_of(const std::string& architecture) {
  return architecture == "gemma3" || architecture == "gemma4" || architecture == "mistral3" ||
         architecture == "qwen2vl" || architecture == "qwen25vl" || architecture == "qwen3vl";
}

}  // namespace

bool Capabilities::has(std::string_view name) const {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Capabilities capabilities_of(const registry::ModelShow& m, const GgufSummary* g,
                             const prompt::TemplateCapabilities* in_use) {
  Capabilities caps;
  caps.from_weights = g != nullptr;
  auto add = [&caps](const std::string& c) {
    if (!caps.has(c)) caps.names.push_back(c);
  };
  if (const auto it = m.config.find("capabilities"); it != m.config.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (c.is_string()) add(c.get<std::string>());
    }
  }
  if (g != nullptr) {
    for (const auto& c : g->capabilities) add(c);
  }
  if (in_use != nullptr) {
    if (in_use->tools) add("tools");
    if (in_use->insert) add("insert");
    if (in_use->thinking) add("thinking");
  }
  if (gpt_oss_family(g)) add("thinking");  // as Ollama: the family always reasons
  if (!m.projectors.empty()) add("vision");
  // Gemma 3's, Gemma 4's, Mistral 3's and Qwen2.5-VL's towers are the vision vkllm runs
  // (engine/vision): from a projector layer (Gemma 4's only from one), or from inside the model's
  // own GGUF (Ollama's single-file layout, the towers inline_projector_arch reads: gemma3,
  // mistral3, qwen25vl); other families' are not run.
  const bool runs_vision =
      g != nullptr && ((!m.projectors.empty() && runs_projector_of(g->architecture)) ||
                       (!g->inline_projector.empty() && runs_projector_of(g->inline_projector)));
  for (const char* encoder : {"vision", "audio"}) {
    if (runs_vision && std::string_view(encoder) == "vision") continue;
    if (const auto it = std::find(caps.names.begin(), caps.names.end(), encoder);
        it != caps.names.end()) {
      caps.names.erase(it);
      caps.not_run.emplace_back(encoder);
    }
  }
  return caps;
}

Capabilities capabilities_of(const registry::ModelShow& m, const GgufSummary* g) {
  std::optional<prompt::TemplateCapabilities> in_use;
  try {
    in_use = prompt::PromptBuilder(model_prompt(m, g)).capabilities();
  } catch (const prompt::TemplateError&) {
    // A template that does not parse brings no capability (and fails the requests it renders).
  }
  return capabilities_of(m, g, in_use ? &*in_use : nullptr);
}

prompt::ModelPrompt model_prompt(const registry::ModelShow& m, const GgufSummary* g) {
  prompt::ModelPrompt mp;
  mp.template_text = m.template_text;
  mp.system = m.system;
  mp.name = m.name.display();
  mp.renderer = m.renderer;
  mp.parser = m.parser;
  mp.has_projector = !m.projectors.empty() || (g != nullptr && !g->inline_projector.empty());
  for (const auto& msg : m.messages) {
    mp.messages.push_back({msg.role, msg.content, {}, {}, {}, {}, {}});
  }
  if (g != nullptr) {
    mp.gguf_chat_template = g->chat_template;
    mp.architecture = g->architecture;
  }
  return mp;
}

std::shared_ptr<const GgufSummary> summary_of(registry::ModelStore& store,
                                              const registry::ModelShow& m) {
  if (!m.model_blob) return nullptr;
  try {
    return read_gguf_summary(store.blobs(), *m.model_blob);
  } catch (const std::exception&) {
    return nullptr;  // a model whose weights are not readable GGUF still lists
  }
}

}  // namespace vkllm::models
