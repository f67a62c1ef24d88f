// Forced tool calls (tool_choice "required", a named function, Anthropic's "any"/"tool") as a
// grammar: the output is one call, or several, in the model's own tool-call syntax, so the
// server's tool-call parser always finds them. A call is the JSON object
// {"name": <one of the tools>, "<arguments key>": <arguments valid for that tool's schema>};
// a tool whose parameter schema the JSON-Schema compiler does not support takes any object.
// After the syntax's tag ("<tool_call>") each call may be followed by its closer
// ("</tool_call>"); with `parallel`, more calls (each with its tag) may follow. A thinking
// model may think first (up to its closing tag), as ToolCallsSpec says.
#pragma once

#include "engine/sampling/format_spec.h"
#include "engine/sampling/grammar.h"

namespace vkllm::sampling {

// Throws FormatError when there is no tool to call.
grammar::Grammar compile_tool_calls(const ToolCallsSpec& spec);

}  // namespace vkllm::sampling
