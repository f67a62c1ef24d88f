#include "engine/sampling/tool_call_grammar.h"

#include "engine/sampling/json_grammar_parts.h"
#include "engine/sampling/json_schema_compiler.h"
#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {

namespace {

using grammar::Frag;
using json = nlohmann::ordered_json;

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

// Any bytes that do not contain `end`, then `end` (a KMP automaton over the bytes).
Frag until(const std::string& end) {
  return [end](grammar::NfaBuilder& b, int32_t from) {
    const size_t m = end.size();
    std::vector<size_t> fail(m + 1, 0);  // longest proper border of end[0, i)
    for (size_t i = 1, k = 0; i < m; ++i) {
      while (k > 0 && end[i] != end[k]) k = fail[k];
      if (end[i] == end[k]) ++k;
      fail[i + 1] = k;
    }
    std::vector<int32_t> state(m);
    for (size_t i = 0; i < m; ++i) state[i] = b.node();
    b.eps(from, state[0]);  // a node of its own: state 0 loops
    const int32_t done = b.node();
    for (size_t i = 0; i < m; ++i) {
      std::vector<grammar::ByteSet> to(m + 1);
      for (int c = 0; c < 256; ++c) {
        size_t k = i;
        while (k > 0 && static_cast<unsigned char>(end[k]) != c) k = fail[k];
        if (static_cast<unsigned char>(end[k]) == c) ++k;
        to[k].set(static_cast<size_t>(c));
      }
      for (size_t k = 0; k <= m; ++k) {
        if (to[k].any()) b.bytes(state[i], to[k], k == m ? done : state[k]);
      }
    }
    return done;
  };
}

}  // namespace

grammar::Grammar compile_tool_calls(const ToolCallsSpec& spec) {
  if (spec.tools.empty()) throw FormatError("a forced tool call needs at least one tool");
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

  grammar::GrammarBuilder gb("invalid tool schema: ");
  const int32_t root = gb.declare("root");
  const Frag call = grammar::call(json_schema_rule(gb, schema));
  const int more = spec.parallel ? -1 : 0;
  const Frag ws = json_parts::ws();
  Frag body;
  if (syntax.tag == "[") {
    body = grammar::seq({grammar::literal("["), ws, call,
                         grammar::repeat(grammar::seq({grammar::literal(","), ws, call}), 0, more),
                         ws, grammar::literal("]")});
  } else if (syntax.tag == "{" || syntax.tag.empty()) {
    body = grammar::seq({call, grammar::repeat(grammar::seq({ws, call}), 0, more)});
  } else {
    std::vector<Frag> one = {grammar::literal(syntax.tag), ws, call};
    if (!syntax.closer.empty()) {
      one.push_back(grammar::opt(grammar::seq({ws, grammar::literal(syntax.closer)})));
    }
    const Frag tagged = grammar::seq(std::move(one));
    body = grammar::seq({tagged, grammar::repeat(grammar::seq({ws, tagged}), 0, more)});
  }
  if (!spec.thinking_close.empty()) {
    const Frag thoughts = grammar::seq({until(spec.thinking_close), ws});
    body = spec.thinking_open.empty()
               ? grammar::seq({thoughts, body})
               : grammar::seq(
                     {grammar::opt(grammar::seq({grammar::literal(spec.thinking_open), thoughts})),
                      body});
  }
  gb.define(root, body, "the tool calls");
  return gb.finish(root);
}

}  // namespace vkllm::sampling
