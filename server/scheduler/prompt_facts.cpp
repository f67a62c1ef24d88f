#include "server/scheduler/prompt_facts.h"

#include "server/scheduler/blob_model_source.h"
#include "server/http/status_error.h"

namespace vkllm::sched {

std::shared_ptr<const ModelFacts> compute_model_facts(registry::ModelStore& store,
                                                      const registry::ModelShow& show) {
  auto f = std::make_shared<ModelFacts>();
  prompt::ModelPrompt mp;
  mp.template_text = show.template_text;
  mp.system = show.system;
  mp.name = show.name.display();
  mp.renderer = show.renderer;
  mp.parser = show.parser;
  mp.has_projector = !show.projectors.empty();
  for (const auto& m : show.messages)
    mp.messages.push_back({m.role, m.content, {}, {}, {}, {}, {}});
  if (show.model_blob) {
    try {
      const auto header = read_gguf_header(store.blobs(), *show.model_blob);
      if (auto t = header.get_optional<std::string>("tokenizer.chat_template")) {
        mp.gguf_chat_template = *t;
      }
      if (auto a = header.get_optional<std::string>("general.architecture")) {
        mp.architecture = *a;
        f->completion = !header.has(*a + ".pooling_type");
      }
      f->vision = header.has("vision.block_count") || !show.projectors.empty();
    } catch (const std::exception&) {
      // An unreadable model fails later, when it loads, with the loader's message.
    }
  }
  try {
    auto b = std::make_shared<prompt::PromptBuilder>(std::move(mp));
    f->caps = b->capabilities();
    f->template_defaults = b->default_parameters();
    f->builder = std::move(b);
  } catch (const prompt::TemplateError& e) {
    f->builder_error = e.what();
  }
  return f;
}

void resolve_think(const GenerationRequest& req, const ModelFacts& facts, prompt::Think& think) {
  if (think.set && think.enabled && !facts.caps.thinking) {
    if (!req.think_if_capable) {
      throw http::StatusError(400, "\"" + req.model + "\" does not support thinking");
    }
    think = {};
  }
  if (!think.set && facts.caps.thinking) {
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
  }
  return c;
}

}  // namespace vkllm::sched
