// Ollama's Modelfile: parsing (with "(line N): ..." errors like Ollama's) and rendering as
// `ollama show --modelfile` prints it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkllm::registry {

struct ModelfileCommand {
  // Lower-case instruction: from, parameter, template, system, adapter, license, message,
  // draft, renderer, parser, requires.
  std::string name;
  std::string key;    // PARAMETER name or MESSAGE role; empty otherwise
  std::string value;  // argument with quotes stripped (may span lines)
  int line = 0;       // 1-based line where the instruction starts
};

// What a Modelfile asks /api/create for, before the client resolves FROM/ADAPTER/DRAFT
// arguments (an existing path is uploaded as files, anything else names a model).
struct ModelfileRequest {
  std::vector<std::string> from;  // every FROM argument, in order
  std::vector<std::string> adapters;
  std::vector<std::string> drafts;
  std::optional<std::string> template_text, system, renderer, parser;
  std::optional<std::string> requires_version;  // without the leading "v"
  std::vector<std::string> licenses;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // typed
  std::vector<std::pair<std::string, std::string>> messages;             // (role, content)
};

struct Modelfile {
  std::vector<ModelfileCommand> commands;

  // Throws RegistryError(invalid_input) with Ollama's messages, e.g.
  // "(line 3): command must be one of ...", "no FROM line", "unexpected EOF".
  static Modelfile parse(std::string_view text);

  // One line per command in order, values quoted as Ollama's quote() does.
  std::string to_string() const;

  // Gathers the commands as `ollama create` does: PARAMETER values typed (typed_parameters'
  // errors, prefixed with the line), repeated stop lines gathered, LICENSE and MESSAGE
  // accumulated, REQUIRES checked as semver ("requires must be a valid semver (e.g. 0.14.0)").
  ModelfileRequest to_request() const;
};

// Ollama's quoting for rendered values: a value containing a newline or starting/ending with
// a space is wrapped in """...""" when it contains '"', else in "..."; otherwise left bare.
std::string modelfile_quote(std::string_view value);

}  // namespace vkllm::registry
