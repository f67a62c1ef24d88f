#include "registry/parameters.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

#include "registry/errors.h"

namespace vkllm::registry {
namespace {

using nlohmann::ordered_json;

// Ollama's Options/Runner fields that a Modelfile may set (api/types.go).
const std::map<std::string, ParameterType, std::less<>>& known_parameters() {
  static const std::map<std::string, ParameterType, std::less<>> table{
      {"num_ctx", ParameterType::integer},
      {"num_batch", ParameterType::integer},
      {"num_gpu", ParameterType::integer},
      {"main_gpu", ParameterType::integer},
      {"use_mmap", ParameterType::boolean},
      {"num_thread", ParameterType::integer},
      {"draft_num_predict", ParameterType::integer},
      {"num_keep", ParameterType::integer},
      {"seed", ParameterType::integer},
      {"num_predict", ParameterType::integer},
      {"top_k", ParameterType::integer},
      {"top_p", ParameterType::floating},
      {"min_p", ParameterType::floating},
      {"typical_p", ParameterType::floating},
      {"repeat_last_n", ParameterType::integer},
      {"temperature", ParameterType::floating},
      {"repeat_penalty", ParameterType::floating},
      {"presence_penalty", ParameterType::floating},
      {"frequency_penalty", ParameterType::floating},
      {"stop", ParameterType::string_list},
  };
  return table;
}

// Accepted with a warning and dropped by Ollama's Modelfile conversion.
bool deprecated(std::string_view name) {
  static constexpr std::string_view kNames[] = {"penalize_newline", "low_vram",     "f16_kv",
                                                "logits_all",       "vocab_only",   "use_mlock",
                                                "mirostat",         "mirostat_tau", "mirostat_eta"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

[[noreturn]] void bad_value(const char* kind, const std::string& text) {
  throw RegistryError(ErrorKind::invalid_input,
                      std::string("invalid ") + kind + " value [" + text + "]");
}

// The values an option can take: Go's int (int64) for seed, the runner's int32 for the counts,
// float32 for the rest, and each option's own floor (-1 and -2 are Ollama's "auto"/"infinite"
// markers where it has them).
struct Range {
  double min, max;
};
constexpr double kInt32Max = 2147483647.0;

Range range_of(std::string_view name, ParameterType type) {
  static const std::map<std::string, Range, std::less<>> ranges{
      {"num_ctx", {1, kInt32Max}},
      {"num_batch", {1, kInt32Max}},
      {"num_gpu", {-1, kInt32Max}},
      {"main_gpu", {0, kInt32Max}},
      {"num_thread", {0, kInt32Max}},
      {"draft_num_predict", {0, kInt32Max}},
      {"num_keep", {-1, kInt32Max}},
      {"seed", {-9223372036854775808.0, 9223372036854775807.0}},
      {"num_predict", {-2, kInt32Max}},
      {"top_k", {0, kInt32Max}},
      {"repeat_last_n", {-1, kInt32Max}},
      {"top_p", {0, 1}},
      {"min_p", {0, 1}},
      {"typical_p", {0, 1}},
      {"temperature", {0, FLT_MAX}},
      {"repeat_penalty", {0, FLT_MAX}},
  };
  if (const auto it = ranges.find(name); it != ranges.end()) return it->second;
  if (type == ParameterType::floating) return {-FLT_MAX, FLT_MAX};
  return {-kInt32Max - 1, kInt32Max};
}

std::string number_text(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

// Ollama's "invalid int value [X]" / "invalid float value [X]" for a number its type cannot
// hold, and the same with the allowed range for one the option does not accept.
void check_range(std::string_view name, ParameterType type, double value, const std::string& text) {
  const char* kind = type == ParameterType::integer ? "int" : "float";
  if (!std::isfinite(value)) bad_value(kind, text);
  const Range r = range_of(name, type);
  if (value < r.min || value > r.max) {
    throw RegistryError(ErrorKind::invalid_input, std::string("invalid ") + kind + " value [" +
                                                      text + "]: " + std::string(name) +
                                                      " must be between " + number_text(r.min) +
                                                      " and " + number_text(r.max));
  }
}

// Parameter names are identifiers; an empty name or one with spaces, quotes or control
// characters (an escaped NUL) cannot be an option and would make a broken Modelfile line.
void check_name(const std::string& name) {
  const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
  if (!ok) throw RegistryError(ErrorKind::invalid_input, "unknown parameter '" + name + "'");
}

ordered_json parse_integer(const std::string& text) {
  int64_t value = 0;
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) bad_value("int", text);
  return value;
}

// Ollama stores float options as float32, which JSON-encode with float32's shortest digits
// ("0.7", not "0.699999988079071"); keep the double that prints the same way.
ordered_json parse_float(const std::string& text) {
  double value = 0;
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value))
    bad_value("float", text);
  char buf[32];
  auto [fend, fec] = std::to_chars(buf, buf + sizeof buf, static_cast<float>(value));
  double shortest = 0;
  std::from_chars(buf, fend, shortest);
  return shortest;
}

ordered_json parse_bool(const std::string& text) {
  static constexpr std::string_view kTrue[] = {"1", "t", "T", "TRUE", "true", "True"};
  static constexpr std::string_view kFalse[] = {"0", "f", "F", "FALSE", "false", "False"};
  if (std::find(std::begin(kTrue), std::end(kTrue), text) != std::end(kTrue)) return true;
  if (std::find(std::begin(kFalse), std::end(kFalse), text) != std::end(kFalse)) return false;
  bad_value("bool", text);
}

}  // namespace

std::optional<ParameterType> parameter_type(std::string_view name) {
  auto it = known_parameters().find(name);
  if (it == known_parameters().end()) return std::nullopt;
  return it->second;
}

ordered_json typed_parameters(const std::vector<std::pair<std::string, std::string>>& raw) {
  ordered_json out = ordered_json::object();
  for (const auto& [name, text] : raw) {
    if (deprecated(name)) continue;
    auto type = parameter_type(name);
    if (!type) throw RegistryError(ErrorKind::invalid_input, "unknown parameter '" + name + "'");
    switch (*type) {
      case ParameterType::integer: {
        auto v = parse_integer(text);
        check_range(name, *type, static_cast<double>(v.get<int64_t>()), text);
        out[name] = std::move(v);
        break;
      }
      case ParameterType::floating: {
        auto v = parse_float(text);
        check_range(name, *type, v.get<double>(), text);
        out[name] = std::move(v);
        break;
      }
      case ParameterType::boolean:
        out[name] = parse_bool(text);
        break;
      case ParameterType::string_list:
        if (!out.contains(name)) out[name] = ordered_json::array();
        out[name].push_back(text);
        break;
    }
  }
  return out;
}

ordered_json normalize_parameters(const ordered_json& params) {
  if (params.is_null()) return ordered_json::object();
  if (!params.is_object())
    throw RegistryError(ErrorKind::invalid_input, "parameters must be a JSON object");
  ordered_json out = ordered_json::object();
  for (const auto& [name, value] : params.items()) {
    check_name(name);
    if (value.is_null() || deprecated(name)) continue;
    auto type = parameter_type(name);
    if (!type) {  // Ollama stores unknown keys from /api/create as given
      out[name] = value;
      continue;
    }
    auto wrong = [&](const char* want) {
      throw RegistryError(ErrorKind::invalid_input,
                          "option \"" + name + "\" must be of type " + want);
    };
    switch (*type) {
      case ParameterType::integer:
        if (!value.is_number()) wrong("integer");
        if (value.is_number_integer()) {
          // (Exact: a 64-bit integer need not survive the trip through double.)
          const double approx = value.is_number_unsigned()
                                    ? static_cast<double>(value.get<uint64_t>())
                                    : static_cast<double>(value.get<int64_t>());
          check_range(name, *type, approx, value.dump());
          out[name] = value;
        } else {
          // Go truncates a JSON number into an int field; refuse what no int can hold.
          const double truncated = std::trunc(value.get<double>());
          check_range(name, *type, truncated, value.dump());
          // (INT64_MAX rounds up to 2^63 as a double, which no int64 holds.)
          if (truncated >= 9223372036854775808.0) bad_value("int", value.dump());
          out[name] = static_cast<int64_t>(truncated);
        }
        break;
      case ParameterType::floating:
        if (!value.is_number()) wrong("float32");
        check_range(name, *type, value.get<double>(), value.dump());
        out[name] = value;
        break;
      case ParameterType::boolean:
        if (!value.is_boolean()) wrong("boolean");
        out[name] = value;
        break;
      case ParameterType::string_list:
        if (value.is_string()) {
          out[name] = ordered_json::array({value});
        } else {
          if (!value.is_array()) wrong("array");
          for (const auto& element : value)
            if (!element.is_string()) wrong("an array of strings");
          out[name] = value;
        }
        break;
    }
  }
  return out;
}

ordered_json merge_parameters(const ordered_json& base, const ordered_json& update) {
  ordered_json out = base.is_object() ? base : ordered_json::object();
  if (update.is_object())
    for (const auto& [name, value] : update.items()) out[name] = value;
  return out;
}

}  // namespace vkllm::registry
