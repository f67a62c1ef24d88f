#include "engine/vision/projector_tensors.h"

#include <stdexcept>
#include <string>

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

void set_merged_patch_budget(VisionSpec& s, const char* kind, uint32_t merge, uint32_t min_units,
                             uint32_t max_units) {
  if (s.n_merge == 0 || (merge != 0 && s.n_merge != merge) || s.n_embd % s.n_head != 0 ||
      s.head_dim() % 4 != 0) {
    const std::string merger =
        merge ? ", the merger " + std::to_string(merge) + "x" + std::to_string(merge) : "";
    throw std::runtime_error(std::string(kind) +
                             " vision projector has inconsistent sizes (width " +
                             std::to_string(s.n_embd) + ", " + std::to_string(s.n_head) +
                             " heads, merge " + std::to_string(s.n_merge) +
                             ": its 2D RoPE needs heads a multiple of 4 wide" + merger + ")");
  }
  const uint32_t area = s.patch_size * s.n_merge * s.patch_size * s.n_merge;
  s.min_pixels = min_units * area;
  s.max_pixels = max_units * area;
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
