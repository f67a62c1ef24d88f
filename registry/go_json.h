// JSON and value text as Go's encoding/json and fmt write them, so the layers and configs we
// create hash like Ollama's and show output reads like Ollama's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vkllm::registry {

// json.Marshal's escaping: '<', '>', '&', U+2028 and U+2029 become \u escapes.
std::string go_json_escape(std::string json_text);
// Compact dump with Go's escaping (object key order as stored in the value).
std::string go_json_dump(const nlohmann::ordered_json& value);
// A string as Go's %#v and strconv.Quote write ASCII text: in double quotes, with \" \\ \n \t \r
// and \xNN for the other control characters and DEL (other bytes as they are).
std::string go_quote(const std::string& s);
// fmt's %v of a decoded JSON value: numbers in %g shortest form ("0.6", "40", "1e+06"),
// strings raw, booleans "true"/"false", null "<nil>".
std::string go_format_value(const nlohmann::ordered_json& value);
// fmt's %#v of a decoded JSON value: like go_format_value but strings are Go-quoted.
std::string go_format_value_sharp(const nlohmann::ordered_json& value);

}  // namespace vkllm::registry
