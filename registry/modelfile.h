// Ollama's Modelfile: parsing (with "(line N): ..." errors like Ollama's) and rendering as
// `ollama show --modelfile` prints it.
#pragma once

#include <string>
#include <string_view>
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

struct Modelfile {
  std::vector<ModelfileCommand> commands;

  // Throws RegistryError(invalid_input) with Ollama's messages, e.g.
  // "(line 3): command must be one of ...", "no FROM line", "unexpected EOF".
  static Modelfile parse(std::string_view text);

  // One line per command in order, values quoted as Ollama's quote() does.
  std::string to_string() const;
};

// Ollama's quoting for rendered values: a value containing a newline or starting/ending with
// a space is wrapped in """...""" when it contains '"', else in "..."; otherwise left bare.
std::string modelfile_quote(std::string_view value);

}  // namespace vkllm::registry
