// The web UI's static files (web/dist), embedded into the binary at build time.
#pragma once

#include <cstddef>
#include <span>

namespace vkllm::web {

struct EmbeddedFile {
  const char* name;  // path relative to web/dist, e.g. "index.html"
  const unsigned char* data;
  size_t size;
};

std::span<const EmbeddedFile> embedded_files();

}  // namespace vkllm::web
