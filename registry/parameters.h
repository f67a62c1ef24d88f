// Typing of Modelfile PARAMETER values and /api/create parameters by Ollama's option table,
// and the merge rule create applies (new keys win, old keys kept).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkllm::registry {

enum class ParameterType { integer, floating, boolean, string_list };

// Type of a known option, or nullopt for a name Ollama rejects in Modelfiles.
std::optional<ParameterType> parameter_type(std::string_view name);

// Converts (name, text) pairs as written in a Modelfile into a JSON object: numbers and
// booleans typed, repeated `stop` lines gathered into a list, deprecated options Ollama skips
// (mirostat*, penalize_newline, ...) dropped. Throws RegistryError(invalid_input):
// "unknown parameter 'X'", "invalid int value [X]", "invalid float value [X]",
// "invalid bool value [X]".
nlohmann::ordered_json typed_parameters(
    const std::vector<std::pair<std::string, std::string>>& raw);

// Checks and normalises a JSON object of parameters (from /api/create): known options must
// have their type ("option \"X\" must be of type integer"), numbers for integer options are
// truncated, a lone stop string becomes a list, nulls and deprecated options are dropped, and
// unknown keys are kept as given (Ollama stores them unchecked).
nlohmann::ordered_json normalize_parameters(const nlohmann::ordered_json& params);

// `base` with every key of `update` set over it.
nlohmann::ordered_json merge_parameters(const nlohmann::ordered_json& base,
                                        const nlohmann::ordered_json& update);

}  // namespace vkllm::registry
