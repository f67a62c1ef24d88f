#include "server/api/json_request.h"

#include <algorithm>
#include <cctype>

#include "registry/bounded_json.h"
#include "registry/errors.h"
#include "server/http/exchange.h"

namespace vkllm::api {

std::string_view go_type_name(const nlohmann::json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_number()) return "number";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

void wrong_type(const nlohmann::json& v, std::string_view key, std::string_view want) {
  throw http::StatusError(400, "json: cannot unmarshal " + std::string(go_type_name(v)) +
                                   " into Go struct field ." + std::string(key) + " of type " +
                                   std::string(want));
}

nlohmann::json parse_json_object(std::string_view body) {
  const auto first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) throw http::StatusError(400, "missing request body");
  nlohmann::json j;
  try {
    j = registry::parse_bounded_json(body);
  } catch (const registry::RegistryError& e) {
    throw http::StatusError(400, e.what());
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at ...: "; keep the part
    // that says where and what.
    if (const auto bracket = what.find("] "); bracket != std::string::npos) {
      what = what.substr(bracket + 2);
    }
    throw http::StatusError(400, what);
  }
  if (!j.is_object()) {
    throw http::StatusError(400, "json: cannot unmarshal " + std::string(go_type_name(j)) +
                                     " into Go value of type struct");
  }
  return j;
}

std::optional<std::string> string_field(const nlohmann::json& object, std::string_view key) {
  const auto* v = find_field(object, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(*v, key, "string");
  return v->get<std::string>();
}

std::optional<bool> bool_field(const nlohmann::json& object, std::string_view key) {
  const auto* v = find_field(object, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) wrong_type(*v, key, "bool");
  return v->get<bool>();
}

std::string model_field(const nlohmann::json& object) {
  auto model = string_field(object, "model").value_or("");
  if (model.empty()) model = string_field(object, "name").value_or("");
  return model;
}

registry::ModelName required_model_name(const std::string& model, unsigned empty_status,
                                        const std::string& empty_message) {
  if (model.empty()) throw http::StatusError(empty_status, empty_message);
  auto name = registry::ModelName::try_parse(model);
  if (!name) throw http::StatusError(400, "invalid model name");
  return *name;
}

nlohmann::ordered_json options_field(const nlohmann::json& object) {
  const nlohmann::json* o = find_field(object, "options");
  if (!o) return nlohmann::ordered_json::object();
  if (!o->is_object()) wrong_type(*o, "options", "map[string]interface {}");
  return nlohmann::ordered_json::parse(o->dump());
}

}  // namespace vkllm::api
