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

// Length of the longest end of s that begins `tag` without being all of it (a tag the stream may
// still complete).
inline size_t partial_tag_at_end(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.ends_with(tag.substr(0, n))) return n;
  return 0;
}

}  // namespace vkllm::prompt::qwen
