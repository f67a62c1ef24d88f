#include "engine/runtime/tensor_data_source.h"

#include <cstring>
#include <stdexcept>

namespace vkllm::runtime {

void GgufFileSource::read(uint64_t offset, std::span<std::byte> out) {
  const auto bytes = file_.bytes();
  const uint64_t start = file_.data_offset() + offset;
  if (start > bytes.size() || out.size() > bytes.size() - start) {
    throw std::out_of_range("tensor data read past the end of the GGUF file");
  }
  std::memcpy(out.data(), bytes.data() + start, out.size());
}

}  // namespace vkllm::runtime
