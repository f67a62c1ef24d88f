#include "server/prompt/ministral_parser.h"

#include <algorithm>

#include "server/prompt/go_space.h"
#include "server/prompt/qwen_chat_format.h"

namespace vkllm::prompt {

namespace {

constexpr std::string_view kMstToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kMstThink = "[THINK]";
constexpr std::string_view kMstThinkEnd = "[/THINK]";
constexpr std::string_view kMstArgs = "[ARGS]";

// Index of the brace or bracket closing the JSON value that starts s (strings and escapes
// skipped); npos while it is incomplete.
size_t mst_json_end(std::string_view s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

MinistralParser::MinistralParser(std::vector<std::string> tool_names)
    : tool_names_(std::move(tool_names)) {}

void MinistralParser::feed(std::string_view text, ParsedDelta& out) {
  buf_ += text;
  while (step(out)) {
  }
}

void MinistralParser::emit_call(std::string_view args, ParsedDelta& out) {
  const bool known = std::find(tool_names_.begin(), tool_names_.end(), name_) != tool_names_.end();
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(args, nullptr, false);
  if (known && !j.is_discarded() && j.is_object()) {
    out.tool_calls.push_back({"", 0, name_, std::move(j)});
  } else {
    out.content += std::string(kMstToolCalls) + name_ + std::string(kMstArgs) + std::string(args);
  }
  name_.clear();
}

bool MinistralParser::step(ParsedDelta& out) {
  switch (state_) {
    case State::kContent: {
      if (trim_leading_) {
        bool cut = false;
        buf_.erase(0, go_leading_space(buf_, &cut));
        if (buf_.empty() || cut) return false;
        trim_leading_ = false;
      }
      const size_t call = buf_.find(kMstToolCalls);
      const size_t think = buf_.find(kMstThink);
      if (call != std::string::npos || think != std::string::npos) {
        const bool at_call =
            think == std::string::npos || (call != std::string::npos && call < think);
        const size_t at = at_call ? call : think;
        out.content += go_trim_right_space(std::string_view(buf_).substr(0, at));
        buf_.erase(0, at + (at_call ? kMstToolCalls.size() : kMstThink.size()));
        state_ = at_call ? State::kToolName : State::kThinking;
        return true;
      }
      size_t tag = std::max(qwen::partial_tag_at_end(buf_, kMstToolCalls),
                            qwen::partial_tag_at_end(buf_, kMstThink));
      const std::string_view s = buf_;
      const size_t keep = tag + go_held_tail(s.substr(0, s.size() - tag));
      out.content += s.substr(0, s.size() - keep);
      buf_.erase(0, buf_.size() - keep);
      return false;
    }
    case State::kThinking: {
      if (const size_t end = buf_.find(kMstThinkEnd); end != std::string::npos) {
        out.thinking += std::string_view(buf_).substr(0, end);
        buf_.erase(0, end + kMstThinkEnd.size());
        state_ = State::kContent;
        trim_leading_ = true;
        return true;
      }
      const size_t keep = qwen::partial_tag_at_end(buf_, kMstThinkEnd);
      out.thinking += std::string_view(buf_).substr(0, buf_.size() - keep);
      buf_.erase(0, buf_.size() - keep);
      return false;
    }
    case State::kToolName: {
      const size_t args = buf_.find(kMstArgs);
      if (args == std::string::npos) return false;
      name_ = buf_.substr(0, args);
      buf_.erase(0, args + kMstArgs.size());
      state_ = State::kToolArgs;
      return true;
    }
    case State::kToolArgs: {
      const size_t end = mst_json_end(buf_);
      if (end == std::string::npos) return false;
      emit_call(std::string_view(buf_).substr(0, end + 1), out);
      buf_.erase(0, end + 1);
      state_ = State::kContent;
      return true;
    }
  }
  return false;
}

void MinistralParser::finish(ParsedDelta& out) {
  switch (state_) {
    case State::kContent:
      if (!trim_leading_) out.content += go_trim_right_space(buf_);
      break;
    case State::kThinking:
      out.thinking += buf_;
      break;
    case State::kToolName:
      out.content += std::string(kMstToolCalls) + buf_;
      break;
    case State::kToolArgs:
      out.content += std::string(kMstToolCalls) + name_ + std::string(kMstArgs) + buf_;
      break;
  }
  buf_.clear();
}

}  // namespace vkllm::prompt
