#include "server/models/model_facts.h"

#include <algorithm>

namespace vkllm::models {

std::vector<std::string> capabilities_of(const registry::ModelShow& m, const GgufSummary* g) {
  std::vector<std::string> caps;
  auto add = [&](const std::string& c) {
    if (std::find(caps.begin(), caps.end(), c) == caps.end()) caps.push_back(c);
  };
  if (const auto it = m.config.find("capabilities"); it != m.config.end() && it->is_array()) {
    for (const auto& c : *it) {
      if (c.is_string()) add(c.get<std::string>());
    }
  }
  if (g != nullptr) {
    for (const auto& c : g->capabilities) add(c);
  }
  if (m.template_text) {
    const std::string& t = *m.template_text;
    if (t.find(".Tools") != std::string::npos) add("tools");
    if (t.find(".Suffix") != std::string::npos) add("insert");
    if (t.find(".Thinking") != std::string::npos || t.find(".IsThinkSet") != std::string::npos) {
      add("thinking");
    }
  } else if (g != nullptr && !g->chat_template.empty()) {
    const std::string& t = g->chat_template;
    if (t.find("tools") != std::string::npos || t.find("tool_call") != std::string::npos) {
      add("tools");
    }
    if (t.find("<think>") != std::string::npos && t.find("</think>") != std::string::npos) {
      add("thinking");
    }
  }
  // Harmony (gpt-oss's format, PromptBuilder::uses_harmony): Ollama's harmony parser brings
  // tools and thinking; the gpt-oss family always thinks.
  const bool gpt_oss =
      g != nullptr && (g->architecture == "gpt-oss" || g->architecture == "gptoss");
  const bool harmony_template =
      !m.template_text || (m.template_text->find("<|start|>") != std::string::npos &&
                           m.template_text->find("<|end|>") != std::string::npos);
  if (m.parser == "harmony" || (m.parser.empty() && m.renderer == "harmony") ||
      (m.parser.empty() && gpt_oss && harmony_template)) {
    add("tools");
    add("thinking");
  }
  if (gpt_oss) add("thinking");
  if (!m.projectors.empty()) add("vision");
  return caps;
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
