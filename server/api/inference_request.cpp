#include "server/api/inference_request.h"

#include <openssl/evp.h>

#include "server/api/json_request.h"
#include "server/http/exchange.h"
#include "server/scheduler/go_duration.h"

namespace vkllm::api {

namespace {

using http::HttpError;
using nlohmann::json;

const char* go_type(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_number()) return "number";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

[[noreturn]] void wrong_type(const json& v, std::string_view field, std::string_view type) {
  throw HttpError(400, "json: cannot unmarshal " + std::string(go_type(v)) +
                           " into Go struct field ." + std::string(field) + " of type " +
                           std::string(type));
}

std::optional<int64_t> int_field(const json& body, std::string_view key) {
  const json* v = find_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() &&
      !(v->is_number_float() && v->get<double>() == int64_t(v->get<double>()))) {
    wrong_type(*v, key, "int");
  }
  return v->get<int64_t>();
}

std::string str(const json& body, std::string_view key) {
  return string_field(body, key).value_or("");
}

std::vector<std::string> images_field(const json& obj) {
  std::vector<std::string> out;
  const json* v = find_field(obj, "images");
  if (!v) return out;
  if (!v->is_array()) wrong_type(*v, "images", "[]api.ImageData");
  for (const auto& img : *v) {
    if (!img.is_string()) wrong_type(img, "images", "api.ImageData");
    auto bytes = decode_base64(img.get_ref<const std::string&>());
    if (!bytes) throw HttpError(400, "illegal base64 data in image");
    out.push_back(std::move(*bytes));
  }
  return out;
}

// Fields every inference request shares (compat §1.4).
void parse_common(const json& body, sched::GenerationRequest& r, bool& stream) {
  stream = bool_field(body, "stream").value_or(true);
  r.keep_alive = parse_keep_alive(body);
  if (const json* o = find_field(body, "options")) {
    if (!o->is_object()) wrong_type(*o, "options", "map[string]interface {}");
    r.options = nlohmann::ordered_json::parse(o->dump());
  }
  if (const json* f = find_field(body, "format")) {
    if (f->is_string()) {
      const auto& s = f->get_ref<const std::string&>();
      if (!s.empty() && s != "json") {
        throw HttpError(
            400, "invalid format: \"" + s + "\"; expected \"json\" or a valid JSON Schema object");
      }
      if (s == "json") r.format = "json";
    } else if (f->is_object()) {
      r.format = *f;
    } else {
      throw HttpError(400, "invalid format: " + f->dump() +
                               "; expected \"json\" or a valid JSON Schema object");
    }
  }
  r.logprobs = bool_field(body, "logprobs").value_or(false);
  if (auto t = int_field(body, "top_logprobs")) {
    if (*t < 0 || *t > 20) throw HttpError(400, "top_logprobs must be between 0 and 20");
    r.top_logprobs = static_cast<int>(*t);
  }
  r.shift = bool_field(body, "shift");
  r.debug_render_only = bool_field(body, "_debug_render_only").value_or(false);
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  std::string s(text);
  std::erase_if(s, [](char c) { return c == '\n' || c == '\r'; });
  while (s.size() % 4) s += '=';
  std::string out(s.size() / 4 * 3, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts padding as zero bytes.
  size_t pad = 0;
  if (!s.empty() && s.back() == '=') ++pad;
  if (s.size() > 1 && s[s.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::optional<std::chrono::nanoseconds> parse_keep_alive(const json& body) {
  const json* v = find_field(body, "keep_alive");
  if (!v) return std::nullopt;
  if (v->is_number()) {
    const double secs = v->get<double>();
    return std::chrono::nanoseconds(static_cast<int64_t>(secs * 1e9));
  }
  if (v->is_string()) {
    try {
      return sched::parse_go_duration(v->get_ref<const std::string&>());
    } catch (const std::invalid_argument& e) {
      throw HttpError(400, e.what());
    }
  }
  throw HttpError(400, std::string("Unsupported type: '") + go_type(*v) + "'");
}

prompt::Think parse_think(const json& body) {
  prompt::Think t;
  const json* v = find_field(body, "think");
  if (!v) return t;
  if (v->is_boolean()) {
    t.set = true;
    t.enabled = v->get<bool>();
    t.level = t.enabled ? "medium" : "";
  } else if (v->is_string()) {
    // Since Ollama v0.40 an unknown level means the model's default, not an error.
    const auto& s = v->get_ref<const std::string&>();
    t.set = true;
    t.enabled = true;
    t.level = (s == "low" || s == "medium" || s == "high" || s == "max") ? s : "medium";
  }
  return t;
}

prompt::Message parse_message(const json& m) {
  if (!m.is_object()) wrong_type(m, "messages", "api.Message");
  prompt::Message msg;
  msg.role = str(m, "role");
  std::transform(msg.role.begin(), msg.role.end(), msg.role.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  msg.content = str(m, "content");
  msg.thinking = str(m, "thinking");
  msg.images = images_field(m);
  msg.tool_name = str(m, "tool_name");
  msg.tool_call_id = str(m, "tool_call_id");
  if (const json* calls = find_field(m, "tool_calls")) {
    if (!calls->is_array()) wrong_type(*calls, "tool_calls", "[]api.ToolCall");
    int index = 0;
    for (const auto& c : *calls) {
      if (!c.is_object()) wrong_type(c, "tool_calls", "api.ToolCall");
      prompt::ToolCall tc;
      tc.id = str(c, "id");
      tc.index = index++;
      if (const json* f = find_field(c, "function"); f && f->is_object()) {
        tc.name = str(*f, "name");
        if (auto i = int_field(*f, "index")) tc.index = static_cast<int>(*i);
        if (const json* a = find_field(*f, "arguments")) {
          if (!a->is_object()) wrong_type(*a, "arguments", "api.ToolCallFunctionArguments");
          tc.arguments = nlohmann::ordered_json::parse(a->dump());
        }
      }
      msg.tool_calls.push_back(std::move(tc));
    }
  }
  return msg;
}

std::vector<prompt::Message> parse_messages(const json& body) {
  std::vector<prompt::Message> out;
  const json* v = find_field(body, "messages");
  if (!v) return out;
  if (!v->is_array()) wrong_type(*v, "messages", "[]api.Message");
  for (const auto& m : *v) out.push_back(parse_message(m));
  return out;
}

InferenceEnvelope parse_generate_request(const json& body) {
  InferenceEnvelope env;
  auto& r = env.request;
  r.kind = sched::GenerationRequest::Kind::generate;
  r.model = model_field(body);
  if (r.model.empty()) throw HttpError(404, "model '' not found");
  auto name = registry::ModelName::try_parse(r.model);
  if (!name) throw HttpError(400, "invalid model name");
  r.name = *name;
  parse_common(body, r, env.stream);
  auto& g = r.generate;
  g.prompt = str(body, "prompt");
  g.suffix = str(body, "suffix");
  g.system = string_field(body, "system");
  g.template_override = string_field(body, "template");
  if (g.template_override && g.template_override->empty()) g.template_override.reset();
  g.images = images_field(body);
  g.think = parse_think(body);
  r.raw = bool_field(body, "raw").value_or(false);
  if (const json* c = find_field(body, "context")) {
    if (!c->is_array()) wrong_type(*c, "context", "[]int");
    for (const auto& t : *c) {
      if (!t.is_number_integer()) wrong_type(t, "context", "int");
      r.context.push_back(t.get<int32_t>());
    }
  }
  g.has_context = !r.context.empty();
  if (r.raw && (g.template_override || (g.system && !g.system->empty()) || !r.context.empty())) {
    throw HttpError(400, "raw mode does not support template, system, or context");
  }
  return env;
}

InferenceEnvelope parse_chat_request(const json& body) {
  InferenceEnvelope env;
  auto& r = env.request;
  r.kind = sched::GenerationRequest::Kind::chat;
  r.model = model_field(body);
  if (r.model.empty()) throw HttpError(400, "model is required");
  auto name = registry::ModelName::try_parse(r.model);
  if (!name) throw HttpError(400, "invalid model name");
  r.name = *name;
  parse_common(body, r, env.stream);
  r.chat.messages = parse_messages(body);
  r.chat.think = parse_think(body);
  r.chat.truncate = bool_field(body, "truncate").value_or(true);
  if (const json* t = find_field(body, "tools")) {
    if (!t->is_array()) wrong_type(*t, "tools", "api.Tools");
    r.chat.tools = nlohmann::ordered_json::parse(t->dump());
  }
  return env;
}

}  // namespace vkllm::api
