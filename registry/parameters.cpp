#include "registry/parameters.h"

#include <algorithm>
#include <charconv>
#include <cmath>
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
      case ParameterType::integer:
        out[name] = parse_integer(text);
        break;
      case ParameterType::floating:
        out[name] = parse_float(text);
        break;
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
        out[name] = static_cast<int64_t>(value.get<double>());
        break;
      case ParameterType::floating:
        if (!value.is_number()) wrong("float32");
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
