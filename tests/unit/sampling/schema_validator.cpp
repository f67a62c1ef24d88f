#include "schema_validator.h"

#include <cmath>
// GCC 12 warns inside <regex> (std::function members "maybe uninitialized") wherever it is used.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop

namespace vkllm::sampling::testing {

namespace {

using json = nlohmann::ordered_json;

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

bool is_type(const json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_number() && std::floor(v.get<double>()) == v.get<double>();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  return false;
}

bool valid_date(const std::string& s) {
  static const std::regex re(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))");
  return std::regex_match(s, re);
}

bool valid_time(const std::string& s) {
  static const std::regex re(
      R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|z|[+-]([01]\d|2[0-3]):[0-5]\d))");
  return std::regex_match(s, re);
}

bool valid_format(const std::string& f, const std::string& s) {
  if (f == "date") return valid_date(s);
  if (f == "time") return valid_time(s);
  if (f == "date-time") {
    const auto t = s.find_first_of("Tt");
    return t != std::string::npos && valid_date(s.substr(0, t)) && valid_time(s.substr(t + 1));
  }
  if (f == "uuid") {
    static const std::regex re(
        R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})");
    return std::regex_match(s, re);
  }
  if (f == "email") {
    static const std::regex re(R"([^@\s"]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)");
    return std::regex_match(s, re);
  }
  if (f == "ipv4") {
    static const std::regex re(
        R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})");
    return std::regex_match(s, re);
  }
  return true;  // unknown formats are annotations
}

std::string check(const json& s, const json& v, const json& root, const std::string& at);

std::string check_object(const json& s, const json& v, const json& root, const std::string& at) {
  const json props = s.value("properties", json::object());
  for (const json& r : s.value("required", json::array())) {
    if (!v.contains(r.get<std::string>())) return at + ": missing required " + r.dump();
  }
  for (auto& [k, x] : v.items()) {
    std::string why;
    if (props.contains(k)) {
      why = check(props[k], x, root, at + "." + k);
    } else if (s.contains("additionalProperties")) {
      why = check(s["additionalProperties"], x, root, at + "." + k);
    }
    if (!why.empty()) return why;
  }
  return "";
}

std::string check_array(const json& s, const json& v, const json& root, const std::string& at) {
  const json prefix = s.value("prefixItems", json::array());
  if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
    return at + ": too few items";
  if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>())
    return at + ": too many items";
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string here = at + "[" + std::to_string(i) + "]";
    std::string why;
    if (i < prefix.size()) {
      why = check(prefix[i], v[i], root, here);
    } else if (s.contains("items")) {
      why = check(s["items"], v[i], root, here);
    }
    if (!why.empty()) return why;
  }
  return "";
}

std::string check(const json& s, const json& v, const json& root, const std::string& at) {
  if (s.is_boolean()) return s.get<bool>() ? "" : at + ": schema false";
  if (s.contains("$ref")) {
    return check(root.at(json::json_pointer(s["$ref"].get<std::string>().substr(1))), v, root, at);
  }
  if (s.contains("allOf")) {
    for (const json& b : s["allOf"]) {
      if (auto why = check(b, v, root, at); !why.empty()) return why;
    }
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const json& b : s["anyOf"]) any = any || check(b, v, root, at).empty();
    if (!any) return at + ": matches no anyOf branch: " + v.dump();
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const json& b : s["oneOf"]) n += check(b, v, root, at).empty();
    if (n != 1) return at + ": matches " + std::to_string(n) + " oneOf branches: " + v.dump();
  }
  if (s.contains("const") && s["const"] != v) return at + ": not the const: " + v.dump();
  if (s.contains("enum")) {
    const json& e = s["enum"];
    if (std::find(e.begin(), e.end(), v) == e.end()) return at + ": not in the enum: " + v.dump();
  }
  if (s.contains("type")) {
    const json t = s["type"].is_array() ? s["type"] : json::array({s["type"]});
    bool ok = false;
    for (const json& x : t) ok = ok || is_type(v, x.get<std::string>());
    if (!ok) return at + ": wrong type: " + v.dump();
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    if (s.contains("minimum") && d < s["minimum"].get<double>()) return at + ": below minimum";
    if (s.contains("maximum") && d > s["maximum"].get<double>()) return at + ": above maximum";
    if (s.contains("exclusiveMinimum") && d <= s["exclusiveMinimum"].get<double>())
      return at + ": <= exclusiveMinimum";
    if (s.contains("exclusiveMaximum") && d >= s["exclusiveMaximum"].get<double>())
      return at + ": >= exclusiveMaximum";
  }
  if (v.is_string()) {
    const std::string& str = v.get_ref<const std::string&>();
    if (s.contains("minLength") && code_points(str) < s["minLength"].get<size_t>())
      return at + ": too short";
    if (s.contains("maxLength") && code_points(str) > s["maxLength"].get<size_t>())
      return at + ": too long";
    if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>(),
                                                                    std::regex::ECMAScript))) {
      return at + ": does not match " + s["pattern"].get<std::string>() + ": " + str;
    }
    if (s.contains("format") && !valid_format(s["format"].get<std::string>(), str)) {
      return at + ": not a " + s["format"].get<std::string>() + ": " + str;
    }
  }
  if (v.is_object()) return check_object(s, v, root, at);
  if (v.is_array()) return check_array(s, v, root, at);
  return "";
}

}  // namespace

std::string schema_violation(const json& schema, const json& value, const json& root) {
  return check(schema, value, root, "$");
}

}  // namespace vkllm::sampling::testing
