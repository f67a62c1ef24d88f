#include "server/requests/tool_choice.h"

#include "server/http/status_error.h"

namespace vkllm::requests {

namespace {

// What the families write after a call's JSON, for the tags that have one.
std::string closer_of(const std::string& tag) {
  if (tag == "<tool_call>") return "</tool_call>";
  if (tag == "<|tool_call|>") return "<|/tool_call|>";
  if (tag == "[TOOL_CALLS]") return "[/TOOL_CALLS]";
  return {};
}

}  // namespace

std::optional<sampling::FormatSpec> forced_tool_calls(const nlohmann::ordered_json& tools,
                                                      const ToolChoice& choice,
                                                      const prompt::ParserConfig& model) {
  if (choice.mode == ToolChoice::Mode::automatic) return std::nullopt;
  sampling::ToolCallsSpec spec;
  if (tools.is_array()) {
    for (const auto& t : tools) {
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
      const auto& fn = t["function"];
      if (!fn.contains("name") || !fn["name"].is_string()) continue;
      const std::string name = fn["name"].get<std::string>();
      if (name.empty()) continue;
      if (choice.mode == ToolChoice::Mode::named && name != choice.name) continue;
      spec.tools.push_back({name, fn.contains("parameters") ? fn["parameters"] : nullptr});
    }
  }
  if (spec.tools.empty()) {
    if (choice.mode == ToolChoice::Mode::named) {
      throw http::StatusError(400, "tool_choice names the function \"" + choice.name +
                                       "\", which is not among the request's tools");
    }
    throw http::StatusError(400, "tool_choice \"required\" needs at least one tool in \"tools\"");
  }
  spec.syntax.tag = model.tool_tag.empty() ? "{" : model.tool_tag;
  spec.syntax.closer = closer_of(spec.syntax.tag);
  spec.syntax.arguments_key = model.tool_arguments_key;
  spec.parallel = choice.parallel;
  if (model.thinking && !model.think_close.empty()) {
    spec.thinking_open = model.starts_in_thinking ? "" : model.think_open;
    spec.thinking_close = model.think_close;
  }
  return sampling::FormatSpec::of_tool_calls(std::move(spec));
}

}  // namespace vkllm::requests
