#include "engine/sampling/tool_call_grammar.h"

#include <algorithm>
#include <array>
#include <deque>

#include "engine/sampling/json_grammar_parts.h"
#include "engine/sampling/json_schema_compiler.h"
#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {

namespace {

using grammar::Frag;
using json = nlohmann::ordered_json;
using Style = ToolCallSyntax::Style;

// The tool's parameter schema when the compiler supports it, else any object.
json arguments_schema(const json& parameters) {
  const json any_object = {{"type", "object"}};
  if (parameters.is_null()) return any_object;
  try {
    compile_json_grammar(parameters);
    return parameters;
  } catch (const FormatError&) {
    return any_object;
  }
}

bool schema_supported(const json& schema) {
  try {
    compile_json_grammar(schema);
    return true;
  } catch (const FormatError&) {
    return false;
  }
}

// Text (no special token) that contains none of `forbidden`, then `end` (an Aho-Corasick
// automaton over the strings: the first `end` ends the text, a forbidden string is a dead end).
Frag text_until(std::string end, std::vector<std::string> forbidden) {
  return [end = std::move(end), forbidden = std::move(forbidden)](grammar::NfaBuilder& b,
                                                                  int32_t from) {
    enum Kind { kText, kEnd, kForbidden };
    struct TrieNode {
      std::array<int32_t, 256> next;
      int32_t fail = 0;
      int kind = kText;
    };
    std::vector<TrieNode> t(1);
    t[0].next.fill(-1);
    auto add = [&t](const std::string& s, int kind) {
      int32_t at = 0;
      for (unsigned char c : s) {
        if (t[static_cast<size_t>(at)].next[c] < 0) {
          t[static_cast<size_t>(at)].next[c] = static_cast<int32_t>(t.size());
          t.emplace_back().next.fill(-1);
        }
        at = t[static_cast<size_t>(at)].next[c];
      }
      if (kind == kEnd || t[static_cast<size_t>(at)].kind == kText)
        t[static_cast<size_t>(at)].kind = kind;
    };
    add(end, kEnd);
    for (const std::string& f : forbidden) add(f, kForbidden);
    std::deque<int32_t> queue;
    for (int c = 0; c < 256; ++c) {
      int32_t& u = t[0].next[static_cast<size_t>(c)];
      if (u < 0) {
        u = 0;
      } else {
        queue.push_back(u);
      }
    }
    while (!queue.empty()) {  // breadth first: a node's fail link is done before the node
      const auto s = static_cast<size_t>(queue.front());
      queue.pop_front();
      const int inherited = t[static_cast<size_t>(t[s].fail)].kind;
      if (t[s].kind != kEnd && inherited != kText) t[s].kind = inherited;
      for (size_t c = 0; c < 256; ++c) {
        const int32_t u = t[s].next[c];
        const int32_t via_fail = t[static_cast<size_t>(t[s].fail)].next[c];
        if (u < 0) {
          t[s].next[c] = via_fail;
        } else {
          t[static_cast<size_t>(u)].fail = s == 0 ? 0 : via_fail;
          queue.push_back(u);
        }
      }
    }
    std::vector<int32_t> state(t.size(), -1);
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind == kText) state[i] = b.node();
    }
    b.eps(from, state[0]);
    const int32_t done = b.node();
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind != kText) continue;
      std::vector<grammar::ByteSet> to(t.size());
      for (size_t c = 0; c < 256; ++c) to[static_cast<size_t>(t[i].next[c])].set(c);
      for (size_t k = 0; k < t.size(); ++k) {
        if (to[k].none() || t[k].kind == kForbidden) continue;
        b.bytes(state[i], to[k], t[k].kind == kEnd ? done : state[k]);
      }
    }
    return done;
  };
}

// Writes the syntax's fixed texts, with the special tokens among them as those tokens.
class Marks {
 public:
  explicit Marks(const std::vector<std::string>& specials) : specials_(specials) {}

  Frag text(std::string_view s) const {
    std::vector<Frag> parts;
    while (!s.empty()) {
      auto [at, len] = first_special(s);
      if (at > 0) parts.push_back(grammar::literal(std::string(s.substr(0, at))));
      if (len == 0) break;
      parts.push_back(grammar::special_token(std::string(s.substr(at, len))));
      s.remove_prefix(at + len);
    }
    return grammar::seq(std::move(parts));
  }

  // Free text up to and including `close`: up to the text before its first special token
  // (forbidden strings excluded), then the rest of `close` is required.
  Frag until(std::string_view close, std::vector<std::string> forbidden = {}) const {
    const size_t at = first_special(close).first;
    if (at == 0) {  // plain text (no special token) until the special that opens `close`
      return grammar::seq(
          {grammar::repeat(grammar::cls(grammar::ByteSet().set()), 0, -1), text(close)});
    }
    return grammar::seq({text_until(std::string(close.substr(0, at)), std::move(forbidden)),
                         text(close.substr(at))});
  }

 private:
  // The leftmost (then longest) special token text in `s`: {position, length}; {size, 0}: none.
  std::pair<size_t, size_t> first_special(std::string_view s) const {
    std::pair<size_t, size_t> best{s.size(), 0};
    for (const std::string& sp : specials_) {
      const size_t at = sp.empty() ? s.npos : s.find(sp);
      if (at == s.npos) continue;
      if (at < best.first || (at == best.first && sp.size() > best.second)) best = {at, sp.size()};
    }
    return best;
  }

  const std::vector<std::string>& specials_;
};

// The calls as JSON objects {"name": ..., "<arguments key>": ...} in the template's syntax.
Frag json_calls(grammar::GrammarBuilder& gb, const ToolCallsSpec& spec, const Marks& marks) {
  const ToolCallSyntax& syntax = spec.syntax;
  json calls = json::array();
  for (const ToolSchema& t : spec.tools) {
    json properties = json::object();
    properties["name"] = {{"const", t.name}};
    properties[syntax.arguments_key] = arguments_schema(t.parameters);
    calls.push_back({{"type", "object"},
                     {"properties", std::move(properties)},
                     {"required", {"name", syntax.arguments_key}},
                     {"additionalProperties", false}});
  }
  const json schema = calls.size() == 1 ? calls[0] : json{{"anyOf", std::move(calls)}};
  const Frag call = grammar::call(json_schema_rule(gb, schema));
  const int more = spec.parallel ? -1 : 0;
  const Frag ws = json_parts::ws();
  if (syntax.tag == "[") {
    return grammar::seq({grammar::literal("["), ws, call,
                         grammar::repeat(grammar::seq({grammar::literal(","), ws, call}), 0, more),
                         ws, grammar::literal("]")});
  }
  if (syntax.tag == "{" || syntax.tag.empty()) {
    return grammar::seq({call, grammar::repeat(grammar::seq({ws, call}), 0, more)});
  }
  std::vector<Frag> one = {marks.text(syntax.tag), ws, call};
  if (!syntax.closer.empty()) {
    one.push_back(grammar::opt(grammar::seq({ws, marks.text(syntax.closer)})));
  }
  const Frag tagged = grammar::seq(std::move(one));
  return grammar::seq({tagged, grammar::repeat(grammar::seq({ws, tagged}), 0, more)});
}

// The properties of a tool's parameter schema, in schema order or sorted by name, each with
// whether it is required.
std::vector<std::pair<std::string, bool>> schema_properties(const json& params, bool sorted) {
  std::vector<std::pair<std::string, bool>> out;
  if (!params.is_object() || !params.contains("properties") || !params["properties"].is_object())
    return out;
  std::vector<std::string> required;
  if (params.contains("required") && params["required"].is_array()) {
    for (const json& r : params["required"])
      if (r.is_string()) required.push_back(r.get<std::string>());
  }
  for (const auto& [key, prop] : params["properties"].items()) {
    out.emplace_back(key, std::find(required.begin(), required.end(), key) != required.end());
  }
  if (sorted) std::sort(out.begin(), out.end());
  return out;
}

// Items in a fixed order, the optional ones skippable, `sep` between those written: two lanes of
// states, before the first item written and after it.
Frag separated(std::vector<std::pair<Frag, bool>> items, std::string sep) {
  return [items = std::move(items), sep = std::move(sep)](grammar::NfaBuilder& b, int32_t from) {
    int32_t none = from, some = b.node();
    for (const auto& [item, required] : items) {
      const int32_t next_none = b.node(), next_some = b.node();
      if (!required) {
        b.eps(none, next_none);
        b.eps(some, next_some);
      }
      b.eps(item(b, none), next_some);
      b.eps(item(b, grammar::literal(sep)(b, some)), next_some);
      none = next_none;
      some = next_some;
    }
    const int32_t end = b.node();
    b.eps(none, end);
    b.eps(some, end);
    return end;
  };
}

// The JSON Schema "type" names of a property.
std::vector<std::string> type_names(const json& prop) {
  std::vector<std::string> types;
  if (!prop.is_object() || !prop.contains("type")) return types;
  const json& ty = prop["type"];
  if (ty.is_string()) types.push_back(ty.get<std::string>());
  if (ty.is_array()) {
    for (const json& x : ty)
      if (x.is_string()) types.push_back(x.get<std::string>());
  }
  return types;
}

// A property's enum values, when they are all non-empty strings.
std::vector<Frag> string_enum(const json& prop) {
  std::vector<Frag> values;
  if (!prop.is_object() || !prop.contains("enum") || !prop["enum"].is_array()) return values;
  for (const json& e : prop["enum"]) {
    if (!e.is_string() || e.get<std::string>().empty()) return {};
    values.push_back(grammar::literal(e.get<std::string>()));
  }
  return values;
}

// Any value in Gemma's notation ({key:value}, [values], <|"|> strings, JSON scalars), for
// properties whose schema is not a scalar's.
int32_t gemma4_any_value(grammar::GrammarBuilder& gb, const Marks& marks) {
  const int32_t value = gb.declare("gemma4 value");
  const Frag v = grammar::call(value);
  grammar::ByteSet first = grammar::byte_range('a', 'z') | grammar::byte_range('A', 'Z');
  first.set('_');
  const grammar::ByteSet rest = first | grammar::byte_range('0', '9');
  const Frag key = grammar::seq({grammar::cls(first), grammar::repeat(grammar::cls(rest), 0, 40)});
  const Frag member = grammar::seq({key, grammar::literal(":"), v});
  auto list = [](const Frag& item) {
    return grammar::opt(
        grammar::seq({item, grammar::repeat(grammar::seq({grammar::literal(","), item}), 0, -1)}));
  };
  const Frag object = grammar::seq({grammar::literal("{"), list(member), grammar::literal("}")});
  const Frag array = grammar::seq({grammar::literal("["), list(v), grammar::literal("]")});
  const Frag string = grammar::seq({marks.text("<|\"|>"), marks.until("<|\"|>")});
  const Frag scalar =
      grammar::call(json_schema_rule(gb, json{{"type", {"number", "boolean", "null"}}}));
  gb.define(value, grammar::alt({string, scalar, object, array}), "a Gemma 4 value");
  return value;
}

// One argument's value in Gemma's notation or LFM2's Python-style keyword arguments: strings in
// the syntax's quotes (an enum's values, else free text), scalars as JSON, other values as the
// syntax writes any value (as the gemma4 and lfm2 parsers type them back).
Frag keyword_value(grammar::GrammarBuilder& gb, const json& prop, Style style, const Marks& marks,
                   int32_t& gemma_any) {
  const std::vector<std::string> types = type_names(prop);
  const bool gemma = style == Style::gemma4;
  std::vector<Frag> values = string_enum(prop);
  if ((types.size() == 1 && types[0] == "string") || (types.empty() && !values.empty())) {
    if (gemma) {
      const Frag open = marks.text("<|\"|>");
      if (!values.empty())
        return grammar::seq({open, grammar::alt(std::move(values)), marks.text("<|\"|>")});
      return grammar::seq({open, marks.until("<|\"|>")});
    }
    // LFM2 keeps a quoted value as written: no quote or backslash inside.
    const Frag body = values.empty() ? grammar::repeat(json_parts::plain_char(), 0, -1)
                                     : grammar::alt(std::move(values));
    return grammar::seq({grammar::literal("\""), body, grammar::literal("\"")});
  }
  const bool scalar = !types.empty() && std::all_of(types.begin(), types.end(), [](const auto& t) {
    return t == "integer" || t == "number" || t == "boolean" || t == "null";
  });
  if (scalar && schema_supported(prop)) return grammar::call(json_schema_rule(gb, prop));
  if (gemma) {
    if (gemma_any < 0) gemma_any = gemma4_any_value(gb, marks);
    return grammar::call(gemma_any);
  }
  // LFM2 reads a JSON list or dict (and JSON scalars) as what they are.
  return grammar::call(json_schema_rule(gb, schema_supported(prop) ? prop : json::object()));
}

// Gemma 4's and LFM2's calls: the name, then the arguments in the renderers' order (sorted keys).
Frag keyword_call(grammar::GrammarBuilder& gb, const ToolSchema& tool, Style style,
                  const Marks& marks, int32_t& gemma_any) {
  const bool gemma = style == Style::gemma4;
  std::vector<std::pair<Frag, bool>> items;
  for (const auto& [key, required] : schema_properties(tool.parameters, true)) {
    const Frag value =
        keyword_value(gb, tool.parameters["properties"][key], style, marks, gemma_any);
    items.emplace_back(grammar::seq({grammar::literal(key + (gemma ? ":" : "=")), value}),
                       required);
  }
  const Frag args = separated(std::move(items), ",");
  if (gemma) {
    return grammar::seq(
        {marks.text("<|tool_call>call:" + tool.name + "{"), args, marks.text("}<tool_call|>")});
  }
  return grammar::seq({grammar::literal(tool.name + "("), args, grammar::literal(")")});
}

// A Qwen XML parameter's value and its closing tag, as Ollama's qwen3-coder parser types it back:
// text for a string (or untyped) property, else JSON for the property's schema.
Frag qwen_value(grammar::GrammarBuilder& gb, const json& prop) {
  static const std::string kClose = "\n</parameter>";
  std::vector<std::string> types;
  if (prop.is_object() && prop.contains("type")) {
    const json& ty = prop["type"];
    if (ty.is_string()) types.push_back(ty.get<std::string>());
    if (ty.is_array()) {
      for (const json& x : ty)
        if (x.is_string()) types.push_back(x.get<std::string>());
    }
  }
  const bool stringy =
      types.empty() || std::find(types.begin(), types.end(), "string") != types.end();
  if (stringy && prop.is_object() && prop.contains("enum") && prop["enum"].is_array() &&
      types.size() <= 1) {
    std::vector<Frag> values;
    for (const json& e : prop["enum"]) {
      if (e.is_string() && !e.get<std::string>().empty())
        values.push_back(grammar::literal(e.get<std::string>()));
    }
    if (!values.empty())
      return grammar::seq({grammar::alt(std::move(values)), grammar::literal(kClose)});
  }
  if (stringy || !schema_supported(prop)) {
    // Anything the parser would not cut short: no closing or opening tag of the call inside.
    return text_until(kClose, {"</parameter>", "<parameter=", "</function>", "</tool_call>"});
  }
  return grammar::seq({grammar::call(json_schema_rule(gb, prop)), grammar::literal(kClose)});
}

Frag qwen_xml_call(grammar::GrammarBuilder& gb, const ToolSchema& tool, const Marks& marks) {
  std::vector<Frag> parts = {marks.text("<tool_call>\n<function=" + tool.name + ">")};
  for (const auto& [key, required] : schema_properties(tool.parameters, false)) {
    const Frag p = grammar::seq({marks.text("\n<parameter=" + key + ">\n"),
                                 qwen_value(gb, tool.parameters["properties"][key])});
    parts.push_back(required ? p : grammar::opt(p));
  }
  parts.push_back(marks.text("\n</function>\n</tool_call>"));
  return grammar::seq(std::move(parts));
}

// One call (any of the tools) in a syntax that names the tool outside its JSON arguments.
Frag named_call(grammar::GrammarBuilder& gb, const ToolCallsSpec& spec, const Marks& marks) {
  std::vector<Frag> calls;
  int32_t gemma_any = -1;  // Gemma 4's rule for any value, declared when first needed
  for (const ToolSchema& t : spec.tools) {
    if (spec.syntax.style == Style::qwen_xml) {
      calls.push_back(qwen_xml_call(gb, t, marks));
      continue;
    }
    if (spec.syntax.style == Style::gemma4 || spec.syntax.style == Style::lfm2) {
      calls.push_back(keyword_call(gb, t, spec.syntax.style, marks, gemma_any));
      continue;
    }
    const Frag args = grammar::call(json_schema_rule(gb, arguments_schema(t.parameters)));
    if (spec.syntax.style == Style::harmony) {
      calls.push_back(grammar::seq({marks.text("<|channel|>commentary to=functions." + t.name +
                                               " <|constrain|>json<|message|>"),
                                    args, marks.text("<|call|>")}));
    } else {  // mistral
      calls.push_back(grammar::seq({marks.text("[TOOL_CALLS]" + t.name + "[ARGS]"), args}));
    }
  }
  return grammar::alt(std::move(calls));
}

}  // namespace

std::vector<std::string> tool_call_literals(const ToolCallsSpec& spec) {
  std::vector<std::string> out = {spec.thinking_open, spec.thinking_close};
  switch (spec.syntax.style) {
    case Style::json:
      out.push_back(spec.syntax.tag);
      out.push_back(spec.syntax.closer);
      break;
    case Style::harmony:
      out.insert(out.end(), {"<|channel|>", "<|constrain|>", "<|message|>", "<|call|>"});
      break;
    case Style::mistral:
      out.insert(out.end(), {"[TOOL_CALLS]", "[ARGS]"});
      break;
    case Style::qwen_xml:
      out.insert(out.end(), {"<tool_call>", "</tool_call>"});
      break;
    case Style::gemma4:
      out.insert(out.end(), {"<|tool_call>", "<tool_call|>", "<|\"|>"});
      break;
    case Style::lfm2:
      out.insert(out.end(), {"<|tool_call_start|>", "<|tool_call_end|>"});
      break;
  }
  std::erase(out, std::string());
  return out;
}

grammar::Grammar compile_tool_calls(const ToolCallsSpec& spec) {
  if (spec.tools.empty()) throw FormatError("a forced tool call needs at least one tool");
  const Marks marks(spec.special_tokens);
  grammar::GrammarBuilder gb("invalid tool schema: ");
  const int32_t root = gb.declare("root");
  const Style style = spec.syntax.style;
  Frag body;
  if (style == Style::json) {
    body = json_calls(gb, spec, marks);
  } else {
    const Frag call = named_call(gb, spec, marks);
    // Harmony ends the turn with its call; the others may make more with `parallel` (LFM2 in
    // one list).
    const int more = spec.parallel && style != Style::harmony ? -1 : 0;
    const Frag sep = style == Style::qwen_xml ? grammar::literal("\n")
                     : style == Style::lfm2   ? grammar::literal(",")
                                              : grammar::empty();
    body = grammar::seq({call, grammar::repeat(grammar::seq({sep, call}), 0, more)});
    if (style == Style::lfm2) {
      body = grammar::seq(
          {marks.text("<|tool_call_start|>["), body, marks.text("]<|tool_call_end|>")});
    }
  }
  if (!spec.thinking_close.empty()) {
    // Whitespace may follow the thoughts' close where the parsers drop it; Harmony's next
    // message follows at once.
    const Frag after = style == Style::harmony ? grammar::empty() : json_parts::ws();
    const Frag thoughts = grammar::seq({marks.until(spec.thinking_close), after});
    body =
        spec.thinking_open.empty()
            ? grammar::seq({thoughts, body})
            : grammar::seq(
                  {grammar::opt(grammar::seq({marks.text(spec.thinking_open), thoughts})), body});
  }
  gb.define(root, body, "the tool calls");
  return gb.finish(root);
}

}  // namespace vkllm::sampling
