#include "server/api/openai_request_parts.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "server/api/chat_request.h"
#include "server/api/inference_request.h"
#include "server/http/exchange.h"

namespace vkllm::api::openai {

using http::StatusError;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const J* number_of(const J& obj, std::string_view key) {
  const J* v = find_field(obj, key);
  if (v && !v->is_number()) bad_type(key, "a number", *v);
  return v;
}

nlohmann::json plain(const J& j) {
  return nlohmann::json::parse(j.dump());
}

// reasoning_effort / reasoning.effort onto Ollama's think levels (compat §2.1, §10): "none" turns
// thinking off, OpenAI's other names map onto the nearest level, unknown levels become the
// default level as Ollama v0.40 does for `think`.
void apply_effort(const J* effort, prompt::Think& think) {
  if (!effort) return;
  if (!effort->is_string()) throw StatusError(400, "invalid reasoning value: " + effort->dump());
  const std::string e = lower(effort->get<std::string>());
  think.set = true;
  if (e == "none") {
    think.enabled = false;
    think.level.clear();
    return;
  }
  think.enabled = true;
  think.level = e == "minimal" ? "low" : (e == "xhigh" || e == "ultra") ? "max" : e;
  normalise_think(think);
}

// A data URI as Ollama accepts it; http(s) URLs are not fetched.
std::string decode_image_url(const std::string& url) {
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    throw StatusError(400,
                      "image URLs are not currently supported, please use base64 encoded data "
                      "instead");
  }
  for (std::string_view prefix :
       {"data:image/jpeg;base64,", "data:image/jpg;base64,", "data:image/png;base64,",
        "data:image/webp;base64,", "data:;base64,"}) {
    if (url.rfind(prefix, 0) == 0)
      return decode_base64(std::string_view(url).substr(prefix.size()));
  }
  throw StatusError(400, "invalid image input");
}

prompt::ToolCall chat_tool_call(const J& j, int index) {
  if (!j.is_object()) throw StatusError(400, "invalid tool call");
  prompt::ToolCall c;
  c.id = string_of(j, "id").value_or("");
  c.index = static_cast<int>(int_of(j, "index").value_or(index));
  const J* fn = find_field(j, "function");
  if (!fn || !fn->is_object()) throw StatusError(400, "invalid tool call");
  c.name = string_of(*fn, "name").value_or("");
  if (const J* a = find_field(*fn, "arguments")) c.arguments = parse_arguments(*a);
  return c;
}

}  // namespace

// Go's %T of a decoded interface{} value, as Ollama's messages name them.
std::string go_type(const J& v) {
  if (v.is_null()) return "<nil>";
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_number()) return "float64";
  if (v.is_array()) return "[]interface {}";
  return "map[string]interface {}";
}

[[noreturn]] void bad_type(std::string_view key, std::string_view want, const J& got) {
  throw StatusError(400, "invalid type for '" + std::string(key) + "': expected " +
                             std::string(want) + ", got " + go_type(got));
}

std::optional<std::string> string_of(const J& obj, std::string_view key) {
  const J* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad_type(key, "a string", *v);
  return v->get<std::string>();
}

std::optional<bool> bool_of(const J& obj, std::string_view key) {
  const J* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::optional<int64_t> int_of(const J& obj, std::string_view key) {
  const J* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  // Range first: converting an out-of-range double to an integer is undefined.
  if (const double d = v->is_number_float() ? v->get<double>() : 0.5;
      std::fabs(d) < 9.2e18 && d == double(int64_t(d))) {
    return int64_t(d);
  }
  bad_type(key, "an integer", *v);
}

// model, stream, Ollama's options and keep_alive, and the OpenAI sampling fields every route
// shares. OpenAI's fields win over `options`; OpenAI's default temperature applies only when
// neither sets one.
void parse_common(const J& body, OpenAiRequest& out, std::string_view max_tokens_key) {
  auto& r = out.request;
  r.model = string_of(body, "model").value_or("");
  if (r.model.empty()) throw StatusError(400, "model is required");
  auto name = registry::ModelName::try_parse(r.model);
  if (!name) throw StatusError(404, "model '" + r.model + "' not found");
  r.name = *name;
  out.stream = bool_of(body, "stream").value_or(false);
  if (const J* so = find_field(body, "stream_options")) {
    if (!so->is_object()) bad_type("stream_options", "an object", *so);
    out.include_usage = bool_of(*so, "include_usage").value_or(false);
  }
  if (const J* o = find_field(body, "options")) {
    if (!o->is_object()) bad_type("options", "an object", *o);
    r.options = *o;
  }
  if (const J* k = find_field(body, "keep_alive")) {
    nlohmann::json holder;
    holder["keep_alive"] = plain(*k);
    r.keep_alive = parse_keep_alive(holder);
  }
  auto& opts = r.options;
  if (const J* t = number_of(body, "temperature")) {
    opts["temperature"] = *t;
  } else if (!opts.contains("temperature") || opts["temperature"].is_null()) {
    opts["temperature"] = 1.0;
  }
  if (const J* p = number_of(body, "top_p")) opts["top_p"] = *p;
  for (const char* k : {"frequency_penalty", "presence_penalty"}) {
    if (const J* v = number_of(body, k)) opts[k] = *v;
  }
  if (auto s = int_of(body, "seed")) opts["seed"] = *s;
  if (auto n = int_of(body, max_tokens_key)) opts["num_predict"] = *n;
}

// OpenAI's top_p is 1.0 when neither the request nor its `options` sets one.
void default_top_p(const J& body, J& options) {
  if (!find_field(body, "top_p") && (!options.contains("top_p") || options["top_p"].is_null())) {
    options["top_p"] = 1.0;
  }
}

// stop: a string or an array. /v1/chat/completions drops non-strings; /v1/completions rejects
// them (both as Ollama does).
void parse_stop(const J& body, OpenAiRequest& out, bool strict) {
  const J* s = find_field(body, "stop");
  if (!s) return;
  J stops = J::array();
  if (s->is_string()) {
    stops.push_back(*s);
  } else if (s->is_array()) {
    for (const auto& e : *s) {
      if (e.is_string()) {
        stops.push_back(e);
      } else if (strict) {
        throw StatusError(400, "invalid type for 'stop' field: " + go_type(e));
      }
    }
  } else {
    throw StatusError(400, "invalid type for 'stop' field: " + go_type(*s));
  }
  out.request.options["stop"] = std::move(stops);
}

void parse_top_logprobs(const J& body, requests::GenerationRequest& r) {
  if (auto t = int_of(body, "top_logprobs")) {
    if (*t < 0 || *t > 20) throw StatusError(400, "top_logprobs must be between 0 and 20");
    r.top_logprobs = static_cast<int>(*t);
  }
}

void parse_think_fields(const J& body, prompt::Think& think) {
  if (const J* t = find_field(body, "think")) think = parse_think(t);
  apply_effort(find_field(body, "reasoning_effort"), think);
  if (const J* reasoning = find_field(body, "reasoning")) {
    if (!reasoning->is_object()) bad_type("reasoning", "an object", *reasoning);
    apply_effort(find_field(*reasoning, "effort"), think);
  }
}

// image_url: "data:..." or {"url": "data:..."}.
std::string image_of(const J& v) {
  if (v.is_string()) return decode_image_url(v.get<std::string>());
  if (v.is_object()) {
    if (const J* u = find_field(v, "url"); u && u->is_string())
      return decode_image_url(u->get<std::string>());
  }
  throw StatusError(400, "invalid image input");
}

// Tool arguments arrive as a JSON string in OpenAI's API and are an object natively.
J parse_arguments(const J& args) {
  if (args.is_object()) return args;
  if (!args.is_string()) throw StatusError(400, "invalid tool call arguments");
  const auto& text = args.get_ref<const std::string&>();
  J parsed = J::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw StatusError(400, "invalid tool call arguments");
  }
  return parsed;
}

std::string role_of(const J& m) {
  std::string role = lower(string_of(m, "role").value_or(""));
  return role == "developer" ? "system" : role;
}

// One OpenAI chat message becomes one or more native messages (compat §2.1): each text part and
// each image part is a message of its own with the same role.
void append_chat_message(const J& m, std::vector<prompt::Message>& out, ToolNames& names) {
  if (!m.is_object()) throw StatusError(400, "invalid message format");
  const std::string role = role_of(m);
  const J* content = find_field(m, "content");
  const J* calls = find_field(m, "tool_calls");
  const size_t first = out.size();
  auto blank = [&role] {
    prompt::Message msg;
    msg.role = role;
    return msg;
  };
  if (!content) {
    if (!calls) throw StatusError(400, "invalid message content type: <nil>");
    out.push_back(blank());
  } else if (content->is_string()) {
    prompt::Message msg = blank();
    msg.content = content->get<std::string>();
    out.push_back(std::move(msg));
  } else if (content->is_array()) {
    for (const auto& part : *content) {
      if (!part.is_object()) throw StatusError(400, "invalid message format");
      const std::string type = string_of(part, "type").value_or("");
      prompt::Message msg = blank();
      if (type == "text") {
        msg.content = string_of(part, "text").value_or("");
      } else if (type == "image_url") {
        const J* img = find_field(part, "image_url");
        if (!img) throw StatusError(400, "invalid image input");
        msg.images.push_back(image_of(*img));
      } else if (type == "input_audio") {
        const J* audio = find_field(part, "input_audio");
        if (!audio || !audio->is_object()) throw StatusError(400, "invalid message format");
        msg.images.push_back(decode_base64(string_of(*audio, "data").value_or("")));
      } else {
        throw StatusError(400, "invalid message format");
      }
      out.push_back(std::move(msg));
    }
    if (out.size() == first) out.push_back(blank());
  } else {
    throw StatusError(400, "invalid message content type: " + go_type(*content));
  }
  prompt::Message& last = out.back();
  if (auto r = string_of(m, "reasoning"); r && !r->empty()) {
    last.thinking = *r;
  } else if (auto rc = string_of(m, "reasoning_content")) {
    last.thinking = *rc;
  }
  if (calls) {
    if (!calls->is_array()) bad_type("tool_calls", "an array", *calls);
    int i = 0;
    for (const auto& c : *calls) {
      last.tool_calls.push_back(chat_tool_call(c, i++));
      names.remember(last.tool_calls.back());
    }
  }
  if (role == "tool") {
    last.tool_call_id = string_of(m, "tool_call_id").value_or("");
    last.tool_name = string_of(m, "name").value_or("");
    if (last.tool_name.empty()) last.tool_name = names.lookup(last.tool_call_id);
  }
}

J tools_of(const J& body) {
  const J* tools = find_field(body, "tools");
  if (!tools) return J();
  if (!tools->is_array()) bad_type("tools", "an array", *tools);
  return *tools;
}

// tool_choice "none" means the model may not call tools: it never sees them. A named function
// narrows the tools to that one; "auto" and "required" leave them as they are.
J apply_tool_choice(const J& body, J tools) {
  const J* choice = find_field(body, "tool_choice");
  if (!choice || !tools.is_array()) return tools;
  if (choice->is_string() && choice->get<std::string>() == "none") return J();
  if (choice->is_object()) {
    std::string wanted;
    if (const J* fn = find_field(*choice, "function"); fn && fn->is_object()) {
      wanted = string_of(*fn, "name").value_or("");
    } else {
      wanted = string_of(*choice, "name").value_or("");
    }
    if (wanted.empty()) return tools;
    J kept = J::array();
    for (const auto& t : tools) {
      const J* fn = find_field(t, "function");
      const J* n = fn ? find_field(*fn, "name") : nullptr;
      if (n && n->is_string() && n->get<std::string>() == wanted) kept.push_back(t);
    }
    return kept;
  }
  return tools;
}

}  // namespace vkllm::api::openai
