// Ollama's named templates (server/prompt/templates: <name>.gotmpl, <name>.json, index.json),
// embedded into the binary at build time.
#pragma once

#include <cstddef>
#include <span>

namespace vkllm::prompt::templates {

struct EmbeddedFile {
  const char* name;  // file name, e.g. "chatml.gotmpl"
  const unsigned char* data;
  size_t size;
};

std::span<const EmbeddedFile> embedded_files();

}  // namespace vkllm::prompt::templates
