// /v1 request fields that constrain the output beyond `format` (openai_request_parts.h).
#include <string>
#include <vector>

#include "server/api/openai_request_parts.h"
#include "server/http/exchange.h"

namespace vkllm::api::openai {

using http::StatusError;

namespace {

// A schema given as an object or as JSON text (vLLM accepts both).
J schema_of(const J& v, const std::string& key) {
  if (v.is_object()) return v;
  if (v.is_string()) {
    J parsed = J::parse(v.get<std::string>(), nullptr, false);
    if (parsed.is_object()) return parsed;
    throw StatusError(400, key + " must be a JSON schema (an object, or a string holding one)");
  }
  bad_type(key, "an object", v);
}

std::string text_of(const J& v, const std::string& key) {
  if (!v.is_string()) bad_type(key, "a string", v);
  return v.get<std::string>();
}

std::vector<std::string> choices_of(const J& v, const std::string& key) {
  if (!v.is_array() || v.empty()) {
    throw StatusError(400, key + " must be a non-empty array of strings");
  }
  std::vector<std::string> out;
  for (const J& c : v) {
    if (!c.is_string()) throw StatusError(400, key + " must be a non-empty array of strings");
    out.push_back(c.get<std::string>());
  }
  return out;
}

// One constraint: `kind` is json, regex, choice, grammar or json_object.
struct Found {
  std::string key;  // as the client named it, for errors
  std::string kind;
  const J* value;
};

}  // namespace

void parse_constraints(const J& body, requests::GenerationRequest& r) {
  std::vector<Found> found;
  if (const J* g = find_field(body, "grammar")) found.push_back({"grammar", "grammar", g});
  for (const char* kind : {"json", "regex", "choice", "grammar"}) {
    const std::string key = std::string("guided_") + kind;
    if (const J* v = find_field(body, key)) found.push_back({key, kind, v});
  }
  if (const J* so = find_field(body, "structured_outputs")) {
    if (!so->is_object()) bad_type("structured_outputs", "an object", *so);
    for (const auto& [key, value] : so->items()) {
      const std::string name = "structured_outputs." + key;
      if (value.is_null()) continue;
      if (key == "json" || key == "regex" || key == "choice" || key == "grammar") {
        found.push_back({name, key, &value});
      } else if (key == "json_object") {
        if (value == J(true)) found.push_back({name, key, &value});
      } else if (key == "structural_tag") {
        throw StatusError(400, name + " is not supported");
      }
      // Tuning fields (disable_fallback, disable_any_whitespace, whitespace_pattern, ...) leave
      // the output's language as it is: ignored.
    }
  }
  if (found.empty()) return;
  if (found.size() > 1) {
    throw StatusError(400, "only one output constraint may be given; got " + found[0].key +
                               " and " + found[1].key);
  }
  const Found& f = found[0];
  if (f.kind == "json") {
    r.format = schema_of(*f.value, f.key);
  } else if (f.kind == "json_object") {
    r.format = "json";
  } else if (f.kind == "regex") {
    r.constraint = sampling::FormatSpec::of_regex(text_of(*f.value, f.key));
  } else if (f.kind == "choice") {
    r.constraint = sampling::FormatSpec::of_choice(choices_of(*f.value, f.key));
  } else {
    r.constraint = sampling::FormatSpec::of_gbnf(text_of(*f.value, f.key));
  }
}

requests::ToolChoice tool_choice_of(const J& body, const J& tools) {
  requests::ToolChoice out;
  if (auto p = bool_of(body, "parallel_tool_calls")) out.parallel = *p;
  const J* choice = find_field(body, "tool_choice");
  if (!choice) return out;
  const bool have_tools = tools.is_array() && !tools.empty();
  if (choice->is_string() && choice->get<std::string>() == "required") {
    if (have_tools) out.mode = requests::ToolChoice::Mode::required;
  } else if (choice->is_object()) {
    // A named function stays forced with no tool left of that name: the 400 says so.
    std::string name;
    if (const J* fn = find_field(*choice, "function"); fn && fn->is_object()) {
      name = string_of(*fn, "name").value_or("");
    } else {
      name = string_of(*choice, "name").value_or("");
    }
    if (!name.empty()) {
      out.mode = requests::ToolChoice::Mode::named;
      out.name = std::move(name);
    } else if (have_tools && string_of(*choice, "type").value_or("") == "required") {
      out.mode = requests::ToolChoice::Mode::required;
    }
  }
  return out;
}

}  // namespace vkllm::api::openai
