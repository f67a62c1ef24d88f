// /v1/responses: the Responses API's input items, instructions, flat tools and reasoning onto
// the shared GenerationRequest.
#include "server/api/openai_request.h"

#include "server/api/chat_request.h"
#include "server/api/inference_request.h"
#include "server/api/openai_request_parts.h"
#include "server/http/exchange.h"

namespace vkllm::api {

using http::StatusError;
using namespace openai;  // the parsers are built from its parts

namespace {

// Text of a responses content value: a string, or parts whose text is joined.
std::string response_text(const J& content, std::vector<std::string>* images) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    throw StatusError(400, "invalid type for 'content': " + go_type(content));
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object()) throw StatusError(400, "invalid content part");
    const std::string type = string_of(part, "type").value_or("");
    if (type == "input_text" || type == "output_text" || type == "text") {
      text += string_of(part, "text").value_or("");
    } else if (type == "input_image" && images) {
      const J* img = find_field(part, "image_url");
      if (!img) throw StatusError(400, "invalid image input");
      images->push_back(image_of(*img));
    } else if (type == "input_file") {
      throw StatusError(400, "file inputs are not currently supported");
    } else if (type == "refusal") {
      text += string_of(part, "refusal").value_or("");
    } else {
      throw StatusError(400, "invalid content part type: " + type);
    }
  }
  return text;
}

// Responses tools are flat ({"type":"function","name",...}); the native shape nests
// "function". Namespaces expand to "namespace.function"; server-side tools are not offered.
void add_response_tool(const J& t, const std::string& prefix, J& out) {
  if (!t.is_object()) throw StatusError(400, "invalid tool");
  const std::string type = string_of(t, "type").value_or("function");
  if (type == "function") {
    J fn;
    fn["name"] = prefix + string_of(t, "name").value_or("");
    if (const J* d = find_field(t, "description")) fn["description"] = *d;
    if (const J* p = find_field(t, "parameters")) fn["parameters"] = *p;
    out.push_back(J{{"type", "function"}, {"function", std::move(fn)}});
  } else if (type == "namespace") {
    const std::string name = string_of(t, "name").value_or("");
    if (const J* inner = find_field(t, "tools"); inner && inner->is_array()) {
      for (const auto& i : *inner) add_response_tool(i, prefix + name + ".", out);
    }
  }
}

}  // namespace

OpenAiRequest parse_responses_request(const J& body) {
  OpenAiRequest out;
  auto& r = out.request;
  r.kind = requests::GenerationRequest::Kind::chat;
  parse_common(body, out, "max_output_tokens");
  auto& msgs = r.chat.messages;
  if (auto ins = string_of(body, "instructions"); ins && !ins->empty()) {
    msgs.push_back({"system", *ins, {}, {}, {}, {}, {}});
  }
  ToolNames names;
  std::string pending_thinking;
  bool last_was_call = false;
  const J* input = find_field(body, "input");
  if (input && input->is_string()) {
    msgs.push_back({"user", input->get<std::string>(), {}, {}, {}, {}, {}});
  } else if (input && input->is_array()) {
    for (const auto& item : *input) {
      if (!item.is_object()) throw StatusError(400, "invalid input item");
      std::string type = string_of(item, "type").value_or("");
      if (type.empty() && find_field(item, "role")) type = "message";
      bool call = false;
      if (type == "message") {
        prompt::Message m;
        m.role = role_of(item);
        if (const J* c = find_field(item, "content")) m.content = response_text(*c, &m.images);
        if (m.role == "assistant") m.thinking = std::exchange(pending_thinking, "");
        msgs.push_back(std::move(m));
      } else if (type == "function_call") {
        prompt::ToolCall c;
        c.id = string_of(item, "call_id").value_or("");
        c.name = string_of(item, "name").value_or("");
        if (const J* a = find_field(item, "arguments")) c.arguments = parse_arguments(*a);
        names.remember(c);
        // Consecutive calls (and an assistant message just before them) form one turn.
        if (msgs.empty() || msgs.back().role != "assistant" ||
            (!last_was_call && !msgs.back().tool_calls.empty())) {
          prompt::Message m;
          m.role = "assistant";
          m.thinking = std::exchange(pending_thinking, "");
          msgs.push_back(std::move(m));
        }
        c.index = static_cast<int>(msgs.back().tool_calls.size());
        msgs.back().tool_calls.push_back(std::move(c));
        call = true;
      } else if (type == "function_call_output") {
        prompt::Message m;
        m.role = "tool";
        m.tool_call_id = string_of(item, "call_id").value_or("");
        m.tool_name = names.lookup(m.tool_call_id);
        if (const J* o = find_field(item, "output")) m.content = response_text(*o, nullptr);
        msgs.push_back(std::move(m));
      } else if (type == "reasoning") {
        if (auto enc = string_of(item, "encrypted_content"); enc && !enc->empty()) {
          pending_thinking = *enc;
        } else if (const J* s = find_field(item, "summary"); s && s->is_array()) {
          pending_thinking.clear();
          for (const auto& part : *s) pending_thinking += string_of(part, "text").value_or("");
        }
      } else if (type != "web_search_call") {
        throw StatusError(400, "unexpected input item type: " + type);
      }
      last_was_call = call;
    }
  } else if (input) {
    throw StatusError(400, "invalid type for 'input': " + go_type(*input));
  }
  if (msgs.empty()) throw StatusError(400, "'input' is required");

  J tools = J();
  if (const J* ts = find_field(body, "tools")) {
    if (!ts->is_array()) bad_type("tools", "an array", *ts);
    tools = J::array();
    for (const auto& t : *ts) add_response_tool(t, "", tools);
  }
  r.chat.tools = apply_tool_choice(body, std::move(tools));
  r.tool_choice = tool_choice_of(body, r.chat.tools);
  parse_think_fields(body, r.chat.think);
  J text_format = J{{"type", "text"}};
  if (const J* text = find_field(body, "text")) {
    if (!text->is_object()) bad_type("text", "an object", *text);
    if (const J* f = find_field(*text, "format")) {
      if (!f->is_object()) bad_type("text.format", "an object", *f);
      text_format = *f;
      const std::string type = string_of(*f, "type").value_or("");
      if (type == "json_schema") {
        const J* schema = find_field(*f, "schema");
        r.format = schema ? *schema : J("json");
      } else if (type == "json_object") {
        r.format = "json";
      }
    }
  }
  parse_top_logprobs(body, r);
  parse_constraints(body, r);
  if (const J* inc = find_field(body, "include"); inc && inc->is_array()) {
    for (const auto& i : *inc) r.logprobs |= i == "message.output_text.logprobs";
  }
  auto& echo = out.echo;
  // The request's own value, as sent, or the default OpenAI echoes when it was left out.
  auto sent_or = [&body](std::string_view key, J fallback) {
    const J* v = find_field(body, key);
    return v ? *v : fallback;
  };
  echo["instructions"] = sent_or("instructions", J());
  echo["tools"] = sent_or("tools", J::array());
  echo["tool_choice"] = sent_or("tool_choice", J("auto"));
  echo["truncation"] = sent_or("truncation", J("disabled"));
  echo["parallel_tool_calls"] = bool_of(body, "parallel_tool_calls").value_or(true);
  echo["text"] = J{{"format", text_format}};
  echo["top_p"] = r.options.contains("top_p") ? r.options["top_p"] : J(1.0);
  echo["temperature"] = r.options["temperature"];
  echo["top_logprobs"] = r.top_logprobs;
  echo["reasoning"] = sent_or("reasoning", J());
  echo["max_output_tokens"] = sent_or("max_output_tokens", J());
  echo["metadata"] = sent_or("metadata", J::object());
  return out;
}

}  // namespace vkllm::api
