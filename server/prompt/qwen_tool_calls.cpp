#include "server/prompt/qwen_tool_calls.h"

#include "server/prompt/go_space.h"
#include "server/prompt/qwen_chat_format.h"
#include "server/prompt/qwen_tool_values.h"

namespace vkllm::prompt {

using qwen::kToolCallClose;
using qwen::kToolCallOpen;

QwenToolCallParser::QwenToolCallParser(nlohmann::ordered_json tools) : tools_(std::move(tools)) {}

void QwenToolCallParser::feed(std::string_view text, std::string& content,
                              std::vector<ToolCall>& calls) {
  buf_ += text;
  while (true) {
    if (in_call_) {
      const size_t close = buf_.find(kToolCallClose);
      if (close == std::string::npos) return;  // calls are read whole: nothing streams from one
      const std::string raw = buf_.substr(0, close);
      if (auto call = parse_qwen_tool_call(raw, tools_)) {
        calls.push_back(std::move(*call));
      } else {
        content +=
            std::string(kToolCallOpen) + raw + std::string(kToolCallClose);  // not a call after all
      }
      buf_.erase(0, close + kToolCallClose.size());
      in_call_ = false;
      after_call_ = true;
      continue;
    }
    if (after_call_) {  // whitespace after a call goes, however the stream cuts it
      bool cut = false;
      buf_.erase(0, go_leading_space(buf_, &cut));
      if (buf_.empty() || cut) return;
      after_call_ = false;
    }
    const size_t open = buf_.find(kToolCallOpen);
    if (open != std::string::npos) {
      content += go_trim_right_space(std::string_view(buf_).substr(0, open));
      buf_.erase(0, open + kToolCallOpen.size());
      in_call_ = true;
      continue;
    }
    // Hold a possible tag at the end, and the whitespace before it (dropped if a tag follows).
    const std::string_view s = buf_;
    const size_t tag = qwen::partial_tag_at_end(s, kToolCallOpen);
    const size_t keep = tag + go_held_tail(s.substr(0, s.size() - tag));
    content += s.substr(0, s.size() - keep);
    buf_.erase(0, buf_.size() - keep);
    return;
  }
}

void QwenToolCallParser::finish(std::string& content) {
  if (in_call_) {
    content +=
        std::string(kToolCallOpen) + go_trim_right_space(buf_);  // a call the output never closed
  } else {
    content += go_trim_right_space(buf_);
  }
  buf_.clear();
  in_call_ = false;
  after_call_ = false;
}

}  // namespace vkllm::prompt
