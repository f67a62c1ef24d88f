// Request bodies as Ollama's Go handlers read them: any Content-Type, an empty body is
// "missing request body", malformed JSON is a 400 naming the problem, and keys match
// case-insensitively (Go's encoding/json does), exact spelling first.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/core/string.hpp>
#include <nlohmann/json.hpp>

#include "registry/model_name.h"

namespace vkllm::api {

// Parses a body that must be a JSON object. Throws http::StatusError(400).
nlohmann::json parse_json_object(std::string_view body);

// The member named `key` (exact match first, then case-insensitive); nullptr if absent or null.
// For nlohmann::json and ordered_json alike.
template <class Json>
const Json* find_field(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  if (it == object.end()) {
    for (auto i = object.begin(); i != object.end(); ++i) {
      if (boost::beast::iequals(i.key(), key)) {
        it = i;
        break;
      }
    }
  }
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

// Typed optional fields; a present value of the wrong JSON type throws StatusError(400) with a
// Go-like message, e.g. `json: cannot unmarshal number into Go struct field .stream of type bool`.
std::optional<std::string> string_field(const nlohmann::json& object, std::string_view key);
std::optional<bool> bool_field(const nlohmann::json& object, std::string_view key);
// How Go's decoder names a JSON value's type in its errors: string, bool, number, array, ...
std::string_view go_type_name(const nlohmann::json& value);
// Throws Go's decoder error for a field of the wrong JSON type:
// `json: cannot unmarshal <got> into Go struct field .<key> of type <want>` (400).
[[noreturn]] void wrong_type(const nlohmann::json& value, std::string_view key,
                             std::string_view want);

// "model", falling back to the legacy "name" (model wins when both are non-empty).
std::string model_field(const nlohmann::json& object);
// `model` (from model_field) as a model name: empty is StatusError(empty_status, empty_message)
// (the status and text differ by route, as Ollama's handlers do), unparsable is 400
// "invalid model name".
registry::ModelName required_model_name(const std::string& model, unsigned empty_status,
                                        const std::string& empty_message);

// "options": the object it must be (an empty object when absent), else Go's decoder error.
nlohmann::ordered_json options_field(const nlohmann::json& object);

}  // namespace vkllm::api
