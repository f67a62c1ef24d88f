#include "server/prompt/template_data.h"

namespace vkllm::prompt {

using ojson = nlohmann::ordered_json;

Value json_to_value(const ojson& j) {
  switch (j.type()) {
    case ojson::value_t::null:
      return Value();
    case ojson::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case ojson::value_t::number_integer:
      return Value::floating(static_cast<double>(j.get<int64_t>()));
    case ojson::value_t::number_unsigned:
      return Value::floating(static_cast<double>(j.get<uint64_t>()));
    case ojson::value_t::number_float:
      return Value::floating(j.get<double>());
    case ojson::value_t::string:
      return Value::string(j.get<std::string>());
    case ojson::value_t::array: {
      Value::List l;
      for (const auto& e : j) l.push_back(json_to_value(e));
      return Value::list(std::move(l));
    }
    case ojson::value_t::object: {
      Value::Map m;
      for (auto it = j.begin(); it != j.end(); ++it) m[it.key()] = json_to_value(it.value());
      return Value::map(std::move(m));
    }
    default:
      return Value();
  }
}

std::string go_json_ordered(const ojson& j) {
  switch (j.type()) {
    case ojson::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < j.size(); ++i) {
        if (i) out += ',';
        out += go_json_ordered(j[i]);
      }
      return out + "]";
    }
    case ojson::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += ',';
        first = false;
        out += go_json_string(it.key()) + ":" + go_json_ordered(it.value());
      }
      return out + "}";
    }
    case ojson::value_t::number_integer:
      return std::to_string(j.get<int64_t>());
    case ojson::value_t::number_unsigned:
      return std::to_string(j.get<uint64_t>());
    default:
      return go_json(json_to_value(j));
  }
}

namespace {

// Fields of a Go struct encoded with encoding/json tags, in declaration order.
struct JsonObject {
  std::string out = "{";
  void add(const std::string& key, const std::string& json) {
    if (out.size() > 1) out += ',';
    out += go_json_string(key) + ":" + json;
  }
  std::string done() { return out + "}"; }
};

const ojson* member(const ojson& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string str(const ojson& j, const char* key) {
  const ojson* v = member(j, key);
  return v && v->is_string() ? v->get<std::string>() : "";
}

std::vector<std::string> strings(const ojson& j, const char* key) {
  std::vector<std::string> out;
  const ojson* v = member(j, key);
  if (v && v->is_array())
    for (const auto& e : *v)
      if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

Value string_list(const std::vector<std::string>& v) {
  Value::List l;
  for (const auto& s : v) l.push_back(Value::string(s));
  return Value::list(std::move(l));
}

std::string string_list_json(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += go_json_string(v[i]);
  }
  return out + "]";
}

Value properties_value(const ojson* props);

// api.ToolProperty: anyOf, type (PropertyType), items, description, enum, properties, required.
Value property_value(const ojson& p) {
  std::vector<std::string> types;
  if (const ojson* t = member(p, "type")) {
    if (t->is_string())
      types.push_back(t->get<std::string>());
    else
      types = strings(p, "type");
  }
  std::string type_text = types.empty() ? "" : types.size() == 1 ? types[0] : "[";
  if (types.size() > 1) {
    for (size_t i = 0; i < types.size(); ++i) type_text += (i ? " " : "") + types[i];
    type_text += "]";
  }
  std::string type_json = types.size() == 1 ? go_json_string(types[0]) : string_list_json(types);
  Value type = string_list(types).with_stringer(type_text).with_json(type_json);

  Value::List any_of;
  JsonObject js;
  if (const ojson* a = member(p, "anyOf"); a && a->is_array() && !a->empty()) {
    std::string aj = "[";
    for (size_t i = 0; i < a->size(); ++i) {
      any_of.push_back(property_value((*a)[i]));
      if (i) aj += ',';
      aj += go_json(any_of.back());
    }
    js.add("anyOf", aj + "]");
  }
  if (!types.empty()) js.add("type", type_json);
  const ojson* items = member(p, "items");
  if (items) js.add("items", go_json(json_to_value(*items)));
  std::string desc = str(p, "description");
  if (!desc.empty()) js.add("description", go_json_string(desc));
  const ojson* en = member(p, "enum");
  Value enum_value = en && en->is_array() ? json_to_value(*en) : Value::list({});
  if (en && en->is_array() && !en->empty()) js.add("enum", go_json(enum_value));
  const ojson* props = member(p, "properties");
  Value props_value = properties_value(props);
  if (props && props->is_object()) js.add("properties", go_json(props_value));
  std::vector<std::string> required = strings(p, "required");
  if (!required.empty()) js.add("required", string_list_json(required));

  return Value::structure("api.ToolProperty", {{"AnyOf", Value::list(std::move(any_of))},
                                               {"Type", type},
                                               {"Items", items ? json_to_value(*items) : Value()},
                                               {"Description", Value::string(desc)},
                                               {"Enum", enum_value},
                                               {"Properties", props_value},
                                               {"Required", string_list(required)}})
      .with_json(js.done());
}

// Properties: map name → ToolProperty, ranged in sorted order, printed as JSON in request order.
Value properties_value(const ojson* props) {
  if (!props || !props->is_object()) return Value::map({}).with_stringer("null").with_json("null");
  Value::Map m;
  JsonObject js;
  for (auto it = props->begin(); it != props->end(); ++it) {
    Value pv = property_value(it.value());
    js.add(it.key(), go_json(pv));
    m[it.key()] = pv;
  }
  std::string j = js.done();
  return Value::map(std::move(m)).with_stringer(j).with_json(j);
}

Value tool_value(const ojson& t) {
  const ojson empty = ojson::object();
  const ojson* fn = member(t, "function");
  if (!fn) fn = &empty;
  const ojson* params = member(*fn, "parameters");
  if (!params) params = &empty;

  JsonObject pj;
  std::string ptype = str(*params, "type");
  pj.add("type", go_json_string(ptype));
  const ojson* defs = member(*params, "$defs");
  if (defs) pj.add("$defs", go_json(json_to_value(*defs)));
  const ojson* pitems = member(*params, "items");
  if (pitems) pj.add("items", go_json(json_to_value(*pitems)));
  std::vector<std::string> required = strings(*params, "required");
  if (!required.empty()) pj.add("required", string_list_json(required));
  Value props = properties_value(member(*params, "properties"));
  pj.add("properties", go_json(props));
  std::string params_json = pj.done();
  Value params_value = Value::structure("api.ToolFunctionParameters",
                                        {{"Type", Value::string(ptype)},
                                         {"Defs", defs ? json_to_value(*defs) : Value()},
                                         {"Items", pitems ? json_to_value(*pitems) : Value()},
                                         {"Required", string_list(required)},
                                         {"Properties", props}})
                           .with_json(params_json);

  JsonObject fj;
  std::string name = str(*fn, "name"), desc = str(*fn, "description");
  fj.add("name", go_json_string(name));
  if (!desc.empty()) fj.add("description", go_json_string(desc));
  fj.add("parameters", params_json);
  std::string fn_json = fj.done();
  Value fn_value = Value::structure("api.ToolFunction", {{"Name", Value::string(name)},
                                                         {"Description", Value::string(desc)},
                                                         {"Parameters", params_value}})
                       .with_stringer(fn_json)
                       .with_json(fn_json);

  JsonObject tj;
  std::string type = str(t, "type");
  tj.add("type", go_json_string(type));
  const ojson* items = member(t, "items");
  if (items) tj.add("items", go_json(json_to_value(*items)));
  tj.add("function", fn_json);
  std::string tool_json = tj.done();
  return Value::structure("api.Tool", {{"Type", Value::string(type)},
                                       {"Items", items ? json_to_value(*items) : Value()},
                                       {"Function", fn_value}})
      .with_stringer(tool_json)
      .with_json(tool_json);
}

Value tool_call_value(const ToolCall& c) {
  // Arguments: map[string]any whose String() and JSON are the object (sorted keys, compat §5.2).
  Value args = json_to_value(c.arguments.is_object() ? c.arguments : ojson::object());
  std::string args_json = go_json(args);
  args = args.with_stringer(args_json).with_json(args_json);
  JsonObject fj;
  fj.add("index", std::to_string(c.index));
  fj.add("name", go_json_string(c.name));
  fj.add("arguments", args_json);
  std::string fn_json = fj.done();
  Value fn = Value::structure("api.ToolCallFunction", {{"Index", Value::integer(c.index)},
                                                       {"Name", Value::string(c.name)},
                                                       {"Arguments", args}})
                 .with_json(fn_json);
  JsonObject cj;
  if (!c.id.empty()) cj.add("id", go_json_string(c.id));
  cj.add("function", fn_json);
  return Value::structure("api.ToolCall", {{"ID", Value::string(c.id)}, {"Function", fn}})
      .with_json(cj.done());
}

}  // namespace

Value message_value(const Message& m) {
  Value::List images;
  // Images only matter for presence and count to templates; their bytes stay out of the values.
  for (size_t i = 0; i < m.images.size(); ++i) images.push_back(Value::string(""));
  Value::List calls;
  for (const auto& c : m.tool_calls) calls.push_back(tool_call_value(c));
  JsonObject js;
  js.add("role", go_json_string(m.role));
  js.add("content", go_json_string(m.content));
  if (!m.thinking.empty()) js.add("thinking", go_json_string(m.thinking));
  if (!calls.empty()) {
    std::string cj = "[";
    for (size_t i = 0; i < calls.size(); ++i) {
      if (i) cj += ',';
      cj += go_json(calls[i]);
    }
    js.add("tool_calls", cj + "]");
  }
  if (!m.tool_name.empty()) js.add("tool_name", go_json_string(m.tool_name));
  if (!m.tool_call_id.empty()) js.add("tool_call_id", go_json_string(m.tool_call_id));
  return Value::structure("api.Message", {{"Role", Value::string(m.role)},
                                          {"Content", Value::string(m.content)},
                                          {"Thinking", Value::string(m.thinking)},
                                          {"Images", Value::list(std::move(images))},
                                          {"ToolCalls", Value::list(std::move(calls))},
                                          {"ToolName", Value::string(m.tool_name)},
                                          {"ToolCallID", Value::string(m.tool_call_id)}})
      .with_json(js.done());
}

Value tools_value(const ojson& tools) {
  if (!tools.is_array()) return Value::list({}).with_stringer("null").with_json("null");
  Value::List l;
  std::string j = "[";
  for (size_t i = 0; i < tools.size(); ++i) {
    l.push_back(tool_value(tools[i]));
    if (i) j += ',';
    j += go_json(l.back());
  }
  j += "]";
  return Value::list(std::move(l)).with_stringer(j).with_json(j);
}

}  // namespace vkllm::prompt
