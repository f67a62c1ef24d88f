#include "engine/model/weight_check.h"

#include <stdexcept>
#include <string>

namespace vkllm::model {

void expect_weight(const gguf::GgufFile& f, std::string_view family, Weight w, uint32_t layer,
                   const std::vector<uint64_t>& shape, bool f32) {
  const std::string name = weight_name(w, layer);
  const auto* t = f.find_tensor(name);
  if (t && t->shape == shape && (!f32 || t->type == gguf::TensorType::F32)) return;
  std::string want;
  for (uint64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
  throw std::runtime_error(std::string(family) + " model has no " + (f32 ? "F32 " : "") +
                           "tensor " + name + " of shape [" + want + "]");
}

}  // namespace vkllm::model
