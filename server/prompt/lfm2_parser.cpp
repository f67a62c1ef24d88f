#include "server/prompt/lfm2_parser.h"

#include <algorithm>

#include "server/prompt/go_space.h"
#include "server/prompt/lfm2_tool_calls.h"
#include "server/prompt/qwen_chat_format.h"

namespace vkllm::prompt {

namespace {

constexpr std::string_view kLfm2PThinkOpen = "<think>";
constexpr std::string_view kLfm2PThinkClose = "</think>";
constexpr std::string_view kLfm2PCallStart = "<|tool_call_start|>";
constexpr std::string_view kLfm2PCallEnd = "<|tool_call_end|>";

// Trailing text streamed output must hold: a partial `tag` and the whitespace before it, or
// trailing whitespace.
size_t lfm2_held(std::string_view s, std::string_view tag) {
  const size_t partial = qwen::partial_tag_at_end(s, tag);
  return partial + go_held_tail(s.substr(0, s.size() - partial));
}

}  // namespace

Lfm2Parser::Lfm2Parser(bool thinking, bool assistant_prefill, std::vector<std::string> tool_names)
    : tool_names_(std::move(tool_names)),
      state_(thinking && !assistant_prefill ? State::kLookingForThinking : State::kContent) {}

void Lfm2Parser::feed(std::string_view text, ParsedDelta& out) {
  buf_ += text;
  while (step(out, false)) {
  }
}

void Lfm2Parser::finish(ParsedDelta& out) {
  while (step(out, true)) {
  }
  buf_.clear();
}

bool Lfm2Parser::step(ParsedDelta& out, bool done) {
  switch (state_) {
    case State::kLookingForThinking: {
      bool cut = false;
      const size_t lead = go_leading_space(buf_, &cut);
      const std::string_view rest = std::string_view(buf_).substr(lead);
      if (rest.starts_with(kLfm2PThinkOpen)) {
        buf_.erase(0, lead + kLfm2PThinkOpen.size());
        state_ = State::kThinking;
        trim_leading_ = true;
        return true;
      }
      if (!done && (cut || kLfm2PThinkOpen.starts_with(rest)))
        return false;  // may still be <think>
      buf_.erase(0, lead);
      state_ = State::kContent;
      return true;
    }
    case State::kThinking:
      return step_thinking(out, done);
    case State::kContent:
      return step_content(out, done);
    case State::kToolCalls:
      return step_tool_calls(out, done);
  }
  return false;
}

bool Lfm2Parser::step_thinking(ParsedDelta& out, bool done) {
  if (trim_leading_) {
    bool cut = false;
    buf_.erase(0, go_leading_space(buf_, &cut));
    if (buf_.starts_with(kLfm2PThinkOpen)) {  // a repeated <think>
      buf_.erase(0, kLfm2PThinkOpen.size());
      return true;
    }
    if (!done && (buf_.empty() || cut || kLfm2PThinkOpen.starts_with(buf_))) return false;
    trim_leading_ = false;
  }
  if (const size_t close = buf_.find(kLfm2PThinkClose); close != std::string::npos) {
    out.thinking += go_trim_right_space(std::string_view(buf_).substr(0, close));
    buf_.erase(0, close + kLfm2PThinkClose.size());
    state_ = State::kContent;
    trim_leading_ = true;
    return true;
  }
  if (done) {
    out.thinking += go_trim_right_space(buf_);
    buf_.clear();
    return false;
  }
  const size_t keep = lfm2_held(buf_, kLfm2PThinkClose);
  out.thinking += std::string_view(buf_).substr(0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  return false;
}

bool Lfm2Parser::may_be_bare_call(std::string_view text) const {
  text.remove_prefix(go_leading_space(text));
  if (text.starts_with('[')) text.remove_prefix(1);
  for (const auto& name : tool_names_) {
    const std::string call = name + "(";
    if (text.starts_with(call) || std::string_view(call).starts_with(text)) return true;
  }
  return false;
}

bool Lfm2Parser::step_content(ParsedDelta& out, bool done) {
  if (trim_leading_) {
    bool cut = false;
    buf_.erase(0, go_leading_space(buf_, &cut));
    if (!done && (buf_.empty() || cut)) return false;
    trim_leading_ = false;
  }
  const size_t start = buf_.find(kLfm2PCallStart);
  if (at_answer_start_ && !buf_.empty()) {
    at_answer_start_ = false;
    bare_call_ = !tool_names_.empty() && start == std::string::npos && may_be_bare_call(buf_);
  }
  if (bare_call_) {
    if (start == std::string::npos && may_be_bare_call(buf_)) {
      if (!done) return false;  // decided at the end
      if (!any_calls_) {
        if (auto calls = parse_lfm2_tool_calls(go_trim_space(buf_))) {
          const bool allowed = std::all_of(calls->begin(), calls->end(), [&](const ToolCall& c) {
            return std::find(tool_names_.begin(), tool_names_.end(), c.name) != tool_names_.end();
          });
          if (allowed) {
            for (auto& c : *calls) out.tool_calls.push_back(std::move(c));
            buf_.clear();
            return false;
          }
        }
      }
    }
    bare_call_ = false;
  }
  if (start != std::string::npos) {
    out.content += go_trim_right_space(std::string_view(buf_).substr(0, start));
    buf_.erase(0, start + kLfm2PCallStart.size());
    state_ = State::kToolCalls;
    return true;
  }
  const size_t keep = done ? 0 : lfm2_held(buf_, kLfm2PCallStart);
  out.content += std::string_view(buf_).substr(0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
  return false;
}

bool Lfm2Parser::step_tool_calls(ParsedDelta& out, bool done) {
  const size_t end = buf_.find(kLfm2PCallEnd);
  if (end == std::string::npos) {
    if (done && !buf_.empty()) {
      out.content += std::string(kLfm2PCallStart) + buf_;
      buf_.clear();
    }
    return false;
  }
  const std::string_view body = std::string_view(buf_).substr(0, end);
  auto calls = parse_lfm2_tool_calls(body);
  if (!calls) {
    out.content += std::string(kLfm2PCallStart) + std::string(body) + std::string(kLfm2PCallEnd);
    buf_.erase(0, end + kLfm2PCallEnd.size());
    state_ = State::kContent;
    return true;
  }
  any_calls_ = true;
  for (auto& c : *calls) out.tool_calls.push_back(std::move(c));
  buf_.erase(0, end + kLfm2PCallEnd.size());
  // Another call list may follow right away; otherwise the answer goes on.
  if (buf_.starts_with(kLfm2PCallStart)) {
    buf_.erase(0, kLfm2PCallStart.size());
    return true;
  }
  state_ = State::kContent;
  trim_leading_ = true;
  return true;
}

}  // namespace vkllm::prompt
