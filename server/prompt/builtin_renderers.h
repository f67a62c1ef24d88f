// Ollama's built-in renderers and parsers (its model/renderers and model/parsers, in Go): the
// models Ollama's library publishes without a TEMPLATE name a RENDERER that writes the prompt and
// a PARSER that reads the output. vkllm has Qwen 3.5's ("qwen3.5"), Qwen3-Coder's
// ("qwen3-coder"), Gemma 4's ("gemma4", "gemma4-small", "gemma4-large") and LFM2's ("lfm2",
// "lfm2-thinking") renderers here, and the parsers of those names plus "gemma4-no-thinking" and
// "ministral" (Mistral 3, whose models keep a TEMPLATE); Harmony is a named Go template
// (prompt_builder.cpp).
//
// A renderer sees the messages as the request and the model's layers give them (no collation),
// the request's tools and think, and writes the whole prompt, [img-N] tags included. Where the
// model's own template starts with a BOS text (Gemma 4's <bos>, LFM2's <|startoftext|>) the
// renderers leave it out: the tokenizer adds BOS, and Ollama strips that text when it does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

enum class BuiltinRenderer {
  kNone,
  kQwen35,
  kQwen3Coder,
  kGemma4,
  kGemma4Large,
  kLfm2,
  kLfm2Thinking
};

// The renderer a RENDERER name selects; kNone for names vkllm renders otherwise or not at all.
BuiltinRenderer builtin_renderer(std::string_view name);

// What an Ollama built-in parser gives /api/show (HasToolSupport, HasThinkingSupport); nullopt
// for a name that is not one of vkllm's built-in parsers.
struct BuiltinParserTraits {
  bool tools = false;
  bool thinking = false;
};
std::optional<BuiltinParserTraits> builtin_parser_traits(std::string_view name);

// The built-in renderer and parser names whose model ships this GGUF tokenizer.chat_template
// (Jinja), recognised by what only that template writes; nullopt else.
struct BuiltinFormat {
  std::string renderer, parser;
};
std::optional<BuiltinFormat> detect_builtin_format(std::string_view jinja);

// The image behind an [img-N] tag: messages[message].images[image].
struct ImageRef {
  size_t message = 0, image = 0;
};

// Renders with a built-in renderer; images come out as [img-N] tags numbered from 0 where the
// renderer writes them, and `images` (when given) receives the image of each tag in tag order:
// message order for Qwen 3.5 and LFM2, Gemma 4's own order (tool results before the answer they
// belong to, the system message's images dropped); Qwen3-Coder writes none.
std::string render_builtin(BuiltinRenderer renderer, const std::vector<Message>& messages,
                           const nlohmann::ordered_json& tools, const Think& think,
                           std::vector<ImageRef>* images = nullptr);

// Ollama's qwen3.5 renderer (default variant: thinking unless think is false, the empty think
// block when it is, [img-N] image tags).
std::string render_qwen35(const std::vector<Message>& messages, const nlohmann::ordered_json& tools,
                          const Think& think);
// Ollama's gemma4 renderer (gemma4-large: an empty thought channel opens the model's turn when
// not thinking); images: the tags' images in order (may be null).
std::string render_gemma4(const std::vector<Message>& messages, const nlohmann::ordered_json& tools,
                          const Think& think, bool large, std::vector<ImageRef>* images);
// Ollama's lfm2 renderer (lfm2-thinking: past thinking kept when thinking).
std::string render_lfm2(const std::vector<Message>& messages, const nlohmann::ordered_json& tools,
                        const Think& think, bool thinking_variant);
// Ollama's qwen3-coder renderer (no thinking, no images).
std::string render_qwen3_coder(const std::vector<Message>& messages,
                               const nlohmann::ordered_json& tools);

// Ollama's renderContentWithImageTags: each [img] placeholder takes the next [img-N] tag, tags
// for the other images go in front (a space between them and text that does not start with a
// space); content already holding [img- tags is left alone. `next` counts tags across messages.
std::string content_with_image_tags(std::string content, size_t count, size_t& next);

// A tool-call argument as both renderers write it inside <parameter=...>: strings as they are,
// objects and arrays as Go's encoding/json, null as "null", numbers as Go's %v of a float64.
std::string qwen_argument_text(const nlohmann::ordered_json& value);

}  // namespace vkllm::prompt
