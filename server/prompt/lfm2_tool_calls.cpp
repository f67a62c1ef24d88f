#include "server/prompt/lfm2_tool_calls.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "server/prompt/go_space.h"

namespace vkllm::prompt {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kLfm2CallsStart = "<|tool_call_start|>";
constexpr std::string_view kLfm2CallsEnd = "<|tool_call_end|>";

bool lfm2_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Index of the parenthesis closing the one at `open` (quoted strings skipped); npos if none.
size_t lfm2_matching_paren(std::string_view s, size_t open) {
  int depth = 1;
  for (size_t i = open + 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth == 0) return i;
    } else if (c == '\'' || c == '"') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
    }
  }
  return std::string_view::npos;
}

// A Python literal's text as JSON: quotes made double, True/False/None as JSON's words.
std::optional<std::string> lfm2_python_literal_to_json(std::string_view s) {
  std::string out;
  bool in_string = false, escaped = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == quote) {
        out += '"';
        in_string = false;
        continue;
      } else if (quote == '\'' && c == '"') {
        out += "\\\"";
        continue;
      }
      out += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      in_string = true;
      quote = c;
      escaped = false;
      out += '"';
      continue;
    }
    auto ident_start = [](char ch) {
      return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_';
    };
    if (ident_start(c)) {
      size_t j = i + 1;
      while (j < s.size() && (ident_start(s[j]) || std::isdigit(static_cast<unsigned char>(s[j]))))
        ++j;
      const std::string_view ident = s.substr(i, j - i);
      out += ident == "True"    ? "true"
             : ident == "False" ? "false"
             : ident == "None"  ? "null"
                                : std::string(ident);
      i = j - 1;
      continue;
    }
    out += c;
  }
  if (in_string) return std::nullopt;
  return out;
}

ojson lfm2_python_literal(const std::string& token) {
  if (token.empty()) return "";
  if (token == "true" || token == "True") return true;
  if (token == "false" || token == "False") return false;
  if (token == "null" || token == "None") return nullptr;
  {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(token.c_str(), &end, 10);
    if (errno == 0 && end == token.c_str() + token.size() && !lfm2_ascii_space(token[0]))
      return static_cast<int64_t>(v);
  }
  {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (end == token.c_str() + token.size() && std::isfinite(v) && !lfm2_ascii_space(token[0]))
      return v;
  }
  if (token.starts_with('[') || token.starts_with('{')) {
    ojson j = ojson::parse(token, nullptr, false);
    if (!j.is_discarded()) return j;
    if (auto converted = lfm2_python_literal_to_json(token)) {
      j = ojson::parse(*converted, nullptr, false);
      if (!j.is_discarded()) return j;
    }
  }
  return token;
}

// The value starting at s[i]; `i` moves past it. nullopt for an unterminated quoted string.
std::optional<ojson> lfm2_argument_value(std::string_view s, size_t& i) {
  if (s[i] == '\'' || s[i] == '"') {
    const char quote = s[i++];
    const size_t start = i;
    while (i < s.size()) {
      if (s[i] == '\\' && i + 1 < s.size()) {
        i += 2;
        continue;
      }
      if (s[i] == quote) return ojson(std::string(s.substr(start, i++ - start)));
      ++i;
    }
    return std::nullopt;
  }
  // Unquoted: up to the next comma outside brackets and strings.
  const size_t start = i;
  int paren = 0, square = 0, curly = 0;
  bool in_string = false, escaped = false;
  char quote = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == quote) {
        in_string = false;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      in_string = true;
      quote = c;
    } else if (c == '(') {
      ++paren;
    } else if (c == ')') {
      paren -= paren > 0;
    } else if (c == '[') {
      ++square;
    } else if (c == ']') {
      square -= square > 0;
    } else if (c == '{') {
      ++curly;
    } else if (c == '}') {
      curly -= curly > 0;
    } else if (c == ',' && paren == 0 && square == 0 && curly == 0) {
      break;
    }
  }
  return lfm2_python_literal(go_trim_space(s.substr(start, i - start)));
}

bool lfm2_parse_arguments(std::string_view s, ojson& args) {
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ',' || lfm2_ascii_space(s[i]))) ++i;
    if (i >= s.size()) break;
    const size_t key_start = i;
    while (i < s.size() && s[i] != '=' && s[i] != ',') ++i;
    if (i >= s.size() || s[i] != '=') return false;
    const std::string key = go_trim_space(s.substr(key_start, i - key_start));
    if (key.empty()) return false;
    ++i;
    while (i < s.size() && lfm2_ascii_space(s[i])) ++i;
    if (i >= s.size()) return false;
    auto value = lfm2_argument_value(s, i);
    if (!value) return false;
    args[key] = std::move(*value);
    if (i < s.size() && s[i] == ',') ++i;
  }
  return true;
}

}  // namespace

std::optional<std::vector<ToolCall>> parse_lfm2_tool_calls(std::string_view text) {
  std::string content = go_trim_space(text);
  if (content.starts_with(kLfm2CallsStart))
    content = go_trim_space(content.substr(kLfm2CallsStart.size()));
  if (content.ends_with(kLfm2CallsEnd))
    content = go_trim_space(content.substr(0, content.size() - kLfm2CallsEnd.size()));
  if (content.size() >= 2 && content.front() == '[' && content.back() == ']')
    content = content.substr(1, content.size() - 2);
  std::vector<ToolCall> calls;
  std::string_view rest = content;
  while (!rest.empty()) {
    std::string trimmed = go_trim_space(rest);
    std::string_view r = trimmed;
    if (r.empty()) break;
    if (r.starts_with(',')) {
      trimmed = go_trim_space(r.substr(1));
      r = trimmed;
      if (r.empty()) break;
    }
    const size_t paren = r.find('(');
    if (paren == std::string_view::npos) return std::nullopt;
    ToolCall call;
    call.name = go_trim_space(r.substr(0, paren));
    if (call.name.empty()) return std::nullopt;
    const size_t close = lfm2_matching_paren(r, paren);
    if (close == std::string_view::npos) return std::nullopt;
    if (!lfm2_parse_arguments(r.substr(paren + 1, close - paren - 1), call.arguments))
      return std::nullopt;
    calls.push_back(std::move(call));
    // `rest` must outlive `trimmed`: keep the remainder in `content`.
    content = std::string(r.substr(close + 1));
    rest = content;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace vkllm::prompt
