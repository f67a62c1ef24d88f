// Refuses, before any load, a generation request that asks a model for what it cannot do (compat
// §1.5, §1.6, §1.15), judged by the capabilities /api/show lists: chat or generate at all, tools,
// insert (a suffix), images; and resolves the request's think against the model's.
#pragma once

#include "registry/model_store.h"
#include "server/requests/generation.h"
#include "server/requests/prompt_facts.h"

namespace vkllm::requests {

// Throws http::StatusError 400 with Ollama's text for the first need the model lacks; sets the
// request's think as the model takes it (resolve_think).
void check_capabilities(GenerationRequest& req, const registry::ModelShow& show,
                        const ModelFacts& facts);

// The request brings tools (a chat with a non-empty `tools` array).
bool has_tools(const GenerationRequest& req);

}  // namespace vkllm::requests
