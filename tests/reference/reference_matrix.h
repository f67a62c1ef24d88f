// A weight as the scalar references hold it: dequantized to float, rows x cols row-major (a ggml
// [cols, rows] tensor; vectors have rows == 1; a stacked [cols, rows, n] tensor has n * rows
// rows, slice by slice), with the type it was stored in.
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
  // Rows [first, first + n) as a matrix of their own (an expert of a stacked tensor).
  ReferenceMatrix slice(uint32_t first, uint32_t n) const {
    ReferenceMatrix m{n, cols, type, {}};
    m.w.assign(w.begin() + size_t{first} * cols, w.begin() + size_t{first + n} * cols);
    return m;
  }
};

// Tensor `name` of `f`, dequantized; an empty matrix when it is absent, unless `required`
// (then it throws naming the tensor).
ReferenceMatrix load_matrix(const gguf::GgufFile& f, const std::string& name, bool required = true);

}  // namespace vkllm::reference
