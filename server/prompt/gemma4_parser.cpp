#include "server/prompt/gemma4_parser.h"

#include <algorithm>

#include "server/prompt/gemma4_tool_args.h"
#include "server/prompt/go_space.h"
#include "server/prompt/qwen_chat_format.h"

namespace vkllm::prompt {

namespace {

constexpr std::string_view kG4ChannelOpen = "<|channel>";
constexpr std::string_view kG4ChannelClose = "<channel|>";
constexpr std::string_view kG4CallOpen = "<|tool_call>";
constexpr std::string_view kG4CallClose = "<tool_call|>";
constexpr std::string_view kG4ResponseOpen = "<|tool_response>";
constexpr std::string_view kG4ChannelName = "thought\n";

// What streamed text must hold back at the end of s: a partial tag and the whitespace before it,
// or trailing whitespace (dropped if a tag follows).
size_t gemma4_held(std::string_view s, std::initializer_list<std::string_view> tags) {
  size_t tag = 0;
  for (auto t : tags) tag = std::max(tag, qwen::partial_tag_at_end(s, t));
  return tag + go_held_tail(s.substr(0, s.size() - tag));
}

}  // namespace

Gemma4Parser::Gemma4Parser(bool thinking, bool after_tool_result, nlohmann::ordered_json tools)
    : tools_(std::move(tools)), thinking_(thinking) {
  if (thinking && after_tool_result) state_ = State::kThinking;
}

void Gemma4Parser::feed(std::string_view text, ParsedDelta& out) {
  buf_ += text;
  while (step(out, false)) {
  }
}

void Gemma4Parser::finish(ParsedDelta& out) {
  while (step(out, true)) {
  }
  buf_.clear();
}

bool Gemma4Parser::step(ParsedDelta& out, bool done) {
  switch (state_) {
    case State::kContent:
      return step_content(out, done);
    case State::kThinking:
      return step_thinking(out, done);
    case State::kToolCall:
      return step_tool_call(out, done);
    case State::kAfterToolCall:
      return step_after_tool_call(done);
  }
  return false;
}

void Gemma4Parser::add_thinking(ParsedDelta& out, std::string_view text) const {
  if (thinking_) out.thinking += text;  // without thinking the channel's text is dropped
}

bool Gemma4Parser::step_content(ParsedDelta& out, bool done) {
  if (trim_leading_) {
    bool cut = false;
    buf_.erase(0, go_leading_space(buf_, &cut));
    if (buf_.empty() || (cut && !done)) return false;
    trim_leading_ = false;
  }
  // The first of the two tags opens the thinking or a call.
  const size_t channel = buf_.find(kG4ChannelOpen);
  const size_t call = buf_.find(kG4CallOpen);
  if (channel != std::string::npos || call != std::string::npos) {
    const bool at_call =
        channel == std::string::npos || (call != std::string::npos && call < channel);
    const size_t at = at_call ? call : channel;
    out.content += go_trim_right_space(std::string_view(buf_).substr(0, at));
    buf_.erase(0, at + (at_call ? kG4CallOpen.size() : kG4ChannelOpen.size()));
    state_ = at_call ? State::kToolCall : State::kThinking;
    strip_channel_name_ = !at_call;
    return true;
  }
  const size_t keep = done ? 0 : gemma4_held(buf_, {kG4ChannelOpen, kG4CallOpen});
  out.content += std::string_view(buf_).substr(0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  return false;
}

bool Gemma4Parser::step_thinking(ParsedDelta& out, bool done) {
  if (buf_.empty()) return false;
  if (strip_channel_name_) {
    if (buf_.starts_with(kG4ChannelName)) {
      buf_.erase(0, kG4ChannelName.size());
    } else if (!done && kG4ChannelName.starts_with(buf_)) {
      return false;  // the name may still come
    }
    strip_channel_name_ = false;
  }
  if (const size_t close = buf_.find(kG4ChannelClose); close != std::string::npos) {
    add_thinking(out, go_trim_right_space(std::string_view(buf_).substr(0, close)));
    buf_.erase(0, close + kG4ChannelClose.size());
    state_ = State::kContent;
    trim_leading_ = true;
    return true;
  }
  const size_t keep = done ? 0 : gemma4_held(buf_, {kG4ChannelClose});
  add_thinking(out, std::string_view(buf_).substr(0, buf_.size() - keep));
  buf_.erase(0, buf_.size() - keep);
  return false;
}

bool Gemma4Parser::step_tool_call(ParsedDelta& out, bool done) {
  const size_t close = buf_.find(kG4CallClose);
  if (close == std::string::npos && !(done && !buf_.empty())) return false;
  const std::string_view body = std::string_view(buf_).substr(0, close);
  if (auto call = parse_gemma4_tool_call(body, tools_)) {
    out.tool_calls.push_back(std::move(*call));
  } else {
    out.content += std::string(kG4CallOpen) + std::string(body);
    if (close != std::string::npos) out.content += kG4CallClose;
  }
  if (close == std::string::npos) {
    buf_.clear();
    state_ = State::kContent;
    return false;
  }
  buf_.erase(0, close + kG4CallClose.size());
  state_ = State::kAfterToolCall;
  return true;
}

bool Gemma4Parser::step_after_tool_call(bool done) {
  // Gemma 4 sometimes repeats <tool_call|> or starts <|tool_response> after a call: dropped.
  while (true) {
    bool cut = false;
    buf_.erase(0, go_leading_space(buf_, &cut));
    if (cut && !done) return false;
    if (buf_.starts_with(kG4CallClose)) {
      buf_.erase(0, kG4CallClose.size());
    } else if (buf_.starts_with(kG4ResponseOpen)) {
      buf_.erase(0, kG4ResponseOpen.size());
    } else {
      break;
    }
  }
  if (buf_.empty()) return false;
  if (kG4CallClose.starts_with(buf_) || kG4ResponseOpen.starts_with(buf_)) {
    if (done) {
      buf_.clear();
      state_ = State::kContent;
    }
    return false;
  }
  state_ = State::kContent;
  return true;
}

}  // namespace vkllm::prompt
