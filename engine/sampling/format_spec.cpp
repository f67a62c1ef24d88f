#include "engine/sampling/format_spec.h"

namespace vkllm::sampling {

FormatSpec FormatSpec::of_json(nlohmann::ordered_json format) {
  FormatSpec s;
  s.kind = Kind::json;
  s.json = std::move(format);
  return s;
}

FormatSpec FormatSpec::of_gbnf(std::string grammar) {
  FormatSpec s;
  s.kind = Kind::gbnf;
  s.text = std::move(grammar);
  return s;
}

FormatSpec FormatSpec::of_regex(std::string pattern) {
  FormatSpec s;
  s.kind = Kind::regex;
  s.text = std::move(pattern);
  return s;
}

FormatSpec FormatSpec::of_choice(std::vector<std::string> choices) {
  FormatSpec s;
  s.kind = Kind::choice;
  s.choices = std::move(choices);
  return s;
}

FormatSpec FormatSpec::of_tool_calls(ToolCallsSpec calls) {
  FormatSpec s;
  s.kind = Kind::tool_calls;
  s.tool_calls = std::move(calls);
  return s;
}

std::string FormatSpec::cache_key() const {
  using J = nlohmann::ordered_json;
  constexpr auto kReplace = J::error_handler_t::replace;
  switch (kind) {
    case Kind::json:
      return "json:" + json.dump(-1, ' ', false, kReplace);
    case Kind::gbnf:
      return "gbnf:" + text;
    case Kind::regex:
      return "regex:" + text;
    case Kind::choice:
      return "choice:" + J(choices).dump(-1, ' ', false, kReplace);
    case Kind::tool_calls: {
      J tools = J::array();
      for (const ToolSchema& t : tool_calls.tools) tools.push_back({t.name, t.parameters});
      const ToolCallSyntax& s = tool_calls.syntax;
      return "tools:" + J({static_cast<int>(s.style), s.tag, s.closer, s.arguments_key,
                           tool_calls.parallel, tool_calls.thinking_open, tool_calls.thinking_close,
                           tool_calls.special_tokens, tools})
                            .dump(-1, ' ', false, kReplace);
    }
  }
  return {};
}

}  // namespace vkllm::sampling
