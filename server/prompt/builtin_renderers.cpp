// The name tables of Ollama's built-in renderers and parsers, detection of their models' GGUF
// chat templates, and what the Qwen renderers share.
#include "server/prompt/builtin_renderers.h"

#include <algorithm>

#include "server/prompt/template_data.h"

namespace vkllm::prompt {

BuiltinRenderer builtin_renderer(std::string_view name) {
  if (name == "qwen3.5") return BuiltinRenderer::kQwen35;
  if (name == "qwen3-coder") return BuiltinRenderer::kQwen3Coder;
  return BuiltinRenderer::kNone;
}

std::optional<BuiltinParserTraits> builtin_parser_traits(std::string_view name) {
  if (name == "qwen3.5") return BuiltinParserTraits{true, true};
  if (name == "qwen3-coder") return BuiltinParserTraits{true, false};
  return std::nullopt;
}

std::optional<std::string> detect_builtin_format(std::string_view jinja) {
  auto has = [jinja](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
  // Both write ChatML turns and teach the XML call form with the same example function; Qwen 3.5
  // opens the model's turn with a think block, Qwen3-Coder (no thinking) renders tool parameters
  // through its render_extra_keys macro.
  if (!has("<|im_start|>") || !has("<function=example_function_name>")) return std::nullopt;
  if (has("<think>")) return "qwen3.5";
  if (has("render_extra_keys")) return "qwen3-coder";
  return std::nullopt;
}

std::string render_builtin(BuiltinRenderer renderer, const std::vector<Message>& messages,
                           const nlohmann::ordered_json& tools, const Think& think) {
  switch (renderer) {
    case BuiltinRenderer::kQwen35:
      return render_qwen35(messages, tools, think);
    case BuiltinRenderer::kQwen3Coder:
      return render_qwen3_coder(messages, tools);
    case BuiltinRenderer::kNone:
      break;
  }
  return {};
}

std::string qwen_argument_text(const nlohmann::ordered_json& value) {
  // Ollama holds arguments as Go values decoded from JSON (numbers float64, objects maps).
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "null";
  const Value v = json_to_value(value);
  if (value.is_object() || value.is_array()) return go_json(v);
  return go_sprint_value(v);
}

}  // namespace vkllm::prompt
