#include "server/api/openai_request.h"

#include "server/api/chat_request.h"
#include "server/api/inference_request.h"
#include "server/api/openai_request_parts.h"
#include "server/http/exchange.h"

namespace vkllm::api {

using http::StatusError;
using namespace openai;  // the parsers are built from its parts

J parse_openai_body(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw StatusError(400, "missing request body");
  }
  J j = J::parse(body, nullptr, false);
  if (j.is_discarded()) throw StatusError(400, "invalid JSON in request body");
  if (!j.is_object()) throw StatusError(400, "request body must be a JSON object");
  return j;
}

OpenAiRequest parse_chat_completion_request(const J& body) {
  OpenAiRequest out;
  auto& r = out.request;
  r.kind = requests::GenerationRequest::Kind::chat;
  // OpenAI's newer name wins over the deprecated one when both are sent.
  parse_common(body, out, "max_tokens");
  default_top_p(body, r.options);
  if (auto n = int_of(body, "max_completion_tokens")) r.options["num_predict"] = *n;
  parse_stop(body, out, false);
  const J* messages = find_field(body, "messages");
  if (!messages) throw StatusError(400, "'messages' is a required property");
  if (!messages->is_array()) bad_type("messages", "an array", *messages);
  if (messages->empty()) throw StatusError(400, "[] is too short - 'messages'");
  ToolNames names;
  for (const auto& m : *messages) append_chat_message(m, r.chat.messages, names);
  r.chat.tools = apply_tool_choice(body, tools_of(body));
  r.tool_choice = tool_choice_of(body, r.chat.tools);
  parse_think_fields(body, r.chat.think);
  if (const J* rf = find_field(body, "response_format")) {
    if (!rf->is_object()) bad_type("response_format", "an object", *rf);
    const std::string type = string_of(*rf, "type").value_or("");
    if (type == "json_object") {
      r.format = "json";
    } else if (type == "json_schema") {
      const J* js = find_field(*rf, "json_schema");
      const J* schema = js ? find_field(*js, "schema") : nullptr;
      if (schema) {
        if (!schema->is_object())
          bad_type("response_format.json_schema.schema", "an object", *schema);
        r.format = *schema;
      } else {
        r.format = "json";
      }
    }
  }
  if (auto lp = bool_of(body, "logprobs")) r.logprobs = *lp;
  parse_top_logprobs(body, r);
  if (const J* f = find_field(body, "format")) r.format = *f;  // Ollama's own field, if sent
  parse_constraints(body, r);
  return out;
}

OpenAiRequest parse_completion_request(const J& body) {
  OpenAiRequest out;
  auto& r = out.request;
  r.kind = requests::GenerationRequest::Kind::generate;
  parse_common(body, out, "max_tokens");
  // /v1/completions treats top_p 0 as absent (compat §2.2).
  if (const J* p = find_field(body, "top_p"); p && p->get<double>() == 0) r.options["top_p"] = 1.0;
  default_top_p(body, r.options);
  parse_stop(body, out, true);
  if (const J* p = find_field(body, "prompt")) {
    if (p->is_string()) {
      r.generate.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.generate.prompt = (*p)[0].get<std::string>();
    } else {
      throw StatusError(400, "invalid type for 'prompt' field: " + go_type(*p));
    }
  }
  r.generate.suffix = string_of(body, "suffix").value_or("");
  // logprobs: N alternatives per token (0 or absent: none).
  if (auto n = int_of(body, "logprobs"); n && *n > 0) {
    if (*n > 20) throw StatusError(400, "logprobs must be between 0 and 20");
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(*n);
  }
  parse_constraints(body, r);
  return out;
}

}  // namespace vkllm::api
