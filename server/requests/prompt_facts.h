// What a request needs to know about a model before (and without) loading it: its prompt
// builder (template, named-template detection, Harmony), capabilities and the named template's
// defaults, from the store's layers and the GGUF header; and the per-request decisions made with
// them (think against the capability, how the output is parsed).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "registry/model_store.h"
#include "server/models/model_facts.h"
#include "server/prompt/prompt.h"
#include "server/requests/generation.h"

namespace vkllm::requests {

struct ModelFacts {
  std::shared_ptr<const prompt::PromptBuilder> builder;
  std::string builder_error;  // the template does not parse
  models::Capabilities caps;  // what /api/show lists (models::capabilities_of)
  nlohmann::ordered_json template_defaults = nlohmann::ordered_json::object();
};

std::shared_ptr<const ModelFacts> compute_model_facts(registry::ModelStore& store,
                                                      const registry::ModelShow& show);

// The request's think against the model's capability: thinking models think unless told not to
// (Ollama sets the absent value to true: the template sees Think, ThinkLevel "medium" and
// IsThinkSet); others refuse it, or drop it when the route says so. Throws http::StatusError.
void resolve_think(const GenerationRequest& req, const ModelFacts& facts, prompt::Think& think);

// How to parse the request's output: the builder's config, with a chat's last message (a
// Harmony model continues a last assistant message) and no Harmony or other built-in parser for
// a raw prompt (Ollama uses its builtin parsers only without raw).
prompt::ParserConfig output_parser_config(const prompt::PromptBuilder& builder,
                                          const GenerationRequest& req,
                                          const nlohmann::ordered_json& tools,
                                          const prompt::Think& think,
                                          std::string_view rendered_prompt);

}  // namespace vkllm::requests
