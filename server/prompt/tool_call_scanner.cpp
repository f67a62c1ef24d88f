#include "server/prompt/tool_call_scanner.h"
#include "server/prompt/ascii_space.h"

#include <algorithm>
#include <utility>

namespace vkllm::prompt {

namespace {

using Json = nlohmann::ordered_json;

// Markers the families put before their calls whatever their template says: llama 3.x's
// <|python_tag|>, qwen's <tool_call>, mistral's [TOOL_CALLS], granite's and phi-4's <|tool_call|>.
constexpr std::string_view kFamilyTags[] = {"<|python_tag|>", "<tool_call>", "[TOOL_CALLS]",
                                            "<|tool_call|>"};
// What the families write after a call (command-r closes its ```json block).
constexpr std::string_view kClosers[] = {"</tool_call>", "<|/tool_call|>", "[/TOOL_CALLS]",
                                         "```json", "```"};
// Between a mistral tool name and its arguments.
constexpr std::string_view kArgsMarker = "[ARGS]";
constexpr std::string_view kCallIdMarker = "[CALL_ID]";

bool is_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// The template's tag, trimmed; "{" when it has none.
std::string tag_or_default(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_ascii_space(s[b])) ++b;
  while (e > b && is_ascii_space(s[e - 1])) --e;
  return std::string(b == e ? std::string_view("{") : s.substr(b, e - b));
}

// Arguments given as an object, a JSON string holding one, or null (none).
bool read_arguments(const Json& value, Json& out) {
  if (value.is_object()) {
    out = value;
    return true;
  }
  if (value.is_null()) {
    out = Json::object();
    return true;
  }
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    Json parsed = Json::parse(text.begin(), text.end(), nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) {
      out = std::move(parsed);
      return true;
    }
  }
  return false;
}

}  // namespace

ToolCallScanner::ToolCallScanner(std::string tag, std::vector<std::string> tool_names)
    : tag_(tag_or_default(tag)), names_(std::move(tool_names)) {
  std::erase(names_, std::string());  // a nameless tool can never be called
  json_tag_ = tag_ == "{" || tag_ == "[";
  json_allowed_ = json_tag_;
  if (!json_tag_) tags_.push_back(tag_);
  for (std::string_view t : kFamilyTags) {
    if (t != tag_) tags_.emplace_back(t);
  }
  skippables_ = tags_;
  for (std::string_view t : kClosers) skippables_.emplace_back(t);
}

void ToolCallScanner::feed(std::string_view text, std::string& content,
                           std::vector<ToolCall>& calls) {
  buf_.append(text);
  for (;;) {
    if (!calling_) {
      look_for_tag(content);
      if (!calling_) return;
    }
    if (read_calls(calls)) return;
    give_up_region(content);
  }
}

void ToolCallScanner::finish(std::string& content, std::vector<ToolCall>& calls) {
  finishing_ = true;
  feed({}, content, calls);
  if (calling_ && region_calls_ > 0) {
    content.append(buf_, cursor_);
  } else {
    content.append(buf_);
  }
  buf_.clear();
  calling_ = false;
  scan_ = ObjectScan{};
}

void ToolCallScanner::look_for_tag(std::string& content) {
  size_t p = 0;
  size_t tag_length = 0;
  bool json = false;
  for (; p < buf_.size(); ++p) {
    bool partial = false;
    auto consider = [&](std::string_view t, bool is_json) {
      size_t length = 0;
      Match m = match_tag(p, t, length);
      if (m == Match::kPartial) partial = true;
      if (m == Match::kFull && length > tag_length) {
        tag_length = length;
        json = is_json;
      }
    };
    // With a JSON tag the answer may open with an object or with an array of them.
    if (json_tag_ && json_allowed_) {
      consider("{", true);
      consider("[", true);
    }
    for (const auto& t : tags_) consider(t, false);
    // A longer tag may still start here: hold from here on.
    if (partial) {
      tag_length = 0;
      break;
    }
    if (tag_length > 0) break;
    if (!is_ascii_space(buf_[p])) json_allowed_ = false;
  }
  content.append(buf_, 0, p);
  buf_.erase(0, p);
  scan_ = ObjectScan{};
  if (tag_length == 0) return;
  calling_ = true;
  region_tag_ = tag_length;
  region_calls_ = 0;
  // A JSON tag is the start of the call itself.
  cursor_ = json ? 0 : tag_length;
}

bool ToolCallScanner::read_calls(std::vector<ToolCall>& calls) {
  for (;;) {
    if (cursor_ >= buf_.size()) return true;
    // Separators, brackets and closing tags between calls.
    bool partial = false;
    size_t skip = 0;
    for (const auto& s : skippables_) {
      size_t length = 0;
      Match m = match_tag(cursor_, s, length);
      if (m == Match::kPartial) partial = true;
      if (m == Match::kFull) skip = std::max(skip, length);
    }
    if (partial) return true;
    if (skip > 0) {
      cursor_ += skip;
      continue;
    }
    char c = buf_[cursor_];
    if (is_ascii_space(c) || c == ',' || c == ';' || c == '[' || c == ']') {
      ++cursor_;
      continue;
    }

    std::string name;
    size_t object_start = cursor_;
    if (c != '{') {
      // A known tool name followed by its arguments object (mistral's name[ARGS]{...}).
      size_t length = 0;
      Match m = match_name(cursor_, length);
      if (m == Match::kPartial) return true;
      if (m == Match::kNo) return false;
      name = buf_.substr(cursor_, length);
      size_t j = cursor_ + length;
      for (;;) {
        if (j >= buf_.size()) return true;
        if (is_ascii_space(buf_[j])) {
          ++j;
          continue;
        }
        size_t marker = 0;
        Match args = match_tag(j, kArgsMarker, marker);
        if (args == Match::kPartial) return true;
        if (args == Match::kFull) {
          j += marker;
          continue;
        }
        Match id = match_tag(j, kCallIdMarker, marker);
        if (id == Match::kPartial) return true;
        if (id == Match::kFull) {
          j += marker;
          while (j < buf_.size() && is_id_char(buf_[j])) ++j;
          continue;
        }
        break;
      }
      if (buf_[j] != '{') return false;
      object_start = j;
    }

    size_t end = object_end(object_start);
    if (end == 0) return true;
    Json value = Json::parse(buf_.begin() + object_start, buf_.begin() + end, nullptr, false);
    if (value.is_discarded()) return false;
    size_t before = calls.size();
    if (name.empty()) {
      collect_calls(value, calls);
    } else {
      calls.push_back(ToolCall{.id = {}, .index = 0, .name = name, .arguments = std::move(value)});
    }
    if (calls.size() == before) return false;
    region_calls_ += static_cast<int>(calls.size() - before);
    buf_.erase(0, end);
    cursor_ = 0;
    scan_ = ObjectScan{};
  }
}

void ToolCallScanner::give_up_region(std::string& content) {
  if (region_calls_ == 0) {
    // The tag did not open a call: it is content, and the search resumes right after it.
    for (size_t i = 0; i < region_tag_; ++i) {
      if (!is_ascii_space(buf_[i])) json_allowed_ = false;
    }
    content.append(buf_, 0, region_tag_);
    buf_.erase(0, region_tag_);
  } else {
    buf_.erase(0, cursor_);
  }
  calling_ = false;
  cursor_ = 0;
  region_calls_ = 0;
  scan_ = ObjectScan{};
}

size_t ToolCallScanner::object_end(size_t start) {
  if (scan_.start != start) scan_ = ObjectScan{.start = start, .pos = start};
  for (; scan_.pos < buf_.size(); ++scan_.pos) {
    char c = buf_[scan_.pos];
    if (scan_.in_string) {
      if (scan_.escaped) {
        scan_.escaped = false;
      } else if (c == '\\') {
        scan_.escaped = true;
      } else if (c == '"') {
        scan_.in_string = false;
      }
    } else if (c == '"') {
      scan_.in_string = true;
    } else if (c == '{') {
      ++scan_.depth;
    } else if (c == '}' && --scan_.depth == 0) {
      size_t end = scan_.pos + 1;
      scan_ = ObjectScan{};
      return end;
    }
  }
  return 0;
}

// Whitespace in a tag matches any run of whitespace, none included, so command-r's
// "Action: ```json\n[" also matches "Action:```json [".
ToolCallScanner::Match ToolCallScanner::match_tag(size_t pos, std::string_view tag,
                                                  size_t& length) const {
  size_t i = pos, j = 0;
  while (j < tag.size()) {
    if (is_ascii_space(tag[j])) {
      while (j < tag.size() && is_ascii_space(tag[j])) ++j;
      while (i < buf_.size() && is_ascii_space(buf_[i])) ++i;
      if (j < tag.size() && i >= buf_.size()) return finishing_ ? Match::kNo : Match::kPartial;
      continue;
    }
    if (i >= buf_.size()) return finishing_ ? Match::kNo : Match::kPartial;
    if (buf_[i] != tag[j]) return Match::kNo;
    ++i;
    ++j;
  }
  length = i - pos;
  return Match::kFull;
}

ToolCallScanner::Match ToolCallScanner::match_name(size_t pos, size_t& length) const {
  std::string_view rest = std::string_view(buf_).substr(pos);
  Match best = Match::kNo;
  length = 0;
  for (const auto& n : names_) {
    if (n.empty()) continue;
    if (rest.starts_with(n)) {
      if (best != Match::kPartial) best = Match::kFull;
      length = std::max(length, n.size());
    } else if (!finishing_ && rest.size() < n.size() && std::string_view(n).starts_with(rest)) {
      best = Match::kPartial;  // a longer name may still follow
    }
  }
  return best;
}

void ToolCallScanner::collect_calls(const Json& value, std::vector<ToolCall>& calls) const {
  if (value.is_array()) {
    for (const auto& item : value) collect_calls(item, calls);
    return;
  }
  if (!value.is_object()) return;
  for (const char* key : {"name", "tool_name"}) {
    auto it = value.find(key);
    if (it == value.end() || !it->is_string()) continue;
    // A named object is a call or nothing; its arguments are not searched for calls.
    const auto& name = it->get_ref<const std::string&>();
    if (!known(name)) return;
    Json arguments = Json::object();
    for (const char* args_key : {"arguments", "parameters"}) {
      auto a = value.find(args_key);
      if (a == value.end()) continue;
      if (!read_arguments(*a, arguments)) return;
      break;
    }
    calls.push_back(
        ToolCall{.id = {}, .index = 0, .name = name, .arguments = std::move(arguments)});
    return;
  }
  for (const auto& [key, child] : value.items()) {
    if (child.is_object() && known(key)) {
      calls.push_back(ToolCall{.id = {}, .index = 0, .name = key, .arguments = child});
      return;
    }
  }
  for (const auto& [key, child] : value.items()) collect_calls(child, calls);
}

bool ToolCallScanner::known(std::string_view name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

}  // namespace vkllm::prompt
