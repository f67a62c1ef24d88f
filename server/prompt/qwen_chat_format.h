// The markers of Qwen's chat format that its renderers write and its parsers read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace vkllm::prompt::qwen {

inline constexpr std::string_view kImStart = "<|im_start|>";
inline constexpr std::string_view kImEnd = "<|im_end|>";
inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";
inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kToolCallClose = "</tool_call>";

// What Qwen 3.5's and Qwen3-Coder's prompts say after the tools: the call format the models were
// trained on (their chat templates' words).
inline constexpr std::string_view kToolCallInstructions =
    "If you choose to call a function ONLY reply in the following format with NO "
    "suffix:\n\n<tool_call>\n"
    "<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\n"
    "multiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function "
    "calls MUST follow the specified format: an inner <function=...></function> block must be "
    "nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n"
    "- You may provide optional reasoning for your function call in natural language BEFORE the "
    "function call, but NOT after\n- If there is no function call available, answer the question "
    "like normal with your current knowledge and do not tell the user about function "
    "calls\n</IMPORTANT>";

// Length of the longest end of s that begins `tag` without being all of it (a tag the stream may
// still complete).
inline size_t partial_tag_at_end(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.ends_with(tag.substr(0, n))) return n;
  return 0;
}

}  // namespace vkllm::prompt::qwen
