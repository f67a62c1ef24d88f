// The name tables of Ollama's built-in renderers and parsers, detection of their models' GGUF
// chat templates, and what the Qwen renderers share.
#include "server/prompt/builtin_renderers.h"

#include <algorithm>

#include "server/prompt/go_space.h"
#include "server/prompt/template_data.h"

namespace vkllm::prompt {

BuiltinRenderer builtin_renderer(std::string_view name) {
  if (name == "qwen3.5") return BuiltinRenderer::kQwen35;
  if (name == "qwen3-coder") return BuiltinRenderer::kQwen3Coder;
  if (name == "gemma4" || name == "gemma4-small") return BuiltinRenderer::kGemma4;
  if (name == "gemma4-large") return BuiltinRenderer::kGemma4Large;
  if (name == "lfm2") return BuiltinRenderer::kLfm2;
  if (name == "lfm2-thinking") return BuiltinRenderer::kLfm2Thinking;
  return BuiltinRenderer::kNone;
}

std::optional<BuiltinParserTraits> builtin_parser_traits(std::string_view name) {
  if (name == "qwen3.5" || name == "gemma4" || name == "lfm2-thinking")
    return BuiltinParserTraits{true, true};
  if (name == "qwen3-coder" || name == "gemma4-no-thinking" || name == "lfm2" ||
      name == "ministral")
    return BuiltinParserTraits{true, false};
  return std::nullopt;
}

std::optional<BuiltinFormat> detect_builtin_format(std::string_view jinja) {
  auto has = [jinja](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
  // Gemma 4's turns and tool declarations; the large models' template (26B, 31B) opens an empty
  // thought channel when not thinking.
  if (has("<|turn>") && has("<turn|>") && has("<|tool_call>")) {
    if (has("<|channel>thought\\n<channel|>")) return BuiltinFormat{"gemma4-large", "gemma4"};
    return BuiltinFormat{"gemma4", "gemma4"};
  }
  // LFM2's ChatML turns with its tools list; the reasoning models' templates write <think>.
  if (has("<|im_start|>") && has("List of tools: ")) {
    if (has("<think>")) return BuiltinFormat{"lfm2-thinking", "lfm2-thinking"};
    return BuiltinFormat{"lfm2", "lfm2"};
  }
  // Both Qwen templates write ChatML turns and teach the XML call form with the same example
  // function; Qwen 3.5 opens the model's turn with a think block, Qwen3-Coder (no thinking)
  // renders tool parameters through its render_extra_keys macro.
  if (!has("<|im_start|>") || !has("<function=example_function_name>")) return std::nullopt;
  if (has("<think>")) return BuiltinFormat{"qwen3.5", "qwen3.5"};
  if (has("render_extra_keys")) return BuiltinFormat{"qwen3-coder", "qwen3-coder"};
  return std::nullopt;
}

std::string render_builtin(BuiltinRenderer renderer, const std::vector<Message>& messages,
                           const nlohmann::ordered_json& tools, const Think& think,
                           std::vector<ImageRef>* images) {
  // Qwen 3.5 and LFM2 number the tags over all images in message order (LFM2 counts the system
  // message's untagged images too).
  auto in_message_order = [&] {
    if (!images) return;
    for (size_t m = 0; m < messages.size(); ++m)
      for (size_t i = 0; i < messages[m].images.size(); ++i) images->push_back({m, i});
  };
  switch (renderer) {
    case BuiltinRenderer::kQwen35:
      in_message_order();
      return render_qwen35(messages, tools, think);
    case BuiltinRenderer::kQwen3Coder:
      return render_qwen3_coder(messages, tools);
    case BuiltinRenderer::kGemma4:
    case BuiltinRenderer::kGemma4Large:
      return render_gemma4(messages, tools, think, renderer == BuiltinRenderer::kGemma4Large,
                           images);
    case BuiltinRenderer::kLfm2:
    case BuiltinRenderer::kLfm2Thinking:
      in_message_order();
      return render_lfm2(messages, tools, think, renderer == BuiltinRenderer::kLfm2Thinking);
    case BuiltinRenderer::kNone:
      break;
  }
  return {};
}

std::string content_with_image_tags(std::string content, size_t count, size_t& next) {
  if (count == 0) return content;
  if (content.find("[img-") != std::string::npos) {
    next += count;
    return content;
  }
  std::string prefix;
  for (size_t i = 0; i < count; ++i) {
    const std::string tag = "[img-" + std::to_string(next + i) + "]";
    const size_t at = content.find("[img]");
    if (at != std::string::npos) {
      content.replace(at, 5, tag);
    } else {
      prefix += tag;
    }
  }
  next += count;
  if (!prefix.empty() && !content.empty() && go_leading_space(content) == 0) prefix += ' ';
  return prefix + content;
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
