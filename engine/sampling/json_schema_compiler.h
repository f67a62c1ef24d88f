// `format: "json"` and JSON Schema to a byte-level Grammar (grammar.h).
//
// "json" is what Ollama's JSON grammar allows: one JSON object. A schema allows the JSON texts
// that validate against it, written compactly or with bounded whitespace between tokens (one
// space, or one or two newlines and up to 20 spaces/tabs, as llama.cpp bounds it) so a model
// cannot loop on whitespace; the value starts at its first character (no whitespace before it).
// Object properties come in schema order (pass an ordered_json to keep the client's order);
// without "properties", an object may have any keys; with them, only those unless
// "additionalProperties" says otherwise (as llama.cpp's converter that Ollama uses does).
// "oneOf" is treated as "anyOf". "format" is enforced for date, time, date-time, uuid, email
// and ipv4 and otherwise an annotation (as JSON Schema 2020-12 makes it); "pattern" is an
// ECMA-262 subset (regex_compiler.h). Keywords that would change validity but are not supported
// ("not", "if", "patternProperties", "uniqueItems": true, ...) are a FormatError naming the
// keyword; annotations (title, description, examples, default) are ignored.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/sampling/grammar.h"

namespace vkllm::sampling {

// Throws FormatError (token_constraint.h) with the text of the client's 400.
grammar::Grammar compile_json_grammar(const nlohmann::ordered_json& format);

// The values that validate against `schema` as a rule of `gb` (for grammars that embed JSON,
// such as tool calls). Errors start with gb's error prefix.
int32_t json_schema_rule(grammar::GrammarBuilder& gb, const nlohmann::ordered_json& schema);

}  // namespace vkllm::sampling
