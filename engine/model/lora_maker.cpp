#include "engine/model/lora_maker.h"

#include <cmath>
#include <stdexcept>

#include "engine/gguf/quants.h"
#include "engine/model/fast_normal.h"

namespace vkllm::model {

namespace {

// Per-layer name "blk.N.<target>.weight" -> target; empty for anything else.
std::string_view layer_weight_kind(std::string_view name) {
  if (!name.starts_with("blk.") || !name.ends_with(".weight")) return {};
  const size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos) return {};
  return name.substr(dot + 1, name.size() - dot - 1 - 7);
}

std::vector<uint8_t> random_matrix(gguf::TensorType type, uint64_t cols, uint64_t rows, float std,
                                   uint64_t seed) {
  std::vector<float> v(cols * rows);
  FastNormal rng(seed);
  for (float& x : v) x = std * rng.next();
  std::vector<uint8_t> out(gguf::row_bytes(type, cols) * rows);
  gguf::quantize(type, v.data(), out.data(), v.size(), 1);
  return out;
}

}  // namespace

void build_random_lora(const MakeLoraOptions& o, const gguf::GgufFile& base,
                       gguf::GgufWriter& writer) {
  if (o.rank == 0) throw std::invalid_argument("make-lora: the rank must be at least 1");
  if (o.type != gguf::TensorType::F32 && o.type != gguf::TensorType::F16 &&
      o.type != gguf::TensorType::BF16) {
    throw std::invalid_argument("make-lora: the adapter's type must be F32, F16 or BF16");
  }
  const auto arch = base.get_optional<std::string>("general.architecture");
  if (!arch) throw std::invalid_argument("make-lora: the base model has no general.architecture");
  writer.set_string("general.architecture", *arch);
  writer.set_string("general.type", "adapter");
  writer.set_string("general.name", "random LoRA");
  writer.set_string("adapter.type", "lora");
  writer.set_f32("adapter.lora.alpha", o.alpha);

  const float scale = o.alpha != 0 ? o.alpha / static_cast<float>(o.rank) : 1.0f;
  for (const std::string& target : o.targets) {
    size_t matched = 0;
    for (const gguf::TensorInfo& t : base.tensors()) {
      if (t.shape.size() != 2 || layer_weight_kind(t.name) != target) continue;
      ++matched;
      const uint64_t n_in = t.shape[0], n_out = t.shape[1];
      // A: r rows of n_in, unit-norm-ish rows; B: n_out rows of r, sized so that scale * B A has
      // entries of strength / sqrt(n_in).
      const float std_a = 1.0f / std::sqrt(static_cast<float>(n_in));
      const float std_b = o.strength / (scale * std::sqrt(static_cast<float>(o.rank)));
      const uint64_t seed = hash_name(t.name, o.seed);
      writer.add_tensor(t.name + ".lora_a", o.type, {n_in, o.rank},
                        random_matrix(o.type, n_in, o.rank, std_a, seed));
      writer.add_tensor(t.name + ".lora_b", o.type, {o.rank, n_out},
                        random_matrix(o.type, o.rank, n_out, std_b, seed ^ 0x5bd1e995ull));
    }
    if (matched == 0) {
      throw std::invalid_argument("make-lora: the base model has no blk.N." + target +
                                  ".weight matrices");
    }
  }
}

}  // namespace vkllm::model
