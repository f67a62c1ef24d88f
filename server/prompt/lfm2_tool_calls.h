// LFM2's tool calls, the way Ollama's lfm2 parser reads them: Python-style calls
// [name(key='value', n=1), other(...)] (the brackets optional), keyword arguments only. A quoted
// value is the text between its quotes as written (escapes kept); an unquoted one is true/True,
// false/False, null/None, an integer, a float, a JSON (or Python-literal) list or dict, else its
// text.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "server/prompt/prompt.h"

namespace vkllm::prompt {

// The calls in `text` (what stands between <|tool_call_start|> and <|tool_call_end|>, stray
// wrapper tags tolerated); nullopt when it is not a list of such calls.
std::optional<std::vector<ToolCall>> parse_lfm2_tool_calls(std::string_view text);

}  // namespace vkllm::prompt
