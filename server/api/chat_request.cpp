#include "server/api/chat_request.h"

#include <algorithm>
#include <cctype>

#include "server/api/json_request.h"
#include "server/http/exchange.h"

namespace vkllm::api {

using http::StatusError;

namespace {

template <class Json>
const char* json_kind(const Json& j) {
  if (j.is_number()) return "number";
  if (j.is_string()) return "string";
  if (j.is_boolean()) return "bool";
  if (j.is_array()) return "array";
  return "object";
}

template <class Json>
[[noreturn]] void type_error(const Json& j, const std::string& path, const char* go_type) {
  throw StatusError(400, std::string("json: cannot unmarshal ") + json_kind(j) +
                             " into Go struct field " + path + " of type " + go_type);
}

template <class Json>
std::string str(const Json& obj, std::string_view key, const std::string& path) {
  const Json* v = find_field(obj, key);
  if (!v) return "";
  if (!v->is_string()) type_error(*v, path + "." + std::string(key), "string");
  return v->template get<std::string>();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

template <class Json>
nlohmann::ordered_json to_ordered(const Json& j) {
  if constexpr (std::is_same_v<Json, nlohmann::ordered_json>) {
    return j;
  } else {
    return nlohmann::ordered_json::parse(j.dump());
  }
}

template <class Json>
std::vector<std::string> images(const Json* arr, const std::string& path) {
  std::vector<std::string> out;
  if (!arr) return out;
  if (!arr->is_array()) type_error(*arr, path, "[]api.ImageData");
  for (const auto& img : *arr) {
    if (!img.is_string()) type_error(img, path, "api.ImageData");
    out.push_back(decode_base64(img.template get_ref<const std::string&>()));
  }
  return out;
}

}  // namespace

std::string decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  auto bad = [](size_t at) -> StatusError {
    return StatusError(400, "illegal base64 data at input byte " + std::to_string(at));
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int n = 0, pad = 0;
  size_t quantum_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\r' || c == '\n') continue;
    if (pad > 0 && c != '=') throw bad(i);
    if (c == '=') {
      if (n < 2) throw bad(i);
      ++pad;
      ++n;
      acc <<= 6;
      if (pad > 2) throw bad(i);
    } else {
      int v = value(c);
      if (v < 0) throw bad(i);
      acc = (acc << 6) | static_cast<uint32_t>(v);
      ++n;
    }
    if (n == 1) quantum_start = i;
    if (n == 4) {
      out += static_cast<char>((acc >> 16) & 0xFF);
      if (pad < 2) out += static_cast<char>((acc >> 8) & 0xFF);
      if (pad < 1) out += static_cast<char>(acc & 0xFF);
      acc = 0;
      n = 0;
      if (pad > 0) {
        // Only line breaks may follow the padding.
        for (size_t k = i + 1; k < text.size(); ++k)
          if (text[k] != '\r' && text[k] != '\n') throw bad(k);
        return out;
      }
    }
  }
  if (n != 0) throw bad(quantum_start);  // an unpadded or truncated last quantum
  return out;
}

template <class Json>
prompt::ToolCall parse_tool_call(const Json& j, int default_index) {
  const std::string path = "ChatRequest.messages.tool_calls";
  if (!j.is_object()) type_error(j, path, "api.ToolCall");
  prompt::ToolCall c;
  c.id = str(j, "id", path);
  c.index = default_index;
  if (const Json* fn = find_field(j, "function")) {
    if (!fn->is_object()) type_error(*fn, path + ".function", "api.ToolCallFunction");
    c.name = str(*fn, "name", path + ".function");
    if (const Json* idx = find_field(*fn, "index")) {
      if (!idx->is_number_integer()) type_error(*idx, path + ".function.index", "int");
      c.index = idx->template get<int>();
    }
    if (const Json* args = find_field(*fn, "arguments")) {
      if (!args->is_object())
        type_error(*args, path + ".function.arguments", "api.ToolCallFunctionArguments");
      c.arguments = to_ordered(*args);
    }
  }
  return c;
}

template <class Json>
prompt::Message parse_message(const Json& j) {
  const std::string path = "ChatRequest.messages";
  if (!j.is_object()) type_error(j, path, "api.Message");
  prompt::Message m;
  m.role = lower(str(j, "role", path));
  m.content = str(j, "content", path);
  m.thinking = str(j, "thinking", path);
  m.images = images(find_field(j, "images"), path + ".images");
  if (const Json* calls = find_field(j, "tool_calls")) {
    if (!calls->is_array()) type_error(*calls, path + ".tool_calls", "[]api.ToolCall");
    int i = 0;
    for (const auto& c : *calls) m.tool_calls.push_back(parse_tool_call(c, i++));
  }
  m.tool_name = str(j, "tool_name", path);
  m.tool_call_id = str(j, "tool_call_id", path);
  return m;
}

template <class Json>
std::vector<prompt::Message> parse_messages(const Json& array) {
  std::vector<prompt::Message> out;
  if (array.is_null()) return out;
  if (!array.is_array()) type_error(array, "ChatRequest.messages", "[]api.Message");
  for (const auto& m : array) out.push_back(parse_message(m));
  return out;
}

template <class Json>
prompt::Think parse_think(const Json* think) {
  prompt::Think t;
  if (!think || think->is_null()) return t;
  if (think->is_boolean()) {
    t.set = true;
    t.enabled = think->template get<bool>();
    t.level = t.enabled ? "medium" : "";
  } else if (think->is_string()) {
    const auto& level = think->template get_ref<const std::string&>();
    if (level != "high" && level != "medium" && level != "low" && level != "max") {
      throw StatusError(400,
                        "invalid think value: " + nlohmann::json(level).dump() +
                            " (must be \"high\", \"medium\", \"low\", \"max\", true, or false)");
    }
    t.set = true;
    t.enabled = true;
    t.level = level;
  } else {
    throw StatusError(400, "think must be a boolean or string");
  }
  return t;
}

template <class Json>
prompt::ChatInput chat_input(const Json& body) {
  prompt::ChatInput in;
  if (const Json* m = find_field(body, "messages")) in.messages = parse_messages(*m);
  if (const Json* tools = find_field(body, "tools")) {
    if (!tools->is_array()) type_error(*tools, "ChatRequest.tools", "api.Tools");
    in.tools = to_ordered(*tools);
  }
  in.think = parse_think(find_field(body, "think"));
  if (const Json* t = find_field(body, "truncate")) {
    if (!t->is_boolean()) type_error(*t, "ChatRequest.truncate", "bool");
    in.truncate = t->template get<bool>();
  }
  return in;
}

template <class Json>
prompt::GenerateInput generate_input(const Json& body) {
  const std::string path = "GenerateRequest";
  prompt::GenerateInput in;
  in.prompt = str(body, "prompt", path);
  in.suffix = str(body, "suffix", path);
  // Go handlers test these for "", so an empty string means absent.
  if (std::string s = str(body, "system", path); !s.empty()) in.system = s;
  if (std::string t = str(body, "template", path); !t.empty()) in.template_override = t;
  in.images = images(find_field(body, "images"), path + ".images");
  in.has_context = find_field(body, "context") != nullptr;
  if (const Json* t = find_field(body, "truncate")) {
    if (!t->is_boolean()) type_error(*t, path + ".truncate", "bool");
    in.truncate = t->template get<bool>();
  }
  in.think = parse_think(find_field(body, "think"));
  return in;
}

#define VKLLM_CHAT_REQUEST(J)                                        \
  template prompt::Message parse_message<J>(const J&);               \
  template std::vector<prompt::Message> parse_messages<J>(const J&); \
  template prompt::ToolCall parse_tool_call<J>(const J&, int);       \
  template prompt::Think parse_think<J>(const J*);                   \
  template prompt::ChatInput chat_input<J>(const J&);                \
  template prompt::GenerateInput generate_input<J>(const J&);
VKLLM_CHAT_REQUEST(nlohmann::json)
VKLLM_CHAT_REQUEST(nlohmann::ordered_json)
#undef VKLLM_CHAT_REQUEST

}  // namespace vkllm::api
