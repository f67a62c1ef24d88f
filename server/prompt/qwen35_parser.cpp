#include "server/prompt/qwen35_parser.h"

#include <algorithm>

#include "server/prompt/go_space.h"
#include "server/prompt/qwen_chat_format.h"

namespace vkllm::prompt {

using qwen::kThinkClose;
using qwen::kThinkOpen;
using qwen::kToolCallOpen;

Qwen35Parser::Qwen35Parser(bool thinking, bool assistant_prefill, nlohmann::ordered_json tools)
    : answer_(std::move(tools)),
      state_(thinking && !assistant_prefill ? State::kThinking : State::kAnswer),
      may_open_(state_ == State::kThinking) {}

void Qwen35Parser::feed(std::string_view text, ParsedDelta& out) {
  buf_ += text;
  while (step(out)) {
  }
}

bool Qwen35Parser::step(ParsedDelta& out) {
  switch (state_) {
    case State::kThinking:
      return step_thinking(out);
    case State::kAfterThinking: {
      bool cut = false;
      const size_t lead = go_leading_space(buf_, &cut);
      buf_.erase(0, lead);
      if (buf_.empty() || cut) return false;
      state_ = State::kAnswer;
      return true;
    }
    case State::kAnswer:
      if (!buf_.empty()) answer_.feed(buf_, out.content, out.tool_calls);
      buf_.clear();
      return false;
  }
  return false;
}

bool Qwen35Parser::step_thinking(ParsedDelta& out) {
  if (may_open_) {
    bool cut = false;
    const size_t lead = go_leading_space(buf_, &cut);
    const std::string_view rest = std::string_view(buf_).substr(lead);
    if (rest.starts_with(kThinkOpen)) {
      buf_.erase(0, lead + kThinkOpen.size());
      may_open_ = false;
      trim_leading_ = true;
      return true;
    }
    if (cut || kThinkOpen.starts_with(rest)) return false;  // may still be the tag
    may_open_ = false;
  }
  if (trim_leading_) {
    bool cut = false;
    buf_.erase(0, go_leading_space(buf_, &cut));
    if (buf_.empty() || cut) return false;
    trim_leading_ = false;
  }
  // The thinking ends at </think>, or at a tool call the model started without closing it.
  const size_t close = buf_.find(kThinkClose);
  const size_t call = buf_.find(kToolCallOpen);
  if (close != std::string::npos || call != std::string::npos) {
    const bool at_call = close == std::string::npos || (call != std::string::npos && call < close);
    const size_t at = at_call ? call : close;
    out.thinking += go_trim_right_space(std::string_view(buf_).substr(0, at));
    const size_t after = at_call ? at : at + kThinkClose.size();
    buf_.erase(0, after);
    state_ = at_call ? State::kAnswer : State::kAfterThinking;
    return true;
  }
  // Hold a possible tag at the end and the whitespace before it (dropped if a tag follows).
  const std::string_view s = buf_;
  const size_t tag = std::max(qwen::partial_tag_at_end(s, kThinkClose),
                              qwen::partial_tag_at_end(s, kToolCallOpen));
  const size_t keep = tag + go_held_tail(s.substr(0, s.size() - tag));
  out.thinking += s.substr(0, s.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  return false;
}

void Qwen35Parser::finish(ParsedDelta& out) {
  if (state_ == State::kThinking) {
    out.thinking += go_trim_right_space(buf_);
  } else if (state_ == State::kAnswer && !buf_.empty()) {
    answer_.feed(buf_, out.content, out.tool_calls);
  }
  buf_.clear();
  answer_.finish(out.content);
}

}  // namespace vkllm::prompt
