#include "server/api/openai_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "server/api/chat_request.h"
#include "server/api/inference_request.h"
#include "server/http/exchange.h"

namespace vkllm::api {

namespace {

using http::HttpError;
using J = nlohmann::ordered_json;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Ollama decodes /v1 bodies with Go's encoding/json: exact key first, then case-insensitive; a
// null value counts as absent.
const J* field(const J& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  if (it == obj.end()) {
    for (auto i = obj.begin(); i != obj.end(); ++i) {
      if (iequals(i.key(), key)) {
        it = i;
        break;
      }
    }
  }
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

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
  throw HttpError(400, "invalid type for '" + std::string(key) + "': expected " +
                           std::string(want) + ", got " + go_type(got));
}

std::optional<std::string> string_of(const J& obj, std::string_view key) {
  const J* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad_type(key, "a string", *v);
  return v->get<std::string>();
}

std::optional<bool> bool_of(const J& obj, std::string_view key) {
  const J* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::optional<int64_t> int_of(const J& obj, std::string_view key) {
  const J* v = field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  // Range first: converting an out-of-range double to an integer is undefined.
  if (const double d = v->is_number_float() ? v->get<double>() : 0.5;
      std::fabs(d) < 9.2e18 && d == double(int64_t(d))) {
    return int64_t(d);
  }
  bad_type(key, "an integer", *v);
}

const J* number_of(const J& obj, std::string_view key) {
  const J* v = field(obj, key);
  if (v && !v->is_number()) bad_type(key, "a number", *v);
  return v;
}

nlohmann::json plain(const J& j) {
  return nlohmann::json::parse(j.dump());
}

// model, stream, Ollama's options and keep_alive, and the OpenAI sampling fields every route
// shares. OpenAI's fields win over `options`; OpenAI's default temperature applies only when
// neither sets one.
void parse_common(const J& body, OpenAiRequest& out, std::string_view max_tokens_key) {
  auto& r = out.request;
  r.model = string_of(body, "model").value_or("");
  if (r.model.empty()) throw HttpError(400, "model is required");
  auto name = registry::ModelName::try_parse(r.model);
  if (!name) throw HttpError(404, "model '" + r.model + "' not found");
  r.name = *name;
  out.stream = bool_of(body, "stream").value_or(false);
  if (const J* so = field(body, "stream_options")) {
    if (!so->is_object()) bad_type("stream_options", "an object", *so);
    out.include_usage = bool_of(*so, "include_usage").value_or(false);
  }
  if (const J* o = field(body, "options")) {
    if (!o->is_object()) bad_type("options", "an object", *o);
    r.options = *o;
  }
  if (const J* k = field(body, "keep_alive")) {
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
  if (!field(body, "top_p") && (!options.contains("top_p") || options["top_p"].is_null())) {
    options["top_p"] = 1.0;
  }
}

// stop: a string or an array. /v1/chat/completions drops non-strings; /v1/completions rejects
// them (both as Ollama does).
void parse_stop(const J& body, OpenAiRequest& out, bool strict) {
  const J* s = field(body, "stop");
  if (!s) return;
  J stops = J::array();
  if (s->is_string()) {
    stops.push_back(*s);
  } else if (s->is_array()) {
    for (const auto& e : *s) {
      if (e.is_string()) {
        stops.push_back(e);
      } else if (strict) {
        throw HttpError(400, "invalid type for 'stop' field: " + go_type(e));
      }
    }
  } else {
    throw HttpError(400, "invalid type for 'stop' field: " + go_type(*s));
  }
  out.request.options["stop"] = std::move(stops);
}

void parse_top_logprobs(const J& body, sched::GenerationRequest& r) {
  if (auto t = int_of(body, "top_logprobs")) {
    if (*t < 0 || *t > 20) throw HttpError(400, "top_logprobs must be between 0 and 20");
    r.top_logprobs = static_cast<int>(*t);
  }
}

// reasoning_effort / reasoning.effort onto Ollama's think levels (compat §2.1, §10): "none" turns
// thinking off, OpenAI's other names map onto the nearest level, unknown levels become the
// default level as Ollama v0.40 does for `think`.
void apply_effort(const J* effort, prompt::Think& think) {
  if (!effort) return;
  if (!effort->is_string()) throw HttpError(400, "invalid reasoning value: " + effort->dump());
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

void parse_think_fields(const J& body, prompt::Think& think) {
  if (const J* t = field(body, "think")) think = parse_think(t);
  apply_effort(field(body, "reasoning_effort"), think);
  if (const J* reasoning = field(body, "reasoning")) {
    if (!reasoning->is_object()) bad_type("reasoning", "an object", *reasoning);
    apply_effort(field(*reasoning, "effort"), think);
  }
}

// A data URI as Ollama accepts it; http(s) URLs are not fetched.
std::string decode_image_url(const std::string& url) {
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    throw HttpError(400,
                    "image URLs are not currently supported, please use base64 encoded data "
                    "instead");
  }
  for (std::string_view prefix :
       {"data:image/jpeg;base64,", "data:image/jpg;base64,", "data:image/png;base64,",
        "data:image/webp;base64,", "data:;base64,"}) {
    if (url.rfind(prefix, 0) == 0)
      return decode_base64(std::string_view(url).substr(prefix.size()));
  }
  throw HttpError(400, "invalid image input");
}

// image_url: "data:..." or {"url": "data:..."}.
std::string image_of(const J& v) {
  if (v.is_string()) return decode_image_url(v.get<std::string>());
  if (v.is_object()) {
    if (const J* u = field(v, "url"); u && u->is_string())
      return decode_image_url(u->get<std::string>());
  }
  throw HttpError(400, "invalid image input");
}

// Tool arguments arrive as a JSON string in OpenAI's API and are an object natively.
J parse_arguments(const J& args) {
  if (args.is_object()) return args;
  if (!args.is_string()) throw HttpError(400, "invalid tool call arguments");
  const auto& text = args.get_ref<const std::string&>();
  J parsed = J::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw HttpError(400, "invalid tool call arguments");
  }
  return parsed;
}

std::string role_of(const J& m) {
  std::string role = lower(string_of(m, "role").value_or(""));
  return role == "developer" ? "system" : role;
}

// Records each assistant tool call's name by id, for tool results that name only the id.
struct ToolNames {
  std::map<std::string, std::string> by_id;
  void remember(const prompt::ToolCall& c) {
    if (!c.id.empty()) by_id[c.id] = c.name;
  }
  std::string lookup(const std::string& id) const {
    auto it = by_id.find(id);
    return it == by_id.end() ? "" : it->second;
  }
};

prompt::ToolCall chat_tool_call(const J& j, int index) {
  if (!j.is_object()) throw HttpError(400, "invalid tool call");
  prompt::ToolCall c;
  c.id = string_of(j, "id").value_or("");
  c.index = static_cast<int>(int_of(j, "index").value_or(index));
  const J* fn = field(j, "function");
  if (!fn || !fn->is_object()) throw HttpError(400, "invalid tool call");
  c.name = string_of(*fn, "name").value_or("");
  if (const J* a = field(*fn, "arguments")) c.arguments = parse_arguments(*a);
  return c;
}

// One OpenAI chat message becomes one or more native messages (compat §2.1): each text part and
// each image part is a message of its own with the same role.
void append_chat_message(const J& m, std::vector<prompt::Message>& out, ToolNames& names) {
  if (!m.is_object()) throw HttpError(400, "invalid message format");
  const std::string role = role_of(m);
  const J* content = field(m, "content");
  const J* calls = field(m, "tool_calls");
  const size_t first = out.size();
  auto blank = [&role] {
    prompt::Message msg;
    msg.role = role;
    return msg;
  };
  if (!content) {
    if (!calls) throw HttpError(400, "invalid message content type: <nil>");
    out.push_back(blank());
  } else if (content->is_string()) {
    prompt::Message msg = blank();
    msg.content = content->get<std::string>();
    out.push_back(std::move(msg));
  } else if (content->is_array()) {
    for (const auto& part : *content) {
      if (!part.is_object()) throw HttpError(400, "invalid message format");
      const std::string type = string_of(part, "type").value_or("");
      prompt::Message msg = blank();
      if (type == "text") {
        msg.content = string_of(part, "text").value_or("");
      } else if (type == "image_url") {
        const J* img = field(part, "image_url");
        if (!img) throw HttpError(400, "invalid image input");
        msg.images.push_back(image_of(*img));
      } else if (type == "input_audio") {
        const J* audio = field(part, "input_audio");
        if (!audio || !audio->is_object()) throw HttpError(400, "invalid message format");
        msg.images.push_back(decode_base64(string_of(*audio, "data").value_or("")));
      } else {
        throw HttpError(400, "invalid message format");
      }
      out.push_back(std::move(msg));
    }
    if (out.size() == first) out.push_back(blank());
  } else {
    throw HttpError(400, "invalid message content type: " + go_type(*content));
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
  const J* tools = field(body, "tools");
  if (!tools) return J();
  if (!tools->is_array()) bad_type("tools", "an array", *tools);
  return *tools;
}

// tool_choice "none" means the model may not call tools: it never sees them. A named function
// narrows the tools to that one; "auto" and "required" leave them as they are.
J apply_tool_choice(const J& body, J tools) {
  const J* choice = field(body, "tool_choice");
  if (!choice || !tools.is_array()) return tools;
  if (choice->is_string() && choice->get<std::string>() == "none") return J();
  if (choice->is_object()) {
    std::string wanted;
    if (const J* fn = field(*choice, "function"); fn && fn->is_object()) {
      wanted = string_of(*fn, "name").value_or("");
    } else {
      wanted = string_of(*choice, "name").value_or("");
    }
    if (wanted.empty()) return tools;
    J kept = J::array();
    for (const auto& t : tools) {
      const J* fn = field(t, "function");
      const J* n = fn ? field(*fn, "name") : nullptr;
      if (n && n->is_string() && n->get<std::string>() == wanted) kept.push_back(t);
    }
    return kept;
  }
  return tools;
}

}  // namespace

J parse_openai_body(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw HttpError(400, "missing request body");
  }
  J j = J::parse(body, nullptr, false);
  if (j.is_discarded()) throw HttpError(400, "invalid JSON in request body");
  if (!j.is_object()) throw HttpError(400, "request body must be a JSON object");
  return j;
}

OpenAiRequest parse_chat_completion_request(const J& body) {
  OpenAiRequest out;
  auto& r = out.request;
  r.kind = sched::GenerationRequest::Kind::chat;
  // OpenAI's newer name wins over the deprecated one when both are sent.
  parse_common(body, out, "max_tokens");
  default_top_p(body, r.options);
  if (auto n = int_of(body, "max_completion_tokens")) r.options["num_predict"] = *n;
  parse_stop(body, out, false);
  const J* messages = field(body, "messages");
  if (!messages) throw HttpError(400, "'messages' is a required property");
  if (!messages->is_array()) bad_type("messages", "an array", *messages);
  if (messages->empty()) throw HttpError(400, "[] is too short - 'messages'");
  ToolNames names;
  for (const auto& m : *messages) append_chat_message(m, r.chat.messages, names);
  r.chat.tools = apply_tool_choice(body, tools_of(body));
  parse_think_fields(body, r.chat.think);
  if (const J* rf = field(body, "response_format")) {
    if (!rf->is_object()) bad_type("response_format", "an object", *rf);
    const std::string type = string_of(*rf, "type").value_or("");
    if (type == "json_object") {
      r.format = "json";
    } else if (type == "json_schema") {
      const J* js = field(*rf, "json_schema");
      const J* schema = js ? field(*js, "schema") : nullptr;
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
  if (const J* f = field(body, "format")) r.format = *f;  // Ollama's own field, if sent
  return out;
}

OpenAiRequest parse_completion_request(const J& body) {
  OpenAiRequest out;
  auto& r = out.request;
  r.kind = sched::GenerationRequest::Kind::generate;
  parse_common(body, out, "max_tokens");
  // /v1/completions treats top_p 0 as absent (compat §2.2).
  if (const J* p = field(body, "top_p"); p && p->get<double>() == 0) r.options["top_p"] = 1.0;
  default_top_p(body, r.options);
  parse_stop(body, out, true);
  if (const J* p = field(body, "prompt")) {
    if (p->is_string()) {
      r.generate.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.generate.prompt = (*p)[0].get<std::string>();
    } else {
      throw HttpError(400, "invalid type for 'prompt' field: " + go_type(*p));
    }
  }
  r.generate.suffix = string_of(body, "suffix").value_or("");
  // logprobs: N alternatives per token (0 or absent: none).
  if (auto n = int_of(body, "logprobs"); n && *n > 0) {
    if (*n > 20) throw HttpError(400, "logprobs must be between 0 and 20");
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(*n);
  }
  return out;
}

namespace {

// Text of a responses content value: a string, or parts whose text is joined.
std::string response_text(const J& content, std::vector<std::string>* images) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw HttpError(400, "invalid type for 'content': " + go_type(content));
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object()) throw HttpError(400, "invalid content part");
    const std::string type = string_of(part, "type").value_or("");
    if (type == "input_text" || type == "output_text" || type == "text") {
      text += string_of(part, "text").value_or("");
    } else if (type == "input_image" && images) {
      const J* img = field(part, "image_url");
      if (!img) throw HttpError(400, "invalid image input");
      images->push_back(image_of(*img));
    } else if (type == "input_file") {
      throw HttpError(400, "file inputs are not currently supported");
    } else if (type == "refusal") {
      text += string_of(part, "refusal").value_or("");
    } else {
      throw HttpError(400, "invalid content part type: " + type);
    }
  }
  return text;
}

// Responses tools are flat ({"type":"function","name",...}); the native shape nests
// "function". Namespaces expand to "namespace.function"; server-side tools are not offered.
void add_response_tool(const J& t, const std::string& prefix, J& out) {
  if (!t.is_object()) throw HttpError(400, "invalid tool");
  const std::string type = string_of(t, "type").value_or("function");
  if (type == "function") {
    J fn;
    fn["name"] = prefix + string_of(t, "name").value_or("");
    if (const J* d = field(t, "description")) fn["description"] = *d;
    if (const J* p = field(t, "parameters")) fn["parameters"] = *p;
    out.push_back(J{{"type", "function"}, {"function", std::move(fn)}});
  } else if (type == "namespace") {
    const std::string name = string_of(t, "name").value_or("");
    if (const J* inner = field(t, "tools"); inner && inner->is_array()) {
      for (const auto& i : *inner) add_response_tool(i, prefix + name + ".", out);
    }
  }
}

}  // namespace

OpenAiRequest parse_responses_request(const J& body) {
  OpenAiRequest out;
  auto& r = out.request;
  r.kind = sched::GenerationRequest::Kind::chat;
  parse_common(body, out, "max_output_tokens");
  auto& msgs = r.chat.messages;
  if (auto ins = string_of(body, "instructions"); ins && !ins->empty()) {
    msgs.push_back({"system", *ins, {}, {}, {}, {}, {}});
  }
  ToolNames names;
  std::string pending_thinking;
  bool last_was_call = false;
  const J* input = field(body, "input");
  if (input && input->is_string()) {
    msgs.push_back({"user", input->get<std::string>(), {}, {}, {}, {}, {}});
  } else if (input && input->is_array()) {
    for (const auto& item : *input) {
      if (!item.is_object()) throw HttpError(400, "invalid input item");
      std::string type = string_of(item, "type").value_or("");
      if (type.empty() && field(item, "role")) type = "message";
      bool call = false;
      if (type == "message") {
        prompt::Message m;
        m.role = role_of(item);
        if (const J* c = field(item, "content")) m.content = response_text(*c, &m.images);
        if (m.role == "assistant") m.thinking = std::exchange(pending_thinking, "");
        msgs.push_back(std::move(m));
      } else if (type == "function_call") {
        prompt::ToolCall c;
        c.id = string_of(item, "call_id").value_or("");
        c.name = string_of(item, "name").value_or("");
        if (const J* a = field(item, "arguments")) c.arguments = parse_arguments(*a);
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
        if (const J* o = field(item, "output")) m.content = response_text(*o, nullptr);
        msgs.push_back(std::move(m));
      } else if (type == "reasoning") {
        if (auto enc = string_of(item, "encrypted_content"); enc && !enc->empty()) {
          pending_thinking = *enc;
        } else if (const J* s = field(item, "summary"); s && s->is_array()) {
          pending_thinking.clear();
          for (const auto& part : *s) pending_thinking += string_of(part, "text").value_or("");
        }
      } else if (type != "web_search_call") {
        throw HttpError(400, "unexpected input item type: " + type);
      }
      last_was_call = call;
    }
  } else if (input) {
    throw HttpError(400, "invalid type for 'input': " + go_type(*input));
  }
  if (msgs.empty()) throw HttpError(400, "'input' is required");

  J tools = J();
  if (const J* ts = field(body, "tools")) {
    if (!ts->is_array()) bad_type("tools", "an array", *ts);
    tools = J::array();
    for (const auto& t : *ts) add_response_tool(t, "", tools);
  }
  r.chat.tools = apply_tool_choice(body, std::move(tools));
  parse_think_fields(body, r.chat.think);
  J text_format = J{{"type", "text"}};
  if (const J* text = field(body, "text")) {
    if (!text->is_object()) bad_type("text", "an object", *text);
    if (const J* f = field(*text, "format")) {
      if (!f->is_object()) bad_type("text.format", "an object", *f);
      text_format = *f;
      const std::string type = string_of(*f, "type").value_or("");
      if (type == "json_schema") {
        const J* schema = field(*f, "schema");
        r.format = schema ? *schema : J("json");
      } else if (type == "json_object") {
        r.format = "json";
      }
    }
  }
  parse_top_logprobs(body, r);
  if (const J* inc = field(body, "include"); inc && inc->is_array()) {
    for (const auto& i : *inc) r.logprobs |= i == "message.output_text.logprobs";
  }
  auto& echo = out.echo;
  echo["instructions"] = field(body, "instructions") ? *field(body, "instructions") : J();
  echo["tools"] = field(body, "tools") ? *field(body, "tools") : J::array();
  echo["tool_choice"] = field(body, "tool_choice") ? *field(body, "tool_choice") : J("auto");
  echo["truncation"] = field(body, "truncation") ? *field(body, "truncation") : J("disabled");
  echo["parallel_tool_calls"] = bool_of(body, "parallel_tool_calls").value_or(true);
  echo["text"] = J{{"format", text_format}};
  echo["top_p"] = r.options.contains("top_p") ? r.options["top_p"] : J(1.0);
  echo["temperature"] = r.options["temperature"];
  echo["top_logprobs"] = r.top_logprobs;
  echo["reasoning"] = field(body, "reasoning") ? *field(body, "reasoning") : J();
  echo["max_output_tokens"] =
      field(body, "max_output_tokens") ? *field(body, "max_output_tokens") : J();
  echo["metadata"] = field(body, "metadata") ? *field(body, "metadata") : J::object();
  return out;
}

}  // namespace vkllm::api
