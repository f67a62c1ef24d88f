#include "server/requests/capability_check.h"

#include <algorithm>
#include <string>

#include "server/http/status_error.h"

namespace vkllm::requests {

bool has_tools(const GenerationRequest& req) {
  return req.kind == GenerationRequest::Kind::chat && req.chat.tools.is_array() &&
         !req.chat.tools.empty();
}

void check_capabilities(GenerationRequest& req, const registry::ModelShow& show,
                        const ModelFacts& facts) {
  const bool chat = req.kind == GenerationRequest::Kind::chat;
  if (!facts.caps.generates()) {
    throw http::StatusError(
        400, "\"" + req.model + "\" does not support " + std::string(chat ? "chat" : "generate"));
  }
  resolve_think(req, facts, chat ? req.chat.think : req.generate.think);
  if (has_tools(req) && !facts.caps.has("tools")) {
    throw http::StatusError(400, show.name.full() + " does not support tools");
  }
  if (!chat && !req.generate.suffix.empty() && !facts.caps.has("insert") && !req.raw) {
    throw http::StatusError(400, show.name.full() + " does not support insert");
  }
  bool has_images = !req.generate.images.empty();
  for (const auto& m : req.chat.messages) has_images |= !m.images.empty();
  if (has_images && !facts.caps.has("vision")) {
    // A model whose file has a vision tower that vkllm cannot run yet says so.
    const auto& not_run = facts.caps.not_run;
    const bool tower = std::find(not_run.begin(), not_run.end(), "vision") != not_run.end();
    throw http::StatusError(
        400, "\"" + req.model + "\" does not support images" +
                 (tower ? std::string(": vkllm does not run vision encoders yet") : std::string()));
  }
}

}  // namespace vkllm::requests
