#include "engine/vision/vision_spec.h"

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

}  // namespace

VisionSpec read_vision_spec(const gguf::GgufFile& f) {
  std::string type = f.get_optional<std::string>("clip.projector_type").value_or("");
  if (type.empty()) type = f.get_optional<std::string>("clip.vision.projector_type").value_or("");
  if (!f.get_optional<bool>("clip.has_vision_encoder").value_or(false)) {
    throw std::runtime_error("the projector has no vision encoder (clip.has_vision_encoder)");
  }
  if (type != "gemma3") {
    throw std::runtime_error("vision projector type '" + type +
                             "' is not supported yet (supported: gemma3)");
  }
  if (!f.get_optional<bool>("clip.use_gelu").value_or(false)) {
    throw std::runtime_error("gemma3 vision projector without clip.use_gelu is not supported");
  }
  VisionSpec s;
  s.projector = ProjectorType::Gemma3;
  const std::string v = "clip.vision.";
  s.image_size = need_u32(f, v + "image_size");
  s.patch_size = need_u32(f, v + "patch_size");
  s.n_embd = need_u32(f, v + "embedding_length");
  s.n_head = need_u32(f, v + "attention.head_count");
  s.n_ff = need_u32(f, v + "feed_forward_length");
  s.n_layer = need_u32(f, v + "block_count");
  s.eps = f.get_optional<float>(v + "attention.layer_norm_epsilon").value_or(1e-6f);
  // llama.cpp's default for every Gemma 3 size; its tiny test model writes the key.
  s.n_merge = f.get_optional<uint32_t>(v + "projector.scale_factor").value_or(4);
  const auto mean = f.get_array<float>(v + "image_mean");
  const auto std = f.get_array<float>(v + "image_std");
  if (mean.size() < 3 || std.size() < 3) {
    throw std::runtime_error("vision projector needs 3-value image_mean and image_std");
  }
  for (int c = 0; c < 3; ++c) {
    s.mean[c] = mean[c];
    s.std[c] = std[c];
    if (!(s.std[c] > 0.0f)) throw std::runtime_error("vision projector image_std is not positive");
  }
  if (s.image_size % s.patch_size != 0 || s.n_merge == 0 || s.patches_per_side() % s.n_merge != 0 ||
      s.n_embd % s.n_head != 0) {
    throw std::runtime_error(
        "vision projector has inconsistent sizes (image " + std::to_string(s.image_size) +
        ", patch " + std::to_string(s.patch_size) + ", pooling " + std::to_string(s.n_merge) + ")");
  }
  const gguf::TensorInfo* proj = f.find_tensor("mm.input_projection.weight");
  if (!proj || proj->shape.size() != 2 || proj->shape[1] != s.n_embd || proj->shape[0] == 0) {
    throw std::runtime_error(
        "gemma3 vision projector has no mm.input_projection.weight of shape "
        "[text width, " +
        std::to_string(s.n_embd) + "]");
  }
  s.text_embd = static_cast<uint32_t>(proj->shape[0]);
  return s;
}

VisionWeights read_vision_weights(const gguf::GgufFile& f, const VisionSpec& s) {
  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size;
  VisionWeights w;
  w.patch_w = need_tensor(f, "v.patch_embd.weight", {P, P, 3, E});
  w.patch_b = need_tensor(f, "v.patch_embd.bias", {E});
  w.position = need_tensor(f, "v.position_embd.weight", {E, s.n_patches()});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    VitLayerWeights L;
    L.ln1_w = need_tensor(f, b + "ln1.weight", {E});
    L.ln1_b = need_tensor(f, b + "ln1.bias", {E});
    L.ln2_w = need_tensor(f, b + "ln2.weight", {E});
    L.ln2_b = need_tensor(f, b + "ln2.bias", {E});
    L.q_w = need_tensor(f, b + "attn_q.weight", {E, E});
    L.q_b = need_tensor(f, b + "attn_q.bias", {E});
    L.k_w = need_tensor(f, b + "attn_k.weight", {E, E});
    L.k_b = need_tensor(f, b + "attn_k.bias", {E});
    L.v_w = need_tensor(f, b + "attn_v.weight", {E, E});
    L.v_b = need_tensor(f, b + "attn_v.bias", {E});
    L.o_w = need_tensor(f, b + "attn_out.weight", {E, E});
    L.o_b = need_tensor(f, b + "attn_out.bias", {E});
    // Early Gemma 3 mmproj files name fc1 ffn_down and fc2 ffn_up; the shapes tell which is
    // which (as llama.cpp decides it).
    const gguf::TensorInfo* up = f.find_tensor(b + "ffn_up.weight");
    const bool swapped = up && up->shape.size() == 2 && up->shape[0] == F && F != E;
    const std::string fc1 = b + (swapped ? "ffn_down" : "ffn_up");
    const std::string fc2 = b + (swapped ? "ffn_up" : "ffn_down");
    L.up_w = need_tensor(f, fc1 + ".weight", {E, F});
    L.up_b = need_tensor(f, fc1 + ".bias", {F});
    L.down_w = need_tensor(f, fc2 + ".weight", {F, E});
    L.down_b = need_tensor(f, fc2 + ".bias", {E});
    w.layers.push_back(std::move(L));
  }
  w.post_ln_w = need_tensor(f, "v.post_ln.weight", {E});
  w.post_ln_b = need_tensor(f, "v.post_ln.bias", {E});
  w.soft_emb_norm_w = need_tensor(f, "mm.soft_emb_norm.weight", {E});
  w.input_proj_w = need_tensor(f, "mm.input_projection.weight", {s.text_embd, E});
  return w;
}

std::vector<float> tensor_to_f32(const TensorRef& t) {
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  std::vector<float> out(n);
  gguf::dequantize(t.type, t.bytes.data(), out.data(), n);
  return out;
}

}  // namespace vkllm::vision
