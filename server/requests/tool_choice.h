// tool_choice enforced: "required" (OpenAI; Anthropic's "any") or a named function (Anthropic's
// "tool") constrains decoding to the model's tool-call syntax, so a call always comes out and
// the output parser finds it. This is the one mechanism every route uses: a route reads its
// API's tool_choice into a ToolChoice, and forced_tool_calls turns it, the request's tools and
// the model's tool-call format (its template's, in ParserConfig) into the constraint to compile.
// "none" is the route's business (the tools stay out of the prompt); `parallel` false also ends
// an unforced generation after its first call (GenerationService does that).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/sampling/format_spec.h"
#include "server/prompt/prompt.h"

namespace vkllm::tokenizer {
class Tokenizer;
}

namespace vkllm::requests {

struct ToolChoice {
  enum class Mode { automatic, required, named };
  Mode mode = Mode::automatic;
  std::string name;      // Mode::named: the function that must be called
  bool parallel = true;  // false: one call at most
};

// The constraint for a forced choice; nullopt when the choice forces nothing (automatic) or the
// model's calls are in a syntax the grammar does not know (a parser without one).
// `tools` are the request's tools in the native shape ({"type":"function","function":{"name",
// "parameters"}}); `model` says the syntax: a template's tag (JSON calls), Harmony (gpt-oss), or
// the ministral / qwen3.5 / qwen3-coder / gemma4 / lfm2 parsers' (tool_call_grammar.h); `tok`, the
// model's tokenizer, which of the syntax's texts are special tokens the output must use. Throws
// http::StatusError(400) when the choice names no tool of the request or there are no tools.
std::optional<sampling::FormatSpec> forced_tool_calls(const nlohmann::ordered_json& tools,
                                                      const ToolChoice& choice,
                                                      const prompt::ParserConfig& model,
                                                      const tokenizer::Tokenizer* tok = nullptr);

}  // namespace vkllm::requests
