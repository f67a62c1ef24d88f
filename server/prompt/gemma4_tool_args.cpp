#include "server/prompt/gemma4_tool_args.h"

#include <set>
#include <vector>

#include "server/prompt/go_space.h"
#include "server/prompt/go_value.h"

namespace vkllm::prompt {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kG4Delim = "<|\"|>";

bool g4a_at_delim(std::string_view s, size_t i) {
  return s.substr(i).starts_with(kG4Delim);
}

size_t g4a_skip_space(std::string_view s, size_t i) {
  return i >= s.size() ? s.size() : i + go_leading_space(s.substr(i));
}

size_t g4a_trim_right_index(std::string_view s) {
  return s.size() - go_trailing_space(s);
}

// End (one past the closing quote) of the JSON string starting at s[start], or npos.
size_t g4a_json_string_end(std::string_view s, size_t start) {
  bool escaped = false;
  for (size_t i = start + 1; i < s.size(); ++i) {
    if (s[i] == '"' && !escaped) return i + 1;
    escaped = s[i] == '\\' && !escaped;
  }
  return std::string_view::npos;
}

// End of a bare key (Go: '_', letters and digits; any non-ASCII character counts as a letter).
size_t g4a_bare_key_end(std::string_view s, size_t i) {
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!(c == '_' || std::isalnum(c) || c >= 0x80)) break;
    ++i;
  }
  return i;
}

// The text between the delimiter at `i` and the next one; npos when it is never closed.
size_t g4a_delim_close(std::string_view s, size_t i) {
  return s.find(kG4Delim, i + kG4Delim.size());
}

std::optional<ojson> g4a_parse_object(const std::string& json) {
  ojson j = ojson::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::string g4a_repair_single_quoted(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (g4a_at_delim(s, i)) {
      const size_t close = g4a_delim_close(s, i);
      if (close == std::string_view::npos) {
        out += s.substr(i);
        break;
      }
      out += s.substr(i, close + kG4Delim.size() - i);
      i = close + kG4Delim.size();
      continue;
    }
    if (s[i] == '"') {
      if (const size_t end = g4a_json_string_end(s, i); end != std::string_view::npos) {
        out += s.substr(i, end - i);
        i = end;
        continue;
      }
    }
    if (s[i] != ':') {
      out += s[i++];
      continue;
    }
    out += s[i++];
    const size_t value = g4a_skip_space(s, i);
    out += s.substr(i, value - i);
    i = value;
    if (i >= s.size() || s[i] != '\'') continue;
    // A single-quoted value ends at the next unescaped quote.
    bool escaped = false, closed = false;
    size_t j = i + 1;
    for (; j < s.size(); ++j) {
      if (s[j] == '\'' && !escaped) {
        closed = true;
        break;
      }
      escaped = s[j] == '\\' && !escaped;
    }
    if (!closed) continue;
    out += std::string(kG4Delim) + std::string(s.substr(i + 1, j - i - 1)) + std::string(kG4Delim);
    i = j + 1;
    if (g4a_at_delim(s, i)) i += kG4Delim.size();  // a stray delimiter after the quote
  }
  return out;
}

std::string g4a_repair_missing_delimiter(std::string s) {
  size_t count = 0;
  for (size_t at = s.find(kG4Delim); at != std::string::npos; at = s.find(kG4Delim, at + 1))
    ++count;
  if (count % 2 == 0) return s;
  size_t at = g4a_trim_right_index(s);
  if (at > 0 && (s[at - 1] == '}' || s[at - 1] == ']')) --at;
  s.insert(at, kG4Delim);
  return s;
}

std::string g4a_repair_missing_close(std::string s) {
  if (!std::string_view(s).substr(go_leading_space(s)).starts_with('{')) return s;
  const size_t end = g4a_trim_right_index(s);
  if (end > 0 && s[end - 1] == '}') return s;
  s.insert(end, "}");
  return s;
}

const ojson* g4a_tool_properties(std::string_view name, const ojson& tools) {
  if (!tools.is_array()) return nullptr;
  for (const auto& t : tools) {
    const auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object()) continue;
    const auto n = fn->find("name");
    if (n == fn->end() || !n->is_string() || n->get_ref<const std::string&>() != name) continue;
    const auto params = fn->find("parameters");
    if (params == fn->end() || !params->is_object()) return nullptr;
    const auto props = params->find("properties");
    return props != params->end() && props->is_object() ? &*props : nullptr;
  }
  return nullptr;
}

bool g4a_accepts_string(const ojson& prop) {
  if (!prop.is_object()) return false;
  if (const auto t = prop.find("type"); t != prop.end()) {
    auto is_string = [](const ojson& v) {
      if (!v.is_string()) return false;
      std::string s = v.get<std::string>();
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s == "string";
    };
    if (is_string(*t)) return true;
    if (t->is_array())
      for (const auto& e : *t)
        if (is_string(e)) return true;
  }
  if (const auto any = prop.find("anyOf"); any != prop.end() && any->is_array())
    for (const auto& b : *any)
      if (g4a_accepts_string(b)) return true;
  return false;
}

// Where the value of `key` starts (after its colon), searching from `from`; npos if nowhere.
size_t g4a_value_start(std::string_view s, std::string_view key, size_t from) {
  for (size_t i = from; i < s.size(); ++i) {
    if (g4a_at_delim(s, i)) {
      const size_t close = g4a_delim_close(s, i);
      if (close == std::string_view::npos) return std::string_view::npos;
      i = close + kG4Delim.size() - 1;
      continue;
    }
    if (s[i] == '"') {
      if (const size_t end = g4a_json_string_end(s, i); end != std::string_view::npos) {
        i = end - 1;
        continue;
      }
    }
    if (s[i] != '{' && s[i] != ',') continue;
    const size_t k = g4a_skip_space(s, i + 1);
    if (!s.substr(k).starts_with(key)) continue;
    const size_t colon = g4a_skip_space(s, k + key.size());
    if (colon < s.size() && s[colon] == ':') return colon + 1;
  }
  return std::string_view::npos;
}

bool g4a_starts_structured(std::string_view s, size_t pos) {
  if (pos >= s.size()) return false;
  if (g4a_at_delim(s, pos)) return true;
  const char c = s[pos];
  return c == '\'' || c == '"' || c == '{' || c == '[' || c == '-' || (c >= '0' && c <= '9') ||
         c == 't' || c == 'f' || c == 'n';
}

// A raw value runs to the comma before the next key the schema knows, or to the closing brace.
size_t g4a_raw_value_end(std::string_view s, size_t start, const ojson& props) {
  for (size_t i = start; i < s.size(); ++i) {
    if (s[i] != ',') continue;
    const size_t k = g4a_skip_space(s, i + 1);
    const size_t ke = g4a_bare_key_end(s, k);
    if (ke == k) continue;
    const size_t colon = g4a_skip_space(s, ke);
    if (colon < s.size() && s[colon] == ':' && props.contains(std::string(s.substr(k, ke - k))))
      return i;
  }
  const size_t end = g4a_trim_right_index(s);
  if (end > start && s[end - 1] == '}') return end - 1;
  return s.size();
}

std::optional<std::string> g4a_quote_raw_string_value(std::string_view s, std::string_view name,
                                                      const ojson& tools) {
  const ojson* props = g4a_tool_properties(name, tools);
  if (!props) return std::nullopt;
  for (auto it = props->begin(); it != props->end(); ++it) {
    if (!g4a_accepts_string(it.value())) continue;
    for (size_t from = 0; from < s.size();) {
      const size_t v = g4a_value_start(s, it.key(), from);
      if (v == std::string_view::npos) break;
      if (g4a_starts_structured(s, g4a_skip_space(s, v))) {
        from = v;
        continue;
      }
      const size_t e = g4a_raw_value_end(s, v, *props);
      return std::string(s.substr(0, v)) + std::string(kG4Delim) + std::string(s.substr(v, e - v)) +
             std::string(kG4Delim) + std::string(s.substr(e));
    }
  }
  return std::nullopt;
}

std::optional<ojson> g4a_repaired_arguments(std::string_view args, std::string_view name,
                                            const ojson& tools) {
  std::vector<std::string> candidates;
  std::set<std::string> seen;
  auto add = [&](const std::string& original, bool close_object) {
    std::string c = g4a_repair_missing_delimiter(g4a_repair_single_quoted(original));
    if (close_object || c != original) c = g4a_repair_missing_close(std::move(c));
    if (seen.insert(c).second) candidates.push_back(std::move(c));
  };
  add(std::string(args), false);
  if (auto raw = g4a_quote_raw_string_value(args, name, tools)) add(*raw, true);
  for (const auto& c : candidates)
    if (auto j = g4a_parse_object(gemma4_args_to_json(c))) return j;
  return std::nullopt;
}

}  // namespace

std::string gemma4_args_to_json(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    if (g4a_at_delim(s, i)) {
      const size_t close = g4a_delim_close(s, i);
      if (close != std::string_view::npos) {
        const size_t from = i + kG4Delim.size();
        out += go_json_string(std::string(s.substr(from, close - from)));
        i = close + kG4Delim.size();
        continue;
      }
    }
    if (s[i] == '"') {
      if (const size_t end = g4a_json_string_end(s, i); end != std::string_view::npos) {
        out += s.substr(i, end - i);
        i = end;
        continue;
      }
    }
    const char c = s[i++];
    out += c;
    if (c != '{' && c != ',') continue;
    // A bare key right after { or , (spaces allowed before it, none before its colon).
    const size_t k = g4a_skip_space(s, i);
    out += s.substr(i, k - i);
    i = k;
    const size_t ke = g4a_bare_key_end(s, k);
    if (ke > k && ke < s.size() && s[ke] == ':') {
      out += "\"" + std::string(s.substr(k, ke - k)) + "\":";
      i = ke + 1;
    }
  }
  return out;
}

std::optional<ToolCall> parse_gemma4_tool_call(std::string_view body, const ojson& tools) {
  if (!body.starts_with("call:")) return std::nullopt;
  body.remove_prefix(5);
  const size_t brace = body.find('{');
  if (brace == std::string_view::npos) return std::nullopt;
  ToolCall call;
  call.name = go_trim_space(body.substr(0, brace));
  const std::string_view args = body.substr(brace);
  std::optional<ojson> parsed = g4a_parse_object(gemma4_args_to_json(args));
  if (!parsed) parsed = g4a_repaired_arguments(args, call.name, tools);
  if (!parsed) return std::nullopt;
  call.arguments = std::move(*parsed);
  return call;
}

}  // namespace vkllm::prompt
