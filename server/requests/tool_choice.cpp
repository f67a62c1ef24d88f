#include "server/requests/tool_choice.h"

#include "engine/sampling/token_constraint.h"
#include "engine/sampling/tool_call_grammar.h"
#include "server/http/status_error.h"
#include "server/prompt/harmony_names.h"

namespace vkllm::requests {

namespace {

// What the families write after a call's JSON, for the tags that have one.
std::string closer_of(const std::string& tag) {
  if (tag == "<tool_call>") return "</tool_call>";
  if (tag == "<|tool_call|>") return "<|/tool_call|>";
  if (tag == "[TOOL_CALLS]") return "[/TOOL_CALLS]";
  return {};
}

// How the model writes its calls, per its output parser; nullopt for a parser whose syntax the
// tool-call grammar does not know.
std::optional<sampling::ToolCallSyntax::Style> call_style(const prompt::ParserConfig& model) {
  using Style = sampling::ToolCallSyntax::Style;
  if (model.harmony) return Style::harmony;
  if (model.builtin_parser.empty()) {
    // Mistral 3's templates write [TOOL_CALLS]NAME[ARGS]{...}, which their parser reads too.
    return model.tool_name_then_args && model.tool_tag == "[TOOL_CALLS]" ? Style::mistral
                                                                         : Style::json;
  }
  if (model.builtin_parser == "ministral") return Style::mistral;
  if (model.builtin_parser == "qwen3.5" || model.builtin_parser == "qwen3-coder")
    return Style::qwen_xml;
  if (model.builtin_parser.starts_with("gemma4")) return Style::gemma4;
  if (model.builtin_parser.starts_with("lfm2")) return Style::lfm2;
  return std::nullopt;
}

// What the model may write before its calls.
void set_thinking(sampling::ToolCallsSpec& spec, const prompt::ParserConfig& model) {
  using Style = sampling::ToolCallSyntax::Style;
  switch (spec.syntax.style) {
    case Style::harmony:
      // A prefilled message goes on up to its end. Else, as OpenAI's reasoning models do before
      // a forced call, an analysis message may come first, unless the request turned thinking
      // off (think false, reasoning_effort "none"): then the call comes at once.
      if (model.harmony_prefill.empty() && !model.thinking) break;
      spec.thinking_open = model.harmony_prefill.empty() ? "<|channel|>analysis<|message|>" : "";
      spec.thinking_close = "<|end|><|start|>assistant";
      break;
    case Style::mistral:
      // Magistral thinks in [THINK]...[/THINK] first, when the request thinks.
      if (!model.thinking) break;
      spec.thinking_open = "[THINK]";
      spec.thinking_close = "[/THINK]";
      break;
    case Style::qwen_xml:
      // Qwen 3.5's prompt opens the think block unless think is false or an answer is continued.
      if (model.builtin_parser == "qwen3.5" && model.thinking && !model.assistant_prefill)
        spec.thinking_close = "</think>";
      break;
    case Style::gemma4:
      // The thought channel, when the request thinks; after tool results the prompt opened it.
      if (!model.thinking) break;
      spec.thinking_open = model.after_tool_result ? "" : "<|channel>";
      spec.thinking_close = "<channel|>";
      break;
    case Style::lfm2:
      // lfm2-thinking's answer may open with <think> when the request thinks.
      if (!model.thinking || model.assistant_prefill) break;
      spec.thinking_open = "<think>";
      spec.thinking_close = "</think>";
      break;
    case Style::json:
      if (model.thinking && !model.think_close.empty()) {
        spec.thinking_open = model.starts_in_thinking ? "" : model.think_open;
        spec.thinking_close = model.think_close;
      }
      break;
  }
}

}  // namespace

std::optional<sampling::FormatSpec> forced_tool_calls(const nlohmann::ordered_json& tools,
                                                      const ToolChoice& choice,
                                                      const prompt::ParserConfig& model,
                                                      const tokenizer::Tokenizer* tok) {
  if (choice.mode == ToolChoice::Mode::automatic) return std::nullopt;
  const auto style = call_style(model);
  if (!style) return std::nullopt;
  sampling::ToolCallsSpec spec;
  spec.syntax.style = *style;
  // Harmony shows the model each tool under an identifier (harmony_names.h); the grammar writes
  // that name and the parser maps it back.
  const nlohmann::ordered_json shown =
      model.harmony ? prompt::HarmonyFunctionNames::renamed_tools(tools) : tools;
  if (tools.is_array()) {
    for (size_t i = 0; i < tools.size(); ++i) {
      const auto& t = tools[i];
      if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
      const auto& fn = t["function"];
      if (!fn.contains("name") || !fn["name"].is_string()) continue;
      const std::string name = fn["name"].get<std::string>();
      if (name.empty()) continue;
      if (choice.mode == ToolChoice::Mode::named && name != choice.name) continue;
      spec.tools.push_back({shown[i]["function"]["name"].get<std::string>(),
                            fn.contains("parameters") ? fn["parameters"] : nullptr});
    }
  }
  if (spec.tools.empty()) {
    if (choice.mode == ToolChoice::Mode::named) {
      throw http::StatusError(400, "tool_choice names the function \"" + choice.name +
                                       "\", which is not among the request's tools");
    }
    throw http::StatusError(400, "tool_choice \"required\" needs at least one tool in \"tools\"");
  }
  if (spec.syntax.style == sampling::ToolCallSyntax::Style::json) {
    spec.syntax.tag = model.tool_tag.empty() ? "{" : model.tool_tag;
    spec.syntax.closer = closer_of(spec.syntax.tag);
    spec.syntax.arguments_key = model.tool_arguments_key;
  }
  spec.parallel = choice.parallel;
  set_thinking(spec, model);
  // Tags that are control tokens must be those tokens, where the output is decoded with them as
  // text (the parser then sees them); spelt out in pieces they would be another text to the
  // model.
  if (tok && model.special_tokens)
    spec.special_tokens = sampling::special_token_texts(*tok, sampling::tool_call_literals(spec));
  return sampling::FormatSpec::of_tool_calls(std::move(spec));
}

}  // namespace vkllm::requests
