// Ollama's built-in renderers and parsers (its model/renderers and model/parsers, in Go): the
// models Ollama's library publishes without a TEMPLATE name a RENDERER that writes the prompt and
// a PARSER that reads the output. vkllm has Qwen 3.5's ("qwen3.5") and Qwen3-Coder's
// ("qwen3-coder") here; Harmony and Gemma 4 are named Go templates (prompt_builder.cpp).
//
// A renderer sees the messages as the request and the model's layers give them (no collation),
// the request's tools and think, and writes the whole prompt, [img-N] tags included.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

enum class BuiltinRenderer { kNone, kQwen35, kQwen3Coder };

// The renderer a RENDERER name selects; kNone for names vkllm renders otherwise or not at all.
BuiltinRenderer builtin_renderer(std::string_view name);

// What an Ollama built-in parser gives /api/show (HasToolSupport, HasThinkingSupport); nullopt
// for a name that is not one of vkllm's built-in parsers.
struct BuiltinParserTraits {
  bool tools = false;
  bool thinking = false;
};
std::optional<BuiltinParserTraits> builtin_parser_traits(std::string_view name);

// The built-in renderer/parser name ("qwen3.5", "qwen3-coder") whose model ships this GGUF
// tokenizer.chat_template (Jinja), recognised by what only that template writes; nullopt else.
std::optional<std::string> detect_builtin_format(std::string_view jinja);

// Renders with a built-in renderer; images come out as [img-N] tags numbered from 0 in message
// order where the renderer writes them (Qwen 3.5; Qwen3-Coder writes none).
std::string render_builtin(BuiltinRenderer renderer, const std::vector<Message>& messages,
                           const nlohmann::ordered_json& tools, const Think& think);

// Ollama's qwen3.5 renderer (default variant: thinking unless think is false, the empty think
// block when it is, [img-N] image tags).
std::string render_qwen35(const std::vector<Message>& messages, const nlohmann::ordered_json& tools,
                          const Think& think);
// Ollama's qwen3-coder renderer (no thinking, no images).
std::string render_qwen3_coder(const std::vector<Message>& messages,
                               const nlohmann::ordered_json& tools);

// A tool-call argument as both renderers write it inside <parameter=...>: strings as they are,
// objects and arrays as Go's encoding/json, null as "null", numbers as Go's %v of a float64.
std::string qwen_argument_text(const nlohmann::ordered_json& value);

}  // namespace vkllm::prompt
