#include "server/prompt/harmony_parser.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "server/prompt/ascii_space.h"

namespace vkllm::prompt {

namespace {

constexpr std::string_view kHarmonyStart = "<|start|>";
constexpr std::string_view kHarmonyMessage = "<|message|>";
constexpr std::string_view kHarmonyChannel = "<|channel|>";
constexpr std::string_view kHarmonyConstrain = "<|constrain|>";
constexpr std::array<std::string_view, 3> kHarmonyMessageEnds = {"<|end|>", "<|call|>",
                                                                 "<|return|>"};

// Length of the longest suffix of `s` that is a proper prefix of `tag`.
size_t harmony_overlap(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

std::string_view harmony_trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

struct HarmonyHeader {
  std::string role, channel, recipient;
};

// Ollama's parseHeader: `<|constrain|>` is its own word; the channel name runs from
// `<|channel|>` to the next space; the first remaining word is the role (`to=X` there makes it
// a tool message to X); else a `to=X` right after the role is the recipient.
HarmonyHeader parse_harmony_header(std::string raw) {
  HarmonyHeader h;
  if (size_t c = raw.find(kHarmonyConstrain); c != std::string::npos) {
    raw.insert(c, " ");
    raw = std::string(harmony_trim(raw));
  }
  if (size_t c = raw.find(kHarmonyChannel); c != std::string::npos) {
    std::string after = raw.substr(c + kHarmonyChannel.size());
    size_t end = 0;
    while (end < after.size() && !is_ascii_space(after[end])) ++end;
    h.channel = after.substr(0, end);
    raw = std::string(harmony_trim(raw.substr(0, c) + after.substr(end)));
  }
  std::vector<std::string> words;
  for (size_t i = 0; i < raw.size();) {
    while (i < raw.size() && is_ascii_space(raw[i])) ++i;
    size_t j = i;
    while (j < raw.size() && !is_ascii_space(raw[j])) ++j;
    if (j > i) words.push_back(raw.substr(i, j - i));
    i = j;
  }
  if (words.empty()) return h;
  if (words[0].starts_with("to=")) {
    h.recipient = words[0].substr(3);
    h.role = "tool";
  } else {
    h.role = words[0];
  }
  if (h.recipient.empty() && words.size() > 1 && words[1].starts_with("to=")) {
    h.recipient = words[1].substr(3);
  }
  return h;
}

// The first end tag in `s`: its position and length (npos when none).
std::pair<size_t, size_t> find_harmony_end(std::string_view s) {
  std::pair<size_t, size_t> best{std::string_view::npos, 0};
  for (std::string_view tag : kHarmonyMessageEnds) {
    size_t at = s.find(tag);
    if (at < best.first) best = {at, tag.size()};
  }
  return best;
}

size_t harmony_end_overlap(std::string_view s) {
  size_t n = 0;
  for (std::string_view tag : kHarmonyMessageEnds) n = std::max(n, harmony_overlap(s, tag));
  return n;
}

}  // namespace

HarmonyParser::HarmonyParser(std::string_view prefill, HarmonyFunctionNames names)
    : names_(std::move(names)) {
  if (prefill == "final" || prefill == "analysis") {
    state_ = State::kBody;
    route_ = prefill == "final" ? Route::kContent : Route::kThinking;
  } else {
    held_ = "assistant";  // the prompt ends with <|start|>assistant
    implicit_role_ = held_.size();
  }
}

void HarmonyParser::emit(std::string_view text, ParsedDelta& out) {
  if (text.empty()) return;
  switch (route_) {
    case Route::kContent:
      out.content.append(text);
      break;
    case Route::kThinking:
      out.thinking.append(text);
      break;
    case Route::kToolCall:
      tool_text_.append(text);
      break;
  }
}

void HarmonyParser::start_body(std::string_view header) {
  const HarmonyHeader h = parse_harmony_header(std::string(header));
  // As Ollama: the channel decides; an unknown or missing channel keeps the route, which is
  // content between messages.
  if (h.channel == "analysis") {
    route_ = h.recipient.empty() ? Route::kThinking : Route::kToolCall;
  } else if (h.channel == "commentary") {
    route_ = h.recipient.empty() ? Route::kContent : Route::kToolCall;
  } else if (h.channel == "final") {
    route_ = Route::kContent;
  }
  if (route_ == Route::kToolCall) {
    tool_name_ = h.recipient;
    tool_text_.clear();
  }
  state_ = State::kBody;
}

void HarmonyParser::end_message(ParsedDelta& out) {
  if (route_ == Route::kToolCall) {
    std::string name = tool_name_;
    if (name.starts_with("functions.")) name.erase(0, 10);
    auto args = nlohmann::ordered_json::parse(tool_text_, nullptr, false);
    if (!args.is_object()) {
      if (out.error.empty()) {
        out.error = "error parsing tool call: raw='" + tool_text_ + "', err=" +
                    (args.is_discarded() ? "invalid JSON" : "arguments are not a JSON object");
      }
    } else {
      ToolCall call;
      call.name = names_.user_name(name);
      call.arguments = std::move(args);
      out.tool_calls.push_back(std::move(call));
    }
    tool_text_.clear();
  }
  route_ = Route::kContent;
  state_ = State::kBetweenMessages;
}

void HarmonyParser::feed(std::string_view text, ParsedDelta& out) {
  held_.append(text);
  for (;;) {
    std::string_view buf = held_;
    switch (state_) {
      case State::kBetweenMessages: {
        // Text outside a message (Ollama drops it) is content.
        size_t at = buf.find(kHarmonyStart);
        if (at == std::string_view::npos) {
          size_t keep = harmony_overlap(buf, kHarmonyStart);
          emit(buf.substr(0, buf.size() - keep), out);
          held_.erase(0, buf.size() - keep);
          return;
        }
        emit(buf.substr(0, at), out);
        held_.erase(0, at + kHarmonyStart.size());
        implicit_role_ = 0;
        state_ = State::kHeader;
        break;
      }
      case State::kHeader: {
        size_t at = buf.find(kHarmonyMessage);
        if (at == std::string_view::npos) return;  // a header is decided only when complete
        start_body(buf.substr(0, at));
        held_.erase(0, at + kHarmonyMessage.size());
        implicit_role_ = 0;
        break;
      }
      case State::kBody: {
        auto [at, len] = find_harmony_end(buf);
        if (at == std::string_view::npos) {
          size_t keep = harmony_end_overlap(buf);
          emit(buf.substr(0, buf.size() - keep), out);
          held_.erase(0, buf.size() - keep);
          return;
        }
        emit(buf.substr(0, at), out);
        held_.erase(0, at + len);
        end_message(out);
        break;
      }
    }
  }
}

void HarmonyParser::finish(ParsedDelta& out) {
  switch (state_) {
    case State::kBetweenMessages:
      emit(held_, out);  // a partial <|start|>: text after all
      break;
    case State::kHeader:
      // A header that never completed (a model that writes no Harmony at all): its text is
      // content, less the role the prompt wrote.
      route_ = Route::kContent;
      emit(std::string_view(held_).substr(std::min(implicit_role_, held_.size())), out);
      break;
    case State::kBody:
      emit(held_, out);
      if (route_ == Route::kToolCall) end_message(out);
      break;
  }
  held_.clear();
}

}  // namespace vkllm::prompt
