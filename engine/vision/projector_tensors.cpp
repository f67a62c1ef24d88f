#include "engine/vision/projector_tensors.h"

#include <stdexcept>

#include "engine/gguf/quants.h"

namespace vkllm::vision {

namespace {

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

uint32_t need_u32(const gguf::GgufFile& f, const std::string& key) {
  const auto v = f.get_optional<uint32_t>(key);
  if (!v || *v == 0) throw std::runtime_error("vision projector has no " + key);
  return *v;
}

TensorRef need_tensor(const gguf::GgufFile& f, const std::string& name,
                      const std::vector<uint64_t>& shape) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t || t->shape != shape) {
    throw std::runtime_error("vision projector has no tensor " + name + " of shape " +
                             shape_text(shape) +
                             (t ? " (the file's is " + shape_text(t->shape) + ")" : ""));
  }
  if (!gguf::can_dequantize(t->type)) {
    throw std::runtime_error("vision projector tensor " + name + " has a type vkllm cannot read");
  }
  return {t->name, t->type, t->shape, f.tensor_data(*t)};
}

// A tensor the projector may leave out (biases, optional norms): empty when absent, checked
// like need_tensor when present.
TensorRef optional_tensor(const gguf::GgufFile& f, const std::string& name,
                          const std::vector<uint64_t>& shape) {
  if (!f.find_tensor(name)) return {};
  return need_tensor(f, name, shape);
}

cpu::WeightView matrix_view(const TensorRef& t, uint64_t cols) {
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  if (!cpu::matmul_supports(t.type)) {
    throw std::runtime_error("vision projector tensor " + t.name +
                             " has a type the CPU matmul does not take");
  }
  return {t.type, reinterpret_cast<const std::byte*>(t.bytes.data()), cols, n / cols};
}

}  // namespace vkllm::vision
