#include "tests/reference/reference_matrix.h"

#include <stdexcept>

#include "engine/gguf/quants.h"

namespace vkllm::reference {

ReferenceMatrix load_matrix(const gguf::GgufFile& f, const std::string& name, bool required) {
  ReferenceMatrix m;
  const auto* t = f.find_tensor(name);
  if (!t) {
    if (required) throw std::runtime_error("reference: missing tensor " + name);
    return m;
  }
  m.cols = static_cast<uint32_t>(t->shape[0]);
  // A stacked 3-D tensor (MoE experts) is its slices' rows one after another.
  uint64_t rows = 1;
  for (size_t d = 1; d < t->shape.size(); ++d) rows *= t->shape[d];
  m.rows = static_cast<uint32_t>(rows);
  m.type = t->type;
  m.w.resize(size_t{m.rows} * m.cols);
  gguf::dequantize(t->type, f.tensor_data(*t).data(), m.w.data(), m.w.size());
  return m;
}

}  // namespace vkllm::reference
