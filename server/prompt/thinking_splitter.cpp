#include "server/prompt/thinking_splitter.h"
#include "server/prompt/ascii_space.h"

#include <algorithm>
#include <utility>

namespace vkllm::prompt {

namespace {

size_t skip_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_ascii_space(s[i])) ++i;
  return i;
}

// Length of the longest suffix of `s` that is a proper prefix of `tag`.
size_t tag_overlap(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ThinkingSplitter::ThinkingSplitter(std::string open_tag, std::string close_tag, bool starts_inside)
    : open_(std::move(open_tag)),
      close_(std::move(close_tag)),
      state_(starts_inside ? State::kAfterOpen : State::kBeforeOpen) {}

void ThinkingSplitter::feed(std::string_view text, std::string& thinking, std::string& content) {
  held_.append(text);
  for (;;) {
    std::string_view buf = held_;
    switch (state_) {
      case State::kBeforeOpen: {
        std::string_view rest = buf.substr(skip_space(buf));
        if (rest.starts_with(open_)) {
          held_.erase(0, buf.size() - rest.size() + open_.size());
          state_ = State::kAfterOpen;
          continue;
        }
        // Only whitespace so far, or the start of the tag: undecided.
        if (std::string_view(open_).starts_with(rest)) return;
        // The output does not open with the tag: it has no thinking block (Ollama keeps the
        // leading whitespace in that case).
        content.append(buf);
        held_.clear();
        state_ = State::kDone;
        return;
      }
      case State::kAfterOpen:
      case State::kAfterClose: {
        held_.erase(0, skip_space(buf));
        if (held_.empty()) return;
        state_ = state_ == State::kAfterOpen ? State::kThinking : State::kDone;
        continue;
      }
      case State::kThinking: {
        if (size_t at = buf.find(close_); at != std::string_view::npos) {
          thinking.append(buf.substr(0, at));
          held_.erase(0, at + close_.size());
          state_ = State::kAfterClose;
          continue;
        }
        size_t keep = tag_overlap(buf, close_);
        thinking.append(buf.substr(0, buf.size() - keep));
        held_.erase(0, buf.size() - keep);
        return;
      }
      case State::kDone:
        content.append(held_);
        held_.clear();
        return;
    }
  }
}

void ThinkingSplitter::finish(std::string& thinking, std::string& content) {
  if (state_ == State::kThinking) {
    thinking.append(held_);
  } else {
    content.append(held_);  // kBeforeOpen: whitespace or a partial tag; others hold nothing
  }
  held_.clear();
}

}  // namespace vkllm::prompt
