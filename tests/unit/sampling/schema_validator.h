// Test support: a JSON Schema validator for the subset the format compiler supports, written
// from the JSON Schema spec (standard semantics: additionalProperties defaults to allowed), so
// the constrained outputs are checked by something that does not share the compiler's code.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vkllm::sampling::testing {

// Empty when `value` validates against `schema` (resolving "#/..." $refs in `root`), else why not.
std::string schema_violation(const nlohmann::ordered_json& schema,
                             const nlohmann::ordered_json& value,
                             const nlohmann::ordered_json& root);

}  // namespace vkllm::sampling::testing
