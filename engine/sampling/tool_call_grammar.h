// Forced tool calls (tool_choice "required", a named function, Anthropic's "any"/"tool") as a
// grammar: the output is one call, or several, in the model's own tool-call syntax, so the
// server's tool-call parser always finds them. ToolCallSyntax::Style picks the syntax:
//  - json: the JSON object {"name": <one of the tools>, "<arguments key>": <arguments>} after the
//    syntax's tag ("<tool_call>"), each call optionally followed by its closer ("</tool_call>");
//  - harmony (gpt-oss): `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`,
//    the arguments, `<|call|>`; one call, since <|call|> ends the turn;
//  - mistral: `[TOOL_CALLS]NAME[ARGS]` and the arguments;
//  - qwen_xml (Qwen 3.5, Qwen3-Coder): `<tool_call>\n<function=NAME>`, one
//    `\n<parameter=KEY>\nVALUE\n</parameter>` per property in schema order (required ones
//    always, the others optionally), `\n</function>\n</tool_call>`; a string (or untyped)
//    property's value is text (one of its enum values, if it has them), any other a JSON value
//    valid for its schema, as the qwen3-coder parser types values back.
// Arguments are valid for the tool's schema; a schema the JSON-Schema compiler does not support
// takes any object. With `parallel`, more calls may follow (each with its tag). A thinking model
// may think first (up to its closing text), as ToolCallsSpec says. The syntax's texts that are
// special tokens of the model (ToolCallsSpec::special_tokens) must be those tokens.
#pragma once

#include <string>
#include <vector>

#include "engine/sampling/format_spec.h"
#include "engine/sampling/grammar.h"

namespace vkllm::sampling {

// The fixed texts the grammar of `spec` writes (tags, thinking delimiters), for the server to find
// the special tokens among them (special_token_texts, token_constraint.h).
std::vector<std::string> tool_call_literals(const ToolCallsSpec& spec);

// Throws FormatError when there is no tool to call.
grammar::Grammar compile_tool_calls(const ToolCallsSpec& spec);

}  // namespace vkllm::sampling
