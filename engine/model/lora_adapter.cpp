#include "engine/model/lora_adapter.h"

#include <algorithm>
#include <optional>

#include "engine/gguf/quants.h"

namespace vkllm::model {

namespace {

constexpr std::string_view kSuffixA = ".lora_a", kSuffixB = ".lora_b";
constexpr std::string_view kTokenEmbd = "token_embd.weight";

std::vector<float> to_floats(const gguf::GgufFile& file, const gguf::TensorInfo& t) {
  if (!gguf::can_dequantize(t.type)) {
    throw LoraError("LoRA tensor '" + t.name + "' has type " +
                    std::string(gguf::type_name(t.type)) + ", which cannot be read");
  }
  std::vector<float> out(t.element_count());
  gguf::dequantize(t.type, file.tensor_data(t).data(), out.data(), out.size());
  return out;
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

// One adapted weight: A and B as floats in their file layout (rows of ggml shape[0]).
struct Pair {
  std::string name;  // the base weight's tensor name
  std::vector<uint64_t> a_shape, b_shape;
  std::vector<float> a, b;
  uint32_t rank = 0;
  float scale = 0;
  bool embedding = false;  // token_embd: A is n_vocab rows of r, B n_embd rows of r
};

struct LoraAdapter::Impl {
  std::vector<uint8_t> bytes;  // when read from bytes; the GgufFile points into them
  std::optional<gguf::GgufFile> file;
  std::string arch;
  float alpha = 0;
  std::map<std::string, Pair, std::less<>> pairs;

  void load(float user_scale);
  const Pair& pair(std::string_view name) const {
    const auto it = pairs.find(name);
    if (it == pairs.end())
      throw LoraError("the adapter has no pair for '" + std::string(name) + "'");
    return it->second;
  }
};

void LoraAdapter::Impl::load(float user_scale) {
  const gguf::GgufFile& f = *file;
  const auto general_type = f.get_optional<std::string>("general.type");
  if (general_type != "adapter") {
    throw LoraError("not a LoRA adapter: general.type is '" + general_type.value_or("") +
                    "', expected 'adapter'");
  }
  const auto adapter_type = f.get_optional<std::string>("adapter.type");
  if (adapter_type != "lora") {
    throw LoraError("not a LoRA adapter: adapter.type is '" + adapter_type.value_or("") +
                    "', expected 'lora'");
  }
  arch = f.get_optional<std::string>("general.architecture").value_or("");
  if (arch.empty()) throw LoraError("the adapter has no general.architecture");
  alpha = f.get_optional<float>("adapter.lora.alpha").value_or(0.0f);

  std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> found;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::string_view n = t.name;
    if (n.ends_with(kSuffixA)) {
      found[std::string(n.substr(0, n.size() - kSuffixA.size()))].first = &t;
    } else if (n.ends_with(kSuffixB)) {
      found[std::string(n.substr(0, n.size() - kSuffixB.size()))].second = &t;
    } else if (n.ends_with("_norm.weight")) {
      continue;  // llama.cpp ignores adapted norms too
    } else {
      throw LoraError("LoRA tensor '" + t.name + "' is neither a .lora_a nor a .lora_b");
    }
  }
  if (found.empty()) throw LoraError("the adapter has no lora_a/lora_b tensors");
  for (const auto& [name, ab] : found) {
    const auto [a, b] = ab;
    if (!a || !b)
      throw LoraError("LoRA pair for '" + name + "' is missing its " + (a ? "lora_b" : "lora_a"));
    if (a->shape.size() != 2 || b->shape.size() != 2) {
      throw LoraError("LoRA pair for '" + name + "' is not two matrices");
    }
    Pair p;
    p.name = name;
    p.embedding = name == kTokenEmbd;
    p.a_shape = a->shape;
    p.b_shape = b->shape;
    p.rank = static_cast<uint32_t>(b->shape[0]);
    // A holds r rows (r columns for the embedding); B r columns.
    const uint64_t a_rank = p.embedding ? a->shape[0] : a->shape[1];
    if (p.rank == 0 || a_rank != p.rank) {
      throw LoraError("LoRA pair for '" + name + "' has lora_a " + shape_text(a->shape) +
                      " and lora_b " + shape_text(b->shape) + ", whose ranks differ");
    }
    p.scale = alpha != 0 ? user_scale * alpha / static_cast<float>(p.rank) : user_scale;
    p.a = to_floats(f, *a);
    p.b = to_floats(f, *b);
    pairs.emplace(name, std::move(p));
  }
}

LoraAdapter::LoraAdapter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LoraAdapter::LoraAdapter(LoraAdapter&&) noexcept = default;
LoraAdapter& LoraAdapter::operator=(LoraAdapter&&) noexcept = default;
LoraAdapter::~LoraAdapter() = default;

LoraAdapter LoraAdapter::open(const std::filesystem::path& path, float user_scale) {
  auto impl = std::make_unique<Impl>();
  // An adapter is read as stored: layout translations are for whole models.
  impl->file.emplace(gguf::GgufFile::open(path, gguf::ReadLayout::Raw));
  impl->load(user_scale);
  // Everything is in floats now: the mapping is no longer needed.
  impl->file.reset();
  return LoraAdapter(std::move(impl));
}

LoraAdapter LoraAdapter::from_bytes(std::vector<uint8_t> bytes, float user_scale) {
  auto impl = std::make_unique<Impl>();
  impl->bytes = std::move(bytes);
  impl->file.emplace(gguf::GgufFile::parse(impl->bytes, gguf::ReadLayout::Raw));
  impl->load(user_scale);
  impl->file.reset();
  impl->bytes = {};
  return LoraAdapter(std::move(impl));
}

void LoraAdapter::check_base(const gguf::GgufFile& base) const {
  const auto base_arch = base.get_optional<std::string>("general.architecture").value_or("");
  if (base_arch != impl_->arch) {
    throw LoraError("the adapter is for architecture '" + impl_->arch + "', the model is '" +
                    base_arch + "'");
  }
  for (const auto& [name, p] : impl_->pairs) {
    const gguf::TensorInfo* w = base.find_tensor(name);
    if (!w) {
      throw LoraError("the adapter adapts '" + name + "', which the model does not have");
    }
    if (w->shape.size() != 2) {
      throw LoraError("the adapter adapts '" + name + "', which is not a matrix");
    }
    // W is n_out rows of n_in; the embedding's rows are tokens.
    const bool fits = p.embedding ? w->shape[0] == p.b_shape[1] && w->shape[1] == p.a_shape[1]
                                  : w->shape[0] == p.a_shape[0] && w->shape[1] == p.b_shape[1];
    if (!fits) {
      throw LoraError("the adapter's '" + name + "' pair (lora_a " + shape_text(p.a_shape) +
                      ", lora_b " + shape_text(p.b_shape) + ") does not fit the model's " +
                      shape_text(w->shape) + " weight");
    }
    if (!gguf::can_dequantize(w->type) || !gguf::can_quantize(w->type)) {
      throw LoraError("the model's '" + name + "' has type " +
                      std::string(gguf::type_name(w->type)) + ", which an adapter cannot adapt");
    }
  }
}

const std::string& LoraAdapter::architecture() const {
  return impl_->arch;
}
float LoraAdapter::alpha() const {
  return impl_->alpha;
}
size_t LoraAdapter::size() const {
  return impl_->pairs.size();
}
bool LoraAdapter::adapts(std::string_view name) const {
  return impl_->pairs.contains(name);
}
float LoraAdapter::scale(std::string_view name) const {
  return impl_->pair(name).scale;
}
uint32_t LoraAdapter::rank(std::string_view name) const {
  return impl_->pair(name).rank;
}

std::vector<std::string> LoraAdapter::adapted_names() const {
  std::vector<std::string> names;
  for (const auto& [name, p] : impl_->pairs) names.push_back(name);
  return names;
}

void LoraAdapter::add_delta(std::string_view name, uint64_t first_row,
                            std::span<float> rows) const {
  const Pair& p = impl_->pair(name);
  const uint64_t r = p.rank;
  if (p.embedding) {
    // Row t (a token) gains scale * sum_k A[t][k] * B[:, k]: B is n_embd rows of r.
    const uint64_t n = p.b_shape[1];
    for (uint64_t t = 0; t < rows.size() / n; ++t) {
      const float* a = p.a.data() + (first_row + t) * r;
      float* out = rows.data() + t * n;
      for (uint64_t e = 0; e < n; ++e) {
        const float* b = p.b.data() + e * r;
        float sum = 0;
        for (uint64_t k = 0; k < r; ++k) sum += a[k] * b[k];
        out[e] += p.scale * sum;
      }
    }
    return;
  }
  // Row o gains scale * sum_k B[o][k] * A[k]: A is r rows of n_in, B n_out rows of r.
  const uint64_t n = p.a_shape[0];
  for (uint64_t o = 0; o < rows.size() / n; ++o) {
    const float* b = p.b.data() + (first_row + o) * r;
    float* out = rows.data() + o * n;
    for (uint64_t k = 0; k < r; ++k) {
      const float c = p.scale * b[k];
      const float* a = p.a.data() + k * n;
      for (uint64_t i = 0; i < n; ++i) out[i] += c * a[i];
    }
  }
}

}  // namespace vkllm::model
