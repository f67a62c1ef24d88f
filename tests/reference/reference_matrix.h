// A weight as the scalar references hold it: dequantized to float, rows x cols row-major (a ggml
// [cols, rows] tensor; vectors have rows == 1), with the type it was stored in.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace vkllm::reference {

struct ReferenceMatrix {
  uint32_t rows = 0, cols = 0;
  gguf::TensorType type = gguf::TensorType::F32;
  std::vector<float> w;
  bool empty() const { return w.empty(); }
  std::span<const float> row(uint32_t r) const { return {w.data() + size_t{r} * cols, cols}; }
};

// Tensor `name` of `f`, dequantized; an empty matrix when it is absent, unless `required`
// (then it throws naming the tensor).
ReferenceMatrix load_matrix(const gguf::GgufFile& f, const std::string& name, bool required = true);

}  // namespace vkllm::reference
