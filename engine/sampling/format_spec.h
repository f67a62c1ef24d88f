// What a request asks its output to be, before compilation: Ollama's `format` ("json" or a JSON
// Schema), a GBNF grammar (llama.cpp's `grammar`), a regular expression or a choice of strings
// (vLLM's structured_outputs), or tool calls in a model's own syntax (a forced tool_choice).
// compile_format_spec (token_constraint.h) turns one into a CompiledFormat, once per cache_key.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkllm::sampling {

// How a model writes its tool calls (read from its template or built-in parser by the server).
struct ToolCallSyntax {
  enum class Style {
    json,      // {"name": ..., "<arguments key>": {...}} after `tag`, as the templates write them
    harmony,   // gpt-oss: <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
               // {args}<|call|>, one call (the turn ends at <|call|>)
    mistral,   // [TOOL_CALLS]NAME[ARGS]{args}
    qwen_xml,  // <tool_call>\n<function=NAME>\n<parameter=P>\nvalue\n</parameter>...
    gemma4,    // <|tool_call>call:NAME{key:value,...}<tool_call|>, strings in <|"|>
    lfm2       // <|tool_call_start|>[NAME(key=value,...),...]<|tool_call_end|>
  };
  Style style = Style::json;
  // json: what opens the calls ("<tool_call>", "[TOOL_CALLS]"); "{" or "[": the calls are bare
  // JSON (an object, or an array of them).
  std::string tag = "{";
  // json: what may close each call after its JSON ("</tool_call>"); empty: nothing.
  std::string closer;
  // json: the key of a call's arguments: "arguments", or "parameters" as llama 3.x writes them.
  std::string arguments_key = "arguments";
};

struct ToolSchema {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON Schema for the arguments object; null: any object
};

struct ToolCallsSpec {
  std::vector<ToolSchema> tools;  // the tools a call may name (a named tool_choice: that one)
  ToolCallSyntax syntax;
  bool parallel = true;  // false: exactly one call, then the output ends
  // A thinking model's thoughts before the calls: free text up to `thinking_close`, opened by
  // `thinking_open` (optional then), or from the start when the prompt already opened it
  // (`thinking_open` empty). Both empty: no thinking.
  std::string thinking_open, thinking_close;
  // The texts of the syntax (tool_call_literals() lists them) that are single special tokens of
  // the model's vocabulary: the grammar requires those tokens there (grammar::special_token),
  // and writes the others as text.
  std::vector<std::string> special_tokens;
};

struct FormatSpec {
  enum class Kind { json, gbnf, regex, choice, tool_calls };
  Kind kind = Kind::json;
  nlohmann::ordered_json json;       // json: "json" or a JSON Schema object
  std::string text;                  // gbnf: the grammar; regex: the pattern
  std::vector<std::string> choices;  // choice: the whole output is one of these
  ToolCallsSpec tool_calls;          // tool_calls

  static FormatSpec of_json(nlohmann::ordered_json format);
  static FormatSpec of_gbnf(std::string grammar);
  static FormatSpec of_regex(std::string pattern);
  static FormatSpec of_choice(std::vector<std::string> choices);
  static FormatSpec of_tool_calls(ToolCallsSpec calls);

  // Equal for specs that compile to the same grammar.
  std::string cache_key() const;
};

}  // namespace vkllm::sampling
