#include "server/requests/prompt_facts.h"

#include <optional>

#include "server/http/status_error.h"

namespace vkllm::requests {

std::shared_ptr<const ModelFacts> compute_model_facts(registry::ModelStore& store,
                                                      const registry::ModelShow& show) {
  auto f = std::make_shared<ModelFacts>();
  // Null for weights that are absent or unreadable: such a model fails later, when it loads,
  // with the loader's message.
  const auto summary = models::summary_of(store, show);
  std::optional<prompt::TemplateCapabilities> in_use;
  try {
    auto b = std::make_shared<prompt::PromptBuilder>(models::model_prompt(show, summary.get()));
    in_use = b->capabilities();
    f->template_defaults = b->default_parameters();
    f->builder = std::move(b);
  } catch (const prompt::TemplateError& e) {
    f->builder_error = e.what();
  }
  f->caps = models::capabilities_of(show, summary.get(), in_use ? &*in_use : nullptr);
  return f;
}

void resolve_think(const GenerationRequest& req, const ModelFacts& facts, prompt::Think& think) {
  if (think.set && think.enabled && !facts.caps.has("thinking")) {
    if (!req.think_if_capable) {
      throw http::StatusError(400, "\"" + req.model + "\" does not support thinking");
    }
    think = {};
  }
  if (!think.set && facts.caps.has("thinking")) {
    think.set = true;
    think.enabled = true;
    think.level = "medium";
  }
}

prompt::ParserConfig output_parser_config(const prompt::PromptBuilder& builder,
                                          const GenerationRequest& req,
                                          const nlohmann::ordered_json& tools,
                                          const prompt::Think& think,
                                          std::string_view rendered_prompt) {
  const bool chat = req.kind == GenerationRequest::Kind::chat;
  const prompt::Message* last =
      chat && !req.chat.messages.empty() ? &req.chat.messages.back() : nullptr;
  prompt::ParserConfig c = builder.parser_config(tools, think, rendered_prompt, last);
  if (req.raw) {
    c.harmony = false;
    c.special_tokens = false;
    c.builtin_parser.clear();
  }
  return c;
}

}  // namespace vkllm::requests
