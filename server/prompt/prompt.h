// Prompt building for generation requests: the model's Go TEMPLATE (or the named template detected
// from its GGUF chat_template, or `{{ .Prompt }}`), Ollama's message assembly, collation, system
// handling, truncation to num_ctx, and the three execution modes (messages, legacy, suffix) of
// ../shared/docs/ollama-compat.md §5. The scheduler and the API routes only see this header and
// output_parser.h; the template language itself lives in go_template.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkllm::prompt {

// A template that does not parse or fails to execute; what() is Go-like ("template: :3:5: ...").
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ToolCall {
  std::string id;  // "call_" + 8 of [a-z0-9]; empty when the client sent none
  int index = 0;   // function.index
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // key order kept
};

struct Message {
  std::string role;  // lower-cased by the API layer
  std::string content;
  std::string thinking;
  std::vector<std::string> images;  // decoded bytes, one per image
  std::vector<ToolCall> tool_calls;
  std::string tool_name;
  std::string tool_call_id;
};

// The request's `think` (after validation by the API layer).
struct Think {
  bool set = false;      // .IsThinkSet
  bool enabled = false;  // .Think
  std::string level;     // .ThinkLevel: "low"/"medium"/"high"/"max"; "medium" for true; "" off
};

// What a model contributes to its prompts (its layers and GGUF metadata).
struct ModelPrompt {
  std::optional<std::string> template_text;  // TEMPLATE layer; nullopt when it has none
  std::string system;                        // SYSTEM layer
  std::vector<Message> messages;             // MESSAGE history
  std::string gguf_chat_template;            // tokenizer.chat_template, "" when absent
  std::string architecture;                  // general.architecture (family quirks: qwen3...)
  std::string name;                          // model name, e.g. "deepseek-r1:8b" (its quirk)
  // RENDERER ("harmony": the built-in gpt-oss template, whatever TEMPLATE; "qwen3.5",
  // "qwen3-coder", "gemma4", "gemma4-small", "gemma4-large", "lfm2", "lfm2-thinking":
  // builtin_renderers.h)
  std::string renderer;
  // PARSER ("harmony": Harmony output parsing; the built-in parsers of builtin_renderers.h)
  std::string parser;
  bool has_projector = false;  // images count 768 tokens each when truncating
};

struct ChatInput {  // /api/chat, /v1/chat/completions, /v1/responses
  std::vector<Message> messages;
  nlohmann::ordered_json tools;  // array of Tool objects (compat §1.2) or null
  Think think;
  bool truncate = true;  // drop oldest messages to fit num_ctx (compat §6.4)
};

struct GenerateInput {  // /api/generate, /v1/completions (never raw: the route handles raw)
  std::string prompt;
  std::string suffix;
  std::optional<std::string> system;             // request `system` overrides the model's
  std::optional<std::string> template_override;  // request `template`
  std::vector<std::string> images;               // decoded bytes
  bool has_context = false;                      // `context` given: no MESSAGE history
  Think think;
  bool truncate = true;  // chat-like flow: drop the oldest history to fit num_ctx (compat §6.4)
};

struct Rendered {
  std::string text;                 // the prompt; special tokens in it are parsed as special
  std::vector<std::string> images;  // in [img-N] order
};

// Counts the tokens a rendered prompt would take (used for message truncation).
using TokenCounter = std::function<size_t(std::string_view text)>;

struct TemplateCapabilities {
  bool tools = false;     // references .Tools
  bool insert = false;    // references .Suffix
  bool thinking = false;  // thinking tags found around .Thinking (compat §5.5)
};

// Where output parsing starts, derived from the template and the request (compat §5.5).
struct ParserConfig {
  std::string think_open, think_close;  // e.g. "<think>", "</think>"; empty: no thinking tags
  bool thinking = false;                // split thinking out (capable model, think not false)
  bool starts_in_thinking = false;      // the rendered prompt ends with think_open
  std::string tool_tag;                 // e.g. "<tool_call>", "[TOOL_CALLS]"; "{" by default
  std::string tool_arguments_key = "arguments";  // "parameters" where the template writes that
  bool tool_name_then_args = false;     // calls are TAG NAME[ARGS]{...} (Mistral 3's templates)
  std::vector<std::string> tool_names;  // only these names are tool calls; empty: no tools
  // Harmony (gpt-oss): HarmonyParser reads the output instead, from the prefill ("", "final" or
  // "analysis": the channel of a last assistant message the prompt continues). Its control
  // tokens (<|channel|>, <|message|>...) must be decoded as text for it: special_tokens (so must
  // Gemma 4's <|channel> and <channel|> when its thinking is split out).
  bool harmony = false;
  std::string harmony_prefill;
  bool special_tokens = false;
  // One of Ollama's built-in parsers (builtin_renderers.h), named by the model's PARSER or
  // detected with its renderer: "qwen3.5", "qwen3-coder", "gemma4", "gemma4-no-thinking",
  // "lfm2", "lfm2-thinking", "ministral" (thinking: `thinking`, from the request's think); "" for
  // the template-driven parsing above. Their calls' values are typed by the request's tool
  // schemas (`tools`) or by their own notation, and only `tool_names` may be called (ministral,
  // lfm2); `assistant_prefill`: the prompt continues a last assistant message with content (no
  // thinking block opens); `after_tool_result`: the prompt ends with tool results (Gemma 4's
  // prompt then opens the thought channel itself).
  std::string builtin_parser;
  nlohmann::ordered_json tools;
  bool assistant_prefill = false;
  bool after_tool_result = false;
};

// One model's prompt builder: resolves and parses the template once; render() is const and
// thread-safe. Throws TemplateError from the constructor when the template does not parse.
class PromptBuilder {
 public:
  explicit PromptBuilder(ModelPrompt model);
  ~PromptBuilder();
  PromptBuilder(PromptBuilder&&) noexcept;

  // The template in use: the TEMPLATE layer, else the named template detected from the GGUF
  // chat_template (compat §5.6), else "{{ .Prompt }}". A built-in renderer
  // (builtin_renderer_name()) writes chat prompts instead; the template still serves generate's
  // suffix and template-override modes, as in Ollama.
  const std::string& template_text() const;
  // Name of the detected named template ("" when the TEMPLATE layer or the default is used).
  const std::string& detected_template() const;
  // The detected named template's default parameters (e.g. {"stop": [...]}), else {}.
  const nlohmann::ordered_json& default_parameters() const;
  TemplateCapabilities capabilities() const;

  // Chat: MESSAGE history + request messages (+ model SYSTEM when the first is not system),
  // truncated to num_ctx with `count` when input.truncate, collated, rendered.
  Rendered render_chat(const ChatInput& input, uint32_t num_ctx, const TokenCounter& count) const;
  // Generate: messages mode / legacy mode / suffix mode as compat §5.2 says.
  Rendered render_generate(const GenerateInput& input) const;
  // The same with Ollama's truncation of the chat-like flow (system + MESSAGE history + prompt,
  // no request template or suffix) to num_ctx, as render_chat does.
  Rendered render_generate(const GenerateInput& input, uint32_t num_ctx,
                           const TokenCounter& count) const;

  // How to parse this request's output; last_message: the chat's last message (Harmony continues
  // a last assistant message), nullptr for generate.
  ParserConfig parser_config(const nlohmann::ordered_json& tools, const Think& think,
                             std::string_view rendered_prompt,
                             const Message* last_message = nullptr) const;
  // The model's output is Harmony (gpt-oss): PARSER harmony, RENDERER harmony, or a gpt-oss
  // architecture whose template writes Harmony's <|start|>/<|end|> (Ollama's test).
  bool uses_harmony() const;
  // Ollama's built-in renderer/parser in use ("qwen3.5", "gemma4", ...): named by the model's
  // RENDERER/PARSER, or both detected from its GGUF chat_template (a gemma4 GGUF without one
  // gets gemma4's); "" when none.
  const std::string& builtin_renderer_name() const;
  const std::string& builtin_parser_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses a TEMPLATE for /api/create; nullopt when it is fine, else the parse error text.
std::optional<std::string> check_template(std::string_view text);

// The named template (compat §5.6: minimum Levenshtein distance < 100 over the built-in index)
// for a GGUF tokenizer.chat_template; failing that, the family whose control tokens the template
// writes (kFamilyMarkers: Mistral 3's templates differ by long default system prompts, so no one
// text is near them all); nullopt when neither matches.
std::optional<std::string> detect_named_template(std::string_view jinja);
// A built-in named template's text and default parameters; nullopt for an unknown name.
std::optional<std::string> named_template_text(std::string_view name);
nlohmann::ordered_json named_template_parameters(std::string_view name);

}  // namespace vkllm::prompt
