#include "server/api/anthropic_request.h"

#include "server/api/chat_request.h"
#include "server/api/openai_request_parts.h"
#include "server/http/exchange.h"

namespace vkllm::api {

using http::StatusError;
using namespace openai;  // Go-decoder-style field readers shared with the /v1 parsers

namespace {

[[noreturn]] void required(std::string_view field) {
  throw StatusError(400, std::string(field) + ": Field required");
}

const J& required_field(const J& obj, std::string_view key, std::string_view path) {
  const J* v = find_field(obj, key);
  if (!v) required(path);
  return *v;
}

std::string where(std::string_view base, size_t i) {
  return std::string(base) + "." + std::to_string(i);
}

// {"type":"base64","media_type":...,"data":...}: the same decoded bytes Ollama's `images` carry.
std::string image_of_source(const J& block, const std::string& path) {
  const J& source = required_field(block, "source", path + ".source");
  if (!source.is_object()) bad_type(path + ".source", "an object", source);
  const std::string type = string_of(source, "type").value_or("");
  if (type != "base64") {
    throw StatusError(400,
                      "invalid image source type: " + type + ". Only base64 images are supported.");
  }
  return decode_base64(string_of(source, "data").value_or(""));
}

// tool_result content: a string, or text and image blocks.
void tool_result_content(const J* content, prompt::Message& out, const std::string& path) {
  if (!content) return;
  if (content->is_string()) {
    out.content = content->get<std::string>();
    return;
  }
  if (!content->is_array()) bad_type(path, "a string or an array", *content);
  for (size_t i = 0; i < content->size(); ++i) {
    const J& b = (*content)[i];
    const std::string p = where(path, i);
    const std::string type = b.is_object() ? string_of(b, "type").value_or("") : "";
    if (type == "text") {
      if (!out.content.empty()) out.content += "\n";
      out.content += string_of(b, "text").value_or("");
    } else if (type == "image") {
      out.images.push_back(image_of_source(b, p));
    } else {
      throw StatusError(400,
                        p + ": tool_result content blocks are text or image, got '" + type + "'");
    }
  }
}

// One Anthropic message → native messages: a user turn's tool results first (one `tool` message
// each, named after the tool_use they answer), then its text and images; an assistant turn's
// text, thinking and tool calls in one message.
void append_message(const J& m, size_t index, std::vector<prompt::Message>& out, ToolNames& names) {
  const std::string path = where("messages", index);
  if (!m.is_object()) bad_type(path, "an object", m);
  const std::string role = string_of(m, "role").value_or("");
  if (role != "user" && role != "assistant") {
    throw StatusError(400, path + ".role: Input should be 'user' or 'assistant'");
  }
  const J& content = required_field(m, "content", path + ".content");
  prompt::Message msg;
  msg.role = role;
  if (content.is_string()) {
    msg.content = content.get<std::string>();
    out.push_back(std::move(msg));
    return;
  }
  if (!content.is_array()) bad_type(path + ".content", "a string or an array", content);
  std::vector<prompt::Message> results;
  bool text = false;
  for (size_t i = 0; i < content.size(); ++i) {
    const J& b = content[i];
    const std::string p = where(path + ".content", i);
    if (!b.is_object()) bad_type(p, "an object", b);
    const std::string type = string_of(b, "type").value_or("");
    if (type == "text") {
      if (text) msg.content += "\n";
      msg.content += string_of(b, "text").value_or("");
      text = true;
    } else if (type == "image") {
      msg.images.push_back(image_of_source(b, p));
    } else if (type == "tool_use") {
      prompt::ToolCall c;
      c.id = string_of(b, "id").value_or("");
      c.name = string_of(b, "name").value_or("");
      if (c.id.empty()) required(p + ".id");
      if (c.name.empty()) required(p + ".name");
      if (const J* input = find_field(b, "input")) {
        if (!input->is_object()) bad_type(p + ".input", "an object", *input);
        c.arguments = *input;
      }
      c.index = static_cast<int>(msg.tool_calls.size());
      names.remember(c);
      msg.tool_calls.push_back(std::move(c));
    } else if (type == "tool_result") {
      prompt::Message r;
      r.role = "tool";
      r.tool_call_id = string_of(b, "tool_use_id").value_or("");
      if (r.tool_call_id.empty()) required(p + ".tool_use_id");
      r.tool_name = names.lookup(r.tool_call_id);
      tool_result_content(find_field(b, "content"), r, p + ".content");
      results.push_back(std::move(r));
    } else if (type == "thinking") {
      msg.thinking += string_of(b, "thinking").value_or("");
    } else if (type != "redacted_thinking") {  // encrypted: nothing a local model can read
      throw StatusError(400, p + ".type: unsupported content block type '" + type + "'");
    }
  }
  for (auto& r : results) out.push_back(std::move(r));
  const bool has_message = !msg.content.empty() || !msg.images.empty() || !msg.tool_calls.empty() ||
                           !msg.thinking.empty();
  if (has_message || results.empty()) out.push_back(std::move(msg));
}

// system: a string or an array of text blocks, one system message.
void append_system(const J& body, std::vector<prompt::Message>& out) {
  const J* system = find_field(body, "system");
  if (!system) return;
  prompt::Message msg;
  msg.role = "system";
  if (system->is_string()) {
    msg.content = system->get<std::string>();
  } else if (system->is_array()) {
    for (size_t i = 0; i < system->size(); ++i) {
      const J& b = (*system)[i];
      const std::string type = b.is_object() ? string_of(b, "type").value_or("") : "";
      if (type != "text")
        throw StatusError(400, where("system", i) + ".type: Input should be 'text'");
      if (i > 0) msg.content += "\n";
      msg.content += string_of(b, "text").value_or("");
    }
  } else {
    bad_type("system", "a string or an array", *system);
  }
  if (!msg.content.empty()) out.push_back(std::move(msg));
}

// Anthropic tools {name, description, input_schema} → function tools the templates render.
J tools_of_request(const J& body) {
  const J* tools = find_field(body, "tools");
  if (!tools) return J();
  if (!tools->is_array()) bad_type("tools", "an array", *tools);
  J out = J::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    const J& t = (*tools)[i];
    const std::string p = where("tools", i);
    if (!t.is_object()) bad_type(p, "an object", t);
    const std::string type = string_of(t, "type").value_or("custom");
    if (type != "custom") {
      throw StatusError(400, p + ".type: tool type '" + type +
                                 "' is not supported; only client tools (name, description, "
                                 "input_schema) are");
    }
    const std::string name = string_of(t, "name").value_or("");
    if (name.empty()) required(p + ".name");
    J fn;
    fn["name"] = name;
    if (auto d = string_of(t, "description")) fn["description"] = *d;
    const J* schema = find_field(t, "input_schema");
    if (!schema) required(p + ".input_schema");
    if (!schema->is_object()) bad_type(p + ".input_schema", "an object", *schema);
    fn["parameters"] = *schema;
    out.push_back(J{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// tool_choice {type: auto | any | tool (+ name) | none}.
J apply_anthropic_tool_choice(const J& body, J tools, AnthropicRequest& out) {
  const J* choice = find_field(body, "tool_choice");
  if (!choice) return tools;
  if (!choice->is_object()) bad_type("tool_choice", "an object", *choice);
  const std::string type = string_of(*choice, "type").value_or("");
  auto& forced = out.request.tool_choice;  // enforced by constrained decoding (tool_choice.h)
  forced.parallel = !bool_of(*choice, "disable_parallel_tool_use").value_or(false);
  if (type == "auto") return tools;
  if (type == "none") return J();
  if (type == "any") {
    out.tool_required = tools.is_array() && !tools.empty();
    if (out.tool_required) forced.mode = requests::ToolChoice::Mode::required;
    return tools;
  }
  if (type != "tool") {
    throw StatusError(400, "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'");
  }
  const std::string name = string_of(*choice, "name").value_or("");
  if (name.empty()) required("tool_choice.name");
  J kept = J::array();
  if (tools.is_array()) {
    for (const auto& t : tools) {
      if (t["function"]["name"] == name) kept.push_back(t);
    }
  }
  if (kept.empty()) throw StatusError(400, "tool_choice.name: no tool named '" + name + "'");
  out.tool_required = true;
  forced.mode = requests::ToolChoice::Mode::named;
  forced.name = name;
  return kept;
}

// thinking {type: enabled + budget_tokens | adaptive | disabled}, else output_config.effort.
void parse_thinking(const J& body, prompt::Think& think) {
  if (const J* t = find_field(body, "thinking")) {
    if (!t->is_object()) bad_type("thinking", "an object", *t);
    const std::string type = string_of(*t, "type").value_or("");
    think.set = true;
    if (type == "disabled") {
      think.enabled = false;
      return;
    }
    think.enabled = true;
    if (type == "enabled") {
      const auto budget = int_of(*t, "budget_tokens");
      if (!budget) required("thinking.enabled.budget_tokens");
      if (*budget < 1) {
        throw StatusError(400, "thinking.enabled.budget_tokens: Input should be greater than 0");
      }
      think.level = think_level_for_budget(*budget);
    } else if (type == "adaptive") {
      think.level = "medium";
    } else {
      throw StatusError(400, "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'");
    }
    return;
  }
  const J* config = find_field(body, "output_config");
  if (!config) return;
  if (!config->is_object()) bad_type("output_config", "an object", *config);
  const std::string effort = string_of(*config, "effort").value_or("");
  if (effort.empty()) return;
  if (effort != "low" && effort != "medium" && effort != "high" && effort != "max" &&
      effort != "xhigh") {
    throw StatusError(400,
                      "output_config.effort: Input should be 'low', 'medium', 'high' or 'max'");
  }
  think.set = true;
  think.enabled = true;
  think.level = effort == "xhigh" ? "high" : effort;
}

AnthropicRequest parse_body(const J& body, bool messages_route) {
  AnthropicRequest out;
  auto& r = out.request;
  r.kind = requests::GenerationRequest::Kind::chat;
  const J& model = required_field(body, "model", "model");
  if (!model.is_string()) bad_type("model", "a string", model);
  r.model = model.get<std::string>();
  const auto name = registry::ModelName::try_parse(r.model);
  if (!name) throw StatusError(404, "model '" + r.model + "' not found");
  r.name = *name;
  if (const J* o = find_field(body, "options")) {  // Ollama's options, as on every /v1 route
    if (!o->is_object()) bad_type("options", "an object", *o);
    r.options = *o;
  }
  if (messages_route) {
    out.stream = bool_of(body, "stream").value_or(false);
    const auto max_tokens = int_of(body, "max_tokens");
    if (!max_tokens) required("max_tokens");
    if (*max_tokens < 1) throw StatusError(400, "max_tokens: Input should be greater than 0");
    r.options["num_predict"] = *max_tokens;
    for (const char* k : {"temperature", "top_p"}) {
      if (const J* v = find_field(body, k)) {
        if (!v->is_number()) bad_type(k, "a number", *v);
        r.options[k] = *v;
      }
    }
    if (auto k = int_of(body, "top_k")) r.options["top_k"] = *k;
    if (const J* stops = find_field(body, "stop_sequences")) {
      if (!stops->is_array()) bad_type("stop_sequences", "an array", *stops);
      for (const auto& s : *stops) {
        if (!s.is_string()) bad_type("stop_sequences", "an array of strings", s);
        out.stop_sequences.push_back(s.get<std::string>());
      }
      if (!out.stop_sequences.empty()) r.options["stop"] = *stops;
    }
    if (const J* f = find_field(body, "format")) {  // Ollama's own field, as on /v1/chat
      if (!f->is_object() && *f != "json") bad_type("format", "\"json\" or a JSON Schema", *f);
      r.format = *f;
    }
    if (const J* meta = find_field(body, "metadata")) {
      if (!meta->is_object()) bad_type("metadata", "an object", *meta);
      string_of(*meta, "user_id");  // type-checked; vkllm keeps no per-user state
    }
  }
  auto& chat = r.chat;
  append_system(body, chat.messages);
  const J& messages = required_field(body, "messages", "messages");
  if (!messages.is_array()) bad_type("messages", "an array", messages);
  ToolNames names;
  for (size_t i = 0; i < messages.size(); ++i) {
    append_message(messages[i], i, chat.messages, names);
  }
  chat.tools = apply_anthropic_tool_choice(body, tools_of_request(body), out);
  parse_thinking(body, chat.think);
  // As Ollama's /v1/messages: thinking asked of a model without it is dropped, not refused.
  r.think_if_capable = true;
  return out;
}

}  // namespace

std::string think_level_for_budget(int64_t budget_tokens) {
  if (budget_tokens < 4096) return "low";
  if (budget_tokens < 16384) return "medium";
  return "high";
}

AnthropicRequest parse_messages_request(const J& body) {
  AnthropicRequest out = parse_body(body, true);
  if (out.request.chat.messages.empty() ||
      (out.request.chat.messages.size() == 1 && out.request.chat.messages[0].role == "system")) {
    throw StatusError(400, "messages: at least one message is required");
  }
  return out;
}

AnthropicRequest parse_count_tokens_request(const J& body) {
  return parse_body(body, false);
}

}  // namespace vkllm::api
