// Ollama's gemma4 renderer (model/renderers/gemma4.go), written from its behaviour: <|turn>ROLE
// turns closed by <turn|>, a system turn for a leading system/developer message, the tools or
// thinking (<|think|>), tools declared in Gemma 4's own notation (bare keys, <|"|> string quotes,
// upper-case types, keys sorted), past calls as <|tool_call>call:NAME{k:v}<tool_call|> followed by
// their results as <|tool_response>response:NAME{value:...}<tool_response|> inside the same model
// turn, thinking shown only for answers after the last user message, and a model turn opened for
// the reply unless the conversation ends in tool results (then, when thinking, the thought
// channel is opened instead).
#include <algorithm>
#include <string>
#include <vector>

#include "server/prompt/builtin_renderers.h"
#include "server/prompt/go_space.h"
#include "server/prompt/go_value.h"
#include "server/prompt/template_data.h"

namespace vkllm::prompt {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kG4Q = "<|\"|>";  // Gemma 4's string delimiter

// A non-empty JSON string.
bool g4_is_text(const ojson& v) {
  return v.is_string() && !v.get_ref<const std::string&>().empty();
}

std::string g4_quoted(std::string_view s) {
  return std::string(kG4Q) + std::string(s) + std::string(kG4Q);
}

std::string g4_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> g4_sorted_keys(const ojson& m) {
  std::vector<std::string> keys;
  for (auto it = m.begin(); it != m.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  return keys;
}

const ojson* g4_field(const ojson& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// A JSON number as Go prints a float64 that came from JSON: integral values as %d, others %v.
std::string g4_number_text(const ojson& v) {
  if (v.is_number_integer()) return v.dump();
  const double d = v.get<double>();
  if (d == static_cast<double>(static_cast<int64_t>(d)))
    return std::to_string(static_cast<int64_t>(d));
  return go_format_float(d);
}

// A tool-call argument value (formatArgValue): strings g4_quoted, maps with bare sorted keys.
std::string g4_arg_value(const ojson& v) {
  if (v.is_null()) return "null";
  if (v.is_string()) return g4_quoted(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return g4_number_text(v);
  std::string out;
  if (v.is_object()) {
    out = "{";
    bool first = true;
    for (const auto& k : g4_sorted_keys(v)) {
      if (!first) out += ",";
      first = false;
      out += k + ":" + g4_arg_value(v.at(k));
    }
    return out + "}";
  }
  out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + g4_arg_value(v[i]);
  return out + "]";
}

// A schema value outside the known keys (formatSchemaValue): as g4_arg_value, but map keys quoted.
std::string g4_schema_value(const ojson& v) {
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& k : g4_sorted_keys(v)) {
      if (!first) out += ",";
      first = false;
      out += g4_quoted(k) + ":" + g4_schema_value(v.at(k));
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + g4_schema_value(v[i]);
    return out + "]";
  }
  return g4_arg_value(v);
}

std::vector<std::string> g4_type_names(const ojson* t) {
  std::vector<std::string> out;
  if (!t) return out;
  if (t->is_string()) out.push_back(g4_upper(t->get<std::string>()));
  if (t->is_array())
    for (const auto& e : *t)
      if (e.is_string()) out.push_back(g4_upper(e.get<std::string>()));
  return out;
}

std::string g4_string_list(const ojson* v) {
  std::string out = "[";
  bool first = true;
  if (v && v->is_array())
    for (const auto& e : *v)
      if (e.is_string()) {
        out += (first ? "" : ",") + g4_quoted(e.get<std::string>());
        first = false;
      }
  return out + "]";
}

std::string g4_types_text(const std::vector<std::string>& names) {
  if (names.size() == 1) return "type:" + g4_quoted(names[0]);
  std::string out = "type:[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? "," : "") + g4_quoted(names[i]);
  return out + "]";
}

bool g4_standard_key(std::string_view k) {
  return k == "description" || k == "type" || k == "properties" || k == "required" ||
         k == "nullable";
}

std::string g4_schema_properties(const ojson& props);

// An array's items (writeSchemaItemsSpec): every key in sorted order, nulls skipped.
std::string g4_items_spec(const ojson& items) {
  std::string out;
  bool first = true;
  for (const auto& key : g4_sorted_keys(items)) {
    const ojson& v = items.at(key);
    if (v.is_null()) continue;
    if (!first) out += ",";
    first = false;
    if (key == "properties") {
      out += "properties:{" + (v.is_object() ? g4_schema_properties(v) : "") + "}";
    } else if (key == "required") {
      out += "required:" + g4_string_list(&v);
    } else if (key == "type") {
      const auto names = g4_type_names(&v);
      if (!names.empty()) out += g4_types_text(names);
    } else {
      out += key + ":" + g4_schema_value(v);
    }
  }
  return out;
}

// Properties in sorted order (writeSchemaProperties); names that are schema keywords are skipped.
std::string g4_schema_properties(const ojson& props) {
  std::string out;
  bool first = true;
  for (const auto& name : g4_sorted_keys(props)) {
    const ojson& prop = props.at(name);
    if (g4_standard_key(name) || !prop.is_object()) continue;
    if (!first) out += ",";
    first = false;
    out += name + ":{";
    bool comma = false;
    auto sep = [&] {
      if (comma) out += ",";
      comma = true;
    };
    if (const ojson* d = g4_field(prop, "description"); d && g4_is_text(*d)) {
      sep();
      out += "description:" + g4_quoted(d->get<std::string>());
    }
    const auto names = g4_type_names(g4_field(prop, "type"));
    const std::string type = names.empty() ? "" : names[0];
    if (type == "STRING") {
      if (const ojson* e = g4_field(prop, "enum"); e && e->is_array() && !e->empty()) {
        sep();
        out += "enum:[";
        for (size_t i = 0; i < e->size(); ++i)
          out += (i ? "," : "") + g4_quoted(go_sprint_value(json_to_value((*e)[i])));
        out += "]";
      }
    } else if (type == "ARRAY") {
      if (const ojson* it = g4_field(prop, "items"); it && it->is_object() && !it->empty()) {
        sep();
        out += "items:{" + g4_items_spec(*it) + "}";
      }
    }
    if (const ojson* n = g4_field(prop, "nullable"); n && n->is_boolean() && n->get<bool>()) {
      sep();
      out += "nullable:true";
    }
    if (type == "OBJECT") {
      sep();
      const ojson* nested = g4_field(prop, "properties");
      // Without a properties map, the property's own non-keyword entries stand for it.
      out += "properties:{" + g4_schema_properties(nested && nested->is_object() ? *nested : prop) +
             "}";
      if (const ojson* r = g4_field(prop, "required"); r && r->is_array() && !r->empty()) {
        sep();
        out += "required:" + g4_string_list(r);
      }
    }
    if (!names.empty()) {
      if (comma) out += ",";
      out += g4_types_text(names);
    }
    out += "}";
  }
  return out;
}

// A property as Ollama's api.ToolProperty keeps it (type, anyOf, items, description, enum,
// properties, required; other keys dropped), with a type union written as the template's odd
// "['A', 'B']" string and an anyOf of bare types lowered to such a union.
ojson g4_typed_property(const ojson& raw);

ojson g4_typed_properties(const ojson& props) {
  ojson out = ojson::object();
  for (auto it = props.begin(); it != props.end(); ++it)
    out[it.key()] = g4_typed_property(it.value());
  return out;
}

std::vector<std::string> g4_raw_types(const ojson& p) {
  std::vector<std::string> out;
  if (const ojson* t = g4_field(p, "type")) {
    if (t->is_string()) out.push_back(t->get<std::string>());
    if (t->is_array())
      for (const auto& e : *t)
        if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

// simpleAnyOfTypes: the union of anyOf branches that carry nothing but a type.
std::vector<std::string> g4_any_of_types(const ojson& p) {
  std::vector<std::string> out;
  const ojson* any = g4_field(p, "anyOf");
  if (!any || !any->is_array()) return out;
  for (const auto& b : *any) {
    const auto types = g4_raw_types(b);
    if (types.empty()) return {};
    for (const char* k : {"anyOf", "items", "properties"})
      if (g4_field(b, k)) return {};
    if (const ojson* d = g4_field(b, "description"); d && g4_is_text(*d)) return {};
    for (const char* k : {"enum", "required"})
      if (const ojson* v = g4_field(b, k); v && v->is_array() && !v->empty()) return {};
    for (const auto& t : types)
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

ojson g4_typed_property(const ojson& raw) {
  ojson out = ojson::object();
  std::vector<std::string> types = g4_raw_types(raw);
  if (types.empty()) types = g4_any_of_types(raw);
  if (types.size() == 1) {
    out["type"] = types[0];
  } else if (types.size() > 1) {
    std::string t = "[";
    for (size_t i = 0; i < types.size(); ++i) t += (i ? ", '" : "'") + g4_upper(types[i]) + "'";
    out["type"] = t + "]";
  }
  if (const ojson* d = g4_field(raw, "description"); d && g4_is_text(*d)) out["description"] = *d;
  if (const ojson* e = g4_field(raw, "enum"); e && e->is_array() && !e->empty()) out["enum"] = *e;
  if (const ojson* i = g4_field(raw, "items")) out["items"] = *i;
  if (const ojson* p = g4_field(raw, "properties"); p && p->is_object())
    out["properties"] = g4_typed_properties(*p);
  if (const ojson* r = g4_field(raw, "required"); r && r->is_array() && !r->empty())
    out["required"] = *r;
  return out;
}

std::string g4_tool_declaration(const ojson& tool) {
  const ojson empty = ojson::object();
  const ojson* fn = g4_field(tool, "function");
  if (!fn) fn = &empty;
  auto str = [](const ojson& j, const char* k) {
    const ojson* v = g4_field(j, k);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };
  std::string out = "<|tool>declaration:" + str(*fn, "name") + "{";
  out += "description:" + g4_quoted(str(*fn, "description"));
  const ojson* params = g4_field(*fn, "parameters");
  if (!params) params = &empty;
  const ojson* props = g4_field(*params, "properties");
  const std::string type = str(*params, "type");
  if ((props && props->is_object()) || !type.empty()) {
    out += ",parameters:{";
    bool comma = false;
    if (props && props->is_object() && !props->empty()) {
      out += "properties:{" + g4_schema_properties(g4_typed_properties(*props)) + "}";
      comma = true;
    }
    if (const ojson* r = g4_field(*params, "required"); r && r->is_array() && !r->empty()) {
      out += std::string(comma ? "," : "") + "required:" + g4_string_list(r);
      comma = true;
    }
    if (!type.empty()) out += std::string(comma ? "," : "") + "type:" + g4_quoted(g4_upper(type));
    out += "}";
  }
  return out + "}<tool|>";
}

std::string g4_tool_call_text(const ToolCall& c) {
  std::string out = "<|tool_call>call:" + c.name + "{";
  if (c.arguments.is_object()) {
    bool first = true;
    for (const auto& k : g4_sorted_keys(c.arguments)) {
      if (!first) out += ",";
      first = false;
      out += k + ":" + g4_arg_value(c.arguments.at(k));
    }
  }
  return out + "}<tool_call|>";
}

// The HF template's strip_thinking: <|channel>...<channel|> blocks cut out (an unclosed one runs
// to the end), the rest trimmed.
std::string g4_strip_thinking(std::string_view text) {
  std::string out;
  while (true) {
    const size_t start = text.find("<|channel>");
    if (start == std::string_view::npos) {
      out += text;
      break;
    }
    out += text.substr(0, start);
    const size_t end = text.find("<channel|>", start);
    if (end == std::string_view::npos) break;
    text = text.substr(end + std::string_view("<channel|>").size());
  }
  return go_trim_space(out);
}

struct Gemma4ImageTags {
  const std::vector<Message>& all;
  std::vector<ImageRef>* refs;
  size_t next_image = 0;

  // The message's text with [img-N] tags for its images (recorded in tag order).
  std::string content(size_t index, std::string text) {
    const Message& m = all[index];
    if (m.images.empty()) return text;
    const size_t first = next_image;
    std::string out = content_with_image_tags(std::move(text), m.images.size(), next_image);
    if (refs)
      for (size_t i = 0; i < next_image - first; ++i) refs->push_back({index, i});
    return out;
  }
};

}  // namespace

std::string render_gemma4(const std::vector<Message>& messages, const ojson& tools,
                          const Think& think, bool large, std::vector<ImageRef>* images) {
  Gemma4ImageTags w{messages, images};
  std::string out;
  const bool has_system =
      !messages.empty() && (messages[0].role == "system" || messages[0].role == "developer");
  const size_t begin = has_system ? 1 : 0;
  const bool has_tools = tools.is_array() && !tools.empty();
  const bool thinking = think.set && think.enabled;
  if (has_system || has_tools || thinking) {
    out += "<|turn>system\n";
    if (thinking) out += "<|think|>\n";
    if (has_system) out += go_trim_space(messages[0].content);
    if (has_tools)
      for (const auto& t : tools) out += g4_tool_declaration(t);
    out += "<turn|>\n";
  }

  size_t last_user = SIZE_MAX;
  for (size_t i = begin; i < messages.size(); ++i)
    if (messages[i].role == "user") last_user = i;
  auto next_non_tool_role = [&](size_t i) -> std::string {
    for (size_t k = i + 1; k < messages.size(); ++k)
      if (messages[k].role != "tool") return messages[k].role;
    return "";
  };

  std::string prev_type, prev_role;
  for (size_t i = begin; i < messages.size(); ++i) {
    const Message& m = messages[i];
    if (m.role == "tool") continue;
    prev_type.clear();
    const std::string role = m.role == "assistant" ? "model" : m.role;
    // Adjacent assistant messages continue one model turn.
    if (!(role == "model" && prev_role == "assistant")) out += "<|turn>" + role + "\n";
    if (m.role == "assistant" && !m.thinking.empty() && (last_user == SIZE_MAX || i > last_user))
      out += "<|channel>thought\n" + m.thinking + "\n<channel|>";
    for (const auto& c : m.tool_calls) out += g4_tool_call_text(c);
    if (!m.tool_calls.empty()) prev_type = "tool_call";

    // A call's results follow it in the same turn, named by the call they answer.
    bool responses = false;
    if (!m.tool_calls.empty()) {
      for (size_t k = i + 1; k < messages.size() && messages[k].role == "tool"; ++k) {
        const Message& t = messages[k];
        std::string name = t.tool_name.empty() ? "unknown" : t.tool_name;
        if (!t.tool_call_id.empty())
          for (const auto& c : m.tool_calls)
            if (c.id == t.tool_call_id) {
              name = c.name;
              break;
            }
        out += "<|tool_response>response:" + name +
               "{value:" + g4_arg_value(w.content(k, t.content)) + "}<tool_response|>";
        responses = true;
        prev_type = "tool_response";
      }
    }

    bool had_content = false;
    if (role == "model") {
      if (!m.content.empty() || !m.images.empty()) {
        const std::string text = g4_strip_thinking(m.content);
        out += w.content(i, text);
        had_content = !text.empty() || !m.images.empty();
      }
    } else {
      const std::string text = go_trim_space(m.content);
      out += w.content(i, text);
      had_content = !text.empty() || !m.images.empty();
    }

    const std::string next_role = next_non_tool_role(i);
    const bool continues =
        role == "model" && next_role == "assistant" && (m.tool_calls.empty() || responses);
    if (prev_type == "tool_call" && !responses) {
      out += "<|tool_response>";
    } else if (!continues && !(responses && !had_content && next_role.empty())) {
      out += "<turn|>\n";
    }
    prev_role = m.role;
  }

  if (prev_type != "tool_response" && prev_type != "tool_call") {
    out += "<|turn>model\n";
    if (large && !thinking) out += "<|channel>thought\n<channel|>";
  } else if (prev_type == "tool_response" && thinking) {
    out += "<|channel>thought\n";
  }
  return out;
}

}  // namespace vkllm::prompt
