#include "server/prompt/qwen_tool_values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace vkllm::prompt {

using ojson = nlohmann::ordered_json;

namespace {

std::string qwen_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool qwen_all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view qwen_without_sign(std::string_view s) {
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
  return s;
}

// Go's strconv.ParseInt(s, 10, 64).
std::optional<int64_t> qwen_parse_int(std::string_view s) {
  if (!qwen_all_digits(qwen_without_sign(s))) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A decimal number as Go's strconv.ParseFloat reads one: digits with an optional fraction and
// exponent (the infinities, NaN and hexadecimal forms it also takes are left as strings).
std::optional<double> qwen_parse_float(std::string_view s) {
  std::string_view body = qwen_without_sign(s);
  const size_t e = body.find_first_of("eE");
  std::string_view mantissa = body.substr(0, e);
  if (e != std::string_view::npos && !qwen_all_digits(qwen_without_sign(body.substr(e + 1))))
    return std::nullopt;
  const size_t dot = mantissa.find('.');
  std::string_view whole = mantissa.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : mantissa.substr(dot + 1);
  if (whole.empty() && fraction.empty()) return std::nullopt;
  if ((!whole.empty() && !qwen_all_digits(whole)) ||
      (!fraction.empty() && !qwen_all_digits(fraction)))
    return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Go decodes JSON objects into maps, whose keys encoding/json writes sorted.
std::optional<ojson> qwen_parse_json_of(std::string_view raw, bool want_array) {
  const auto j = nlohmann::json::parse(raw, nullptr, false);
  if (j.is_discarded() || (want_array ? !j.is_array() : !j.is_object())) return std::nullopt;
  return ojson(j);
}

void qwen_add_types(const ojson& type, std::vector<std::string>& out) {
  if (type.is_string()) {
    out.push_back(type.get<std::string>());
  } else if (type.is_array()) {
    for (const auto& t : type)
      if (t.is_string()) out.push_back(t.get<std::string>());
  }
}

// The declared types of a tool's parameter: its type, or the types of its anyOf alternatives.
std::vector<std::string> qwen_parameter_types(const ojson& tools, const std::string& function,
                                              const std::string& parameter) {
  std::vector<std::string> types;
  if (!tools.is_array()) return types;
  for (const auto& tool : tools) {
    if (!tool.is_object() || !tool.contains("function")) continue;
    const ojson& fn = tool["function"];
    if (!fn.is_object() || fn.value("name", ojson()) != function) continue;
    const ojson props = fn.value("parameters", ojson::object()).value("properties", ojson());
    if (!props.is_object() || !props.contains(parameter)) return types;
    const ojson& p = props[parameter];
    if (!p.is_object()) return types;
    if (p.contains("anyOf") && p["anyOf"].is_array() && !p["anyOf"].empty()) {
      for (const auto& alt : p["anyOf"])
        if (alt.is_object() && alt.contains("type")) qwen_add_types(alt["type"], types);
    } else if (p.contains("type")) {
      qwen_add_types(p["type"], types);
    }
    return types;
  }
  return types;
}

// The name in a `<tag=NAME>` opening at `at` (which holds `open`, e.g. "<function="), and where
// the tag ends; nullopt when no '>' closes it or the name is empty.
std::optional<std::string> qwen_tag_name(std::string_view raw, size_t at, std::string_view open,
                                         size_t& after) {
  const size_t start = at + open.size();
  const size_t close = raw.find('>', start);
  if (close == std::string_view::npos || close == start) return std::nullopt;
  after = close + 1;
  return std::string(raw.substr(start, close - start));
}

}  // namespace

ojson qwen_typed_value(std::string_view raw, const std::vector<std::string>& types) {
  if (qwen_lower(raw) == "null") return nullptr;
  if (types.empty()) return std::string(raw);
  auto has = [&types](std::string_view t) {
    return std::find(types.begin(), types.end(), t) != types.end();
  };
  const bool only = types.size() == 1;
  if (has("boolean")) {
    const std::string l = qwen_lower(raw);
    if (l == "true") return true;
    if (l == "false") return false;
    if (only) return false;
  }
  if (has("integer")) {
    if (auto i = qwen_parse_int(raw)) return *i;
    if (only) return std::string(raw);
  }
  if (has("number")) {
    if (auto f = qwen_parse_float(raw)) {
      constexpr double kLimit = 9223372036854775808.0;  // 2^63
      if (*f == std::trunc(*f) && *f > -kLimit && *f < kLimit) return static_cast<int64_t>(*f);
      return *f;
    }
    if (only) return std::string(raw);
  }
  if (has("array")) {
    if (auto a = qwen_parse_json_of(raw, true)) return *a;
    if (only) return std::string(raw);
  }
  if (has("object")) {
    if (auto o = qwen_parse_json_of(raw, false)) return *o;
    if (only) return std::string(raw);
  }
  return std::string(raw);
}

std::optional<ToolCall> parse_qwen_tool_call(std::string_view raw, const ojson& tools) {
  static constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  static constexpr std::string_view kParameter = "<parameter=", kParameterEnd = "</parameter>";
  const size_t fn = raw.find(kFunction);
  if (fn == std::string_view::npos) return std::nullopt;
  size_t pos = 0;
  auto name = qwen_tag_name(raw, fn, kFunction, pos);
  if (!name) return std::nullopt;
  ToolCall call;
  call.name = *name;
  const size_t body_end = std::min(raw.find(kFunctionEnd, pos), raw.size());
  while (true) {
    const size_t p = raw.find(kParameter, pos);
    if (p == std::string_view::npos || p >= body_end) break;
    size_t value_start = 0;
    auto param = qwen_tag_name(raw, p, kParameter, value_start);
    if (!param) break;
    size_t value_end = std::min(raw.find(kParameterEnd, value_start), body_end);
    value_end = std::min(value_end, raw.find(kParameter, value_start));
    std::string_view value = raw.substr(value_start, value_end - value_start);
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    call.arguments[*param] =
        qwen_typed_value(value, qwen_parameter_types(tools, call.name, *param));
    pos = raw.compare(value_end, kParameterEnd.size(), kParameterEnd) == 0
              ? value_end + kParameterEnd.size()
              : value_end;
  }
  return call;
}

}  // namespace vkllm::prompt
