// SPIR-V modules compiled from shaders/*.comp at build time, embedded into the binary.
#pragma once

#include <cstddef>
#include <span>

namespace vkllm::shaders {

struct EmbeddedFile {
  const char* name;  // "<variant>.spv"
  const unsigned char* data;
  size_t size;
};

std::span<const EmbeddedFile> embedded_files();

}  // namespace vkllm::shaders
