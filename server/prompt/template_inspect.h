// What Ollama reads from a template's tree (compat §5.5): the thinking tags around .Thinking in a
// range over .Messages, and the tool-call tag opening the first {{if .ToolCalls}} block (and the
// key its calls' arguments go under).
#pragma once

#include <string>

#include "server/prompt/go_template.h"

namespace vkllm::prompt {

void infer_thinking_tags(const GoTemplate& t, std::string& open, std::string& close);
std::string tool_call_tag(const GoTemplate& t);
// The key the template writes a call's arguments under: "parameters" (llama 3.x) or
// "arguments" (the default).
std::string tool_call_arguments_key(const GoTemplate& t);
// Whether the template writes each call as its tag, the name, then [ARGS] and the arguments
// (Mistral 3's [TOOL_CALLS]NAME[ARGS]{...}) rather than one JSON object.
bool tool_call_name_then_args(const GoTemplate& t);

}  // namespace vkllm::prompt
