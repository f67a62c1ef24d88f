#include "engine/vision/vision_spec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/gguf/quants.h"
#include "engine/vision/gemma4_vision.h"
#include "engine/vision/projector_tensors.h"

namespace vkllm::vision {

namespace {

void read_normalisation(const gguf::GgufFile& f, VisionSpec& s) {
  const std::string v = "clip.vision.";
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
}

void read_tower_sizes(const gguf::GgufFile& f, VisionSpec& s) {
  const std::string v = "clip.vision.";
  s.image_size = need_u32(f, v + "image_size");
  s.patch_size = need_u32(f, v + "patch_size");
  s.n_embd = need_u32(f, v + "embedding_length");
  s.n_head = need_u32(f, v + "attention.head_count");
  s.n_ff = need_u32(f, v + "feed_forward_length");
  s.n_layer = need_u32(f, v + "block_count");
  s.eps = f.get_optional<float>(v + "attention.layer_norm_epsilon").value_or(1e-6f);
  read_normalisation(f, s);
}

// Pixtral (Mistral 3): llama.cpp's clip.cpp fixes the RoPE base at 10000 and the budget at 8 to
// 1024 merged patches; the merge size is clip.vision.spatial_merge_size (1: none).
VisionSpec read_pixtral_spec(const gguf::GgufFile& f) {
  if (!f.get_optional<bool>("clip.use_silu").value_or(false)) {
    throw std::runtime_error("pixtral vision projector without clip.use_silu is not supported");
  }
  VisionSpec s;
  s.projector = ProjectorType::Pixtral;
  read_tower_sizes(f, s);
  s.n_merge = f.get_optional<uint32_t>("clip.vision.spatial_merge_size").value_or(1);
  s.rope_theta = 10000.0f;
  set_merged_patch_budget(s, "pixtral", 0, 8, 1024);
  const gguf::TensorInfo* mm2 = f.find_tensor("mm.2.weight");
  if (!mm2 || mm2->shape.size() != 2 || mm2->shape[0] == 0 || mm2->shape[1] != mm2->shape[0]) {
    throw std::runtime_error(
        "pixtral vision projector has no mm.2.weight of shape [text width, text width]");
  }
  s.text_embd = static_cast<uint32_t>(mm2->shape[1]);
  return s;
}

VisionWeights read_pixtral_weights(const gguf::GgufFile& f, const VisionSpec& s) {
  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, T = s.text_embd, M = s.n_merge;
  VisionWeights w;
  w.patch_w = need_tensor(f, "v.patch_embd.weight", {P, P, 3, E});
  w.patch_b = optional_tensor(f, "v.patch_embd.bias", {E});
  w.pre_ln_w = optional_tensor(f, "v.pre_ln.weight", {E});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    VitLayerWeights L;
    L.ln1_w = need_tensor(f, b + "ln1.weight", {E});
    L.ln2_w = need_tensor(f, b + "ln2.weight", {E});
    L.q_w = need_tensor(f, b + "attn_q.weight", {E, E});
    L.k_w = need_tensor(f, b + "attn_k.weight", {E, E});
    L.v_w = need_tensor(f, b + "attn_v.weight", {E, E});
    L.o_w = need_tensor(f, b + "attn_out.weight", {E, E});
    L.q_b = optional_tensor(f, b + "attn_q.bias", {E});
    L.k_b = optional_tensor(f, b + "attn_k.bias", {E});
    L.v_b = optional_tensor(f, b + "attn_v.bias", {E});
    L.o_b = optional_tensor(f, b + "attn_out.bias", {E});
    L.gate_w = need_tensor(f, b + "ffn_gate.weight", {E, F});
    L.up_w = need_tensor(f, b + "ffn_up.weight", {E, F});
    L.down_w = need_tensor(f, b + "ffn_down.weight", {F, E});
    w.layers.push_back(std::move(L));
  }
  w.post_ln_w = optional_tensor(f, "v.post_ln.weight", {E});
  if (M > 1) {
    w.input_norm_w = need_tensor(f, "mm.input_norm.weight", {E});
    w.merger_w = need_tensor(f, "mm.patch_merger.weight", {E * M * M, E});
  } else if (f.find_tensor("mm.patch_merger.weight")) {
    throw std::runtime_error("pixtral vision projector has a patch merger but no merge size");
  }
  w.mm1_w = need_tensor(f, "mm.1.weight", {E, T});
  w.mm1_b = optional_tensor(f, "mm.1.bias", {T});
  w.mm2_w = need_tensor(f, "mm.2.weight", {T, T});
  w.mm2_b = optional_tensor(f, "mm.2.bias", {T});
  w.img_break = need_tensor(f, "v.token_embd.img_break", {T});
  return w;
}

// Qwen2.5-VL: llama.cpp's clip.cpp fixes the RoPE base at 10000, the window at 112 px, the
// budget at 8 to 4096 merged patches, and requires n_wa_pattern; the merge size is 2.
VisionSpec read_qwen25vl_spec(const gguf::GgufFile& f) {
  if (!f.get_optional<bool>("clip.use_silu").value_or(false)) {
    throw std::runtime_error("qwen2.5vl vision projector without clip.use_silu is not supported");
  }
  VisionSpec s;
  s.projector = ProjectorType::Qwen25vl;
  read_tower_sizes(f, s);
  s.n_merge = f.get_optional<uint32_t>("clip.vision.spatial_merge_size").value_or(2);
  s.n_wa_pattern = need_u32(f, "clip.vision.n_wa_pattern");
  s.rope_theta = 10000.0f;
  set_merged_patch_budget(s, "qwen2.5vl", 2, 8, 4096);
  s.window = std::max(1u, 112 / s.patch_size / s.n_merge);
  const gguf::TensorInfo* mm2 = f.find_tensor("mm.2.weight");
  if (!mm2 || mm2->shape.size() != 2 || mm2->shape[0] != 4ull * s.n_embd || mm2->shape[1] == 0) {
    throw std::runtime_error("qwen2.5vl vision projector has no mm.2.weight of shape [" +
                             std::to_string(4ull * s.n_embd) + ", text width]");
  }
  s.text_embd = static_cast<uint32_t>(mm2->shape[1]);
  return s;
}

VisionWeights read_qwen25vl_weights(const gguf::GgufFile& f, const VisionSpec& s) {
  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, T = s.text_embd;
  VisionWeights w;
  w.patch_w = need_tensor(f, "v.patch_embd.weight", {P, P, 3, E});
  w.patch_w1 = need_tensor(f, "v.patch_embd.weight.1", {P, P, 3, E});
  w.patch_b = optional_tensor(f, "v.patch_embd.bias", {E});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    VitLayerWeights L;
    L.ln1_w = need_tensor(f, b + "ln1.weight", {E});
    L.ln2_w = need_tensor(f, b + "ln2.weight", {E});
    L.q_w = need_tensor(f, b + "attn_q.weight", {E, E});
    L.k_w = need_tensor(f, b + "attn_k.weight", {E, E});
    L.v_w = need_tensor(f, b + "attn_v.weight", {E, E});
    L.o_w = need_tensor(f, b + "attn_out.weight", {E, E});
    L.q_b = optional_tensor(f, b + "attn_q.bias", {E});
    L.k_b = optional_tensor(f, b + "attn_k.bias", {E});
    L.v_b = optional_tensor(f, b + "attn_v.bias", {E});
    L.o_b = optional_tensor(f, b + "attn_out.bias", {E});
    L.gate_w = need_tensor(f, b + "ffn_gate.weight", {E, F});
    L.gate_b = optional_tensor(f, b + "ffn_gate.bias", {F});
    L.up_w = need_tensor(f, b + "ffn_up.weight", {E, F});
    L.up_b = optional_tensor(f, b + "ffn_up.bias", {F});
    L.down_w = need_tensor(f, b + "ffn_down.weight", {F, E});
    L.down_b = optional_tensor(f, b + "ffn_down.bias", {E});
    w.layers.push_back(std::move(L));
  }
  w.post_ln_w = optional_tensor(f, "v.post_ln.weight", {E});
  w.mm1_w = need_tensor(f, "mm.0.weight", {4 * E, 4 * E});
  w.mm1_b = optional_tensor(f, "mm.0.bias", {4 * E});
  w.mm2_w = need_tensor(f, "mm.2.weight", {4 * E, T});
  w.mm2_b = optional_tensor(f, "mm.2.bias", {T});
  return w;
}

// Qwen3-VL (clip.cpp's PROJECTOR_TYPE_QWEN3VL): RoPE base 10000, 8 to 4096 merged patches, 2x2
// merger, full attention; the deepstack layers are those with v.deepstack.<layer>.* tensors.
VisionSpec read_qwen3vl_spec(const gguf::GgufFile& f) {
  if (!f.get_optional<bool>("clip.use_gelu").value_or(false)) {
    throw std::runtime_error("qwen3vl vision projector without clip.use_gelu is not supported");
  }
  VisionSpec s;
  s.projector = ProjectorType::Qwen3vl;
  read_tower_sizes(f, s);
  s.n_merge = f.get_optional<uint32_t>("clip.vision.spatial_merge_size").value_or(2);
  s.rope_theta = 10000.0f;
  set_merged_patch_budget(s, "qwen3vl", 2, 8, 4096);
  const gguf::TensorInfo* mm2 = f.find_tensor("mm.2.weight");
  if (!mm2 || mm2->shape.size() != 2 || mm2->shape[0] != 4ull * s.n_embd || mm2->shape[1] == 0) {
    throw std::runtime_error("qwen3vl vision projector has no mm.2.weight of shape [" +
                             std::to_string(4ull * s.n_embd) + ", text width]");
  }
  s.text_embd = static_cast<uint32_t>(mm2->shape[1]);
  const gguf::TensorInfo* pos = f.find_tensor("v.position_embd.weight");
  const auto side = pos && pos->shape.size() == 2
                        ? static_cast<uint32_t>(std::lround(std::sqrt(double(pos->shape[1]))))
                        : 0u;
  if (side == 0 || pos->shape[0] != s.n_embd || uint64_t{side} * side != pos->shape[1]) {
    throw std::runtime_error("qwen3vl vision projector has no v.position_embd.weight of shape [" +
                             std::to_string(s.n_embd) + ", a square count]");
  }
  s.pos_side = side;
  for (uint32_t l = 0; l < s.n_layer; ++l)
    if (f.find_tensor("v.deepstack." + std::to_string(l) + ".fc1.weight"))
      s.deepstack_layers.push_back(l);
  return s;
}

// The rows [first, first + rows) of a 2-D tensor, as a tensor of its own (a ggml row is whole
// blocks of any type).
TensorRef row_view(const TensorRef& t, uint64_t first, uint64_t rows, const std::string& name) {
  const uint64_t row_bytes = t.bytes.size() / t.shape[1];
  TensorRef v = t;
  v.name = name;
  v.shape = {t.shape[0], rows};
  v.bytes = t.bytes.subspan(first * row_bytes, rows * row_bytes);
  return v;
}

// Values [first, first + n) of an F32 vector (need_tensor's vectors); empty for an empty one.
TensorRef part_of(const TensorRef& t, uint64_t first, uint64_t n, const std::string& name) {
  if (t.bytes.empty()) return {};
  if (t.type != gguf::TensorType::F32)
    throw std::runtime_error("vision projector tensor " + t.name + " is not F32");
  TensorRef v = t;
  v.name = name;
  v.shape = {n};
  v.bytes = t.bytes.subspan(first * 4, n * 4);
  return v;
}

VisionWeights read_qwen3vl_weights(const gguf::GgufFile& f, const VisionSpec& s) {
  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, T = s.text_embd;
  VisionWeights w;
  w.patch_w = need_tensor(f, "v.patch_embd.weight", {P, P, 3, E});
  w.patch_w1 = need_tensor(f, "v.patch_embd.weight.1", {P, P, 3, E});
  w.patch_b = need_tensor(f, "v.patch_embd.bias", {E});
  w.position = need_tensor(f, "v.position_embd.weight", {E, uint64_t{s.pos_side} * s.pos_side});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    VitLayerWeights L;
    L.ln1_w = need_tensor(f, b + "ln1.weight", {E});
    L.ln1_b = need_tensor(f, b + "ln1.bias", {E});
    L.ln2_w = need_tensor(f, b + "ln2.weight", {E});
    L.ln2_b = need_tensor(f, b + "ln2.bias", {E});
    // The fused projection's output rows are Q's, then K's, then V's.
    const TensorRef qkv = need_tensor(f, b + "attn_qkv.weight", {E, 3 * E});
    const TensorRef qkv_b = need_tensor(f, b + "attn_qkv.bias", {3 * E});
    L.q_w = row_view(qkv, 0, E, b + "attn_qkv.weight[q]");
    L.k_w = row_view(qkv, E, E, b + "attn_qkv.weight[k]");
    L.v_w = row_view(qkv, 2 * E, E, b + "attn_qkv.weight[v]");
    L.q_b = part_of(qkv_b, 0, E, b + "attn_qkv.bias[q]");
    L.k_b = part_of(qkv_b, E, E, b + "attn_qkv.bias[k]");
    L.v_b = part_of(qkv_b, 2 * E, E, b + "attn_qkv.bias[v]");
    L.o_w = need_tensor(f, b + "attn_out.weight", {E, E});
    L.o_b = optional_tensor(f, b + "attn_out.bias", {E});
    L.up_w = need_tensor(f, b + "ffn_up.weight", {E, F});
    L.up_b = optional_tensor(f, b + "ffn_up.bias", {F});
    L.down_w = need_tensor(f, b + "ffn_down.weight", {F, E});
    L.down_b = optional_tensor(f, b + "ffn_down.bias", {E});
    w.layers.push_back(std::move(L));
  }
  w.post_ln_w = need_tensor(f, "v.post_ln.weight", {E});
  w.post_ln_b = optional_tensor(f, "v.post_ln.bias", {E});
  w.mm1_w = need_tensor(f, "mm.0.weight", {4 * E, 4 * E});
  w.mm1_b = optional_tensor(f, "mm.0.bias", {4 * E});
  w.mm2_w = need_tensor(f, "mm.2.weight", {4 * E, T});
  w.mm2_b = optional_tensor(f, "mm.2.bias", {T});
  for (uint32_t l : s.deepstack_layers) {
    const std::string b = "v.deepstack." + std::to_string(l) + ".";
    DeepstackWeights d;
    d.layer = l;
    d.norm_w = need_tensor(f, b + "norm.weight", {4 * E});
    d.norm_b = optional_tensor(f, b + "norm.bias", {4 * E});
    d.fc1_w = need_tensor(f, b + "fc1.weight", {4 * E, 4 * E});
    d.fc1_b = optional_tensor(f, b + "fc1.bias", {4 * E});
    d.fc2_w = need_tensor(f, b + "fc2.weight", {4 * E, T});
    d.fc2_b = optional_tensor(f, b + "fc2.bias", {T});
    w.deepstack.push_back(std::move(d));
  }
  return w;
}

}  // namespace

TowerSize tower_size(const VisionSpec& s, uint32_t width, uint32_t height) {
  if (!s.dynamic()) return {s.image_size, s.image_size};
  if (width == 0 || height == 0) return {0, 0};
  // llama.cpp's calc_size_preserved_ratio (single precision, as there): each side rounded to the
  // nearest multiple of the alignment, then scaled down (floor) into max_pixels or up (ceil) to
  // min_pixels keeping the aspect ratio.
  const int align = static_cast<int>(s.patch_size * s.n_merge);
  const auto fa = static_cast<float>(align);
  auto round_by = [&](float x) { return static_cast<int>(std::round(x / fa)) * align; };
  auto ceil_by = [&](float x) { return static_cast<int>(std::ceil(x / fa)) * align; };
  auto floor_by = [&](float x) { return static_cast<int>(std::floor(x / fa)) * align; };
  const auto w = static_cast<float>(width), h = static_cast<float>(height);
  int w_bar = std::max(align, round_by(w));
  int h_bar = std::max(align, round_by(h));
  const int64_t area = int64_t{w_bar} * h_bar;
  if (s.max_pixels > 0 && area > s.max_pixels) {
    const float beta = std::sqrt(h * w / static_cast<float>(s.max_pixels));
    h_bar = std::max(align, floor_by(h / beta));
    w_bar = std::max(align, floor_by(w / beta));
  } else if (s.min_pixels > 0 && area < s.min_pixels) {
    const float beta = std::sqrt(static_cast<float>(s.min_pixels) / (h * w));
    h_bar = ceil_by(h * beta);
    w_bar = ceil_by(w * beta);
  }
  return {static_cast<uint32_t>(w_bar), static_cast<uint32_t>(h_bar)};
}

uint32_t image_token_count(const VisionSpec& s, uint32_t width, uint32_t height) {
  if (!s.dynamic()) return s.n_output_tokens();
  const TowerSize t = tower_size(s, width, height);
  const uint32_t cols = t.width / s.patch_size / s.n_merge;
  const uint32_t rows = t.height / s.patch_size / s.n_merge;
  if (s.qwen_vl() || s.projector == ProjectorType::Gemma4v) return rows * cols;
  return rows == 0 ? 0 : rows * cols + rows - 1;
}

VisionSpec read_vision_spec(const gguf::GgufFile& f) {
  std::string type = f.get_optional<std::string>("clip.projector_type").value_or("");
  if (type.empty()) type = f.get_optional<std::string>("clip.vision.projector_type").value_or("");
  if (!f.get_optional<bool>("clip.has_vision_encoder").value_or(false)) {
    throw std::runtime_error("the projector has no vision encoder (clip.has_vision_encoder)");
  }
  if (type == "pixtral") return read_pixtral_spec(f);
  if (type == "qwen2.5vl_merger") return read_qwen25vl_spec(f);
  if (type == "gemma4v") return read_gemma4v_spec(f);
  if (type == "qwen3vl_merger") return read_qwen3vl_spec(f);
  if (type != "gemma3") {
    throw std::runtime_error("vision projector type '" + type +
                             "' is not supported yet (supported: gemma3, gemma4v, pixtral, "
                             "qwen2.5vl_merger, qwen3vl_merger)");
  }
  if (!f.get_optional<bool>("clip.use_gelu").value_or(false)) {
    throw std::runtime_error("gemma3 vision projector without clip.use_gelu is not supported");
  }
  VisionSpec s;
  s.projector = ProjectorType::Gemma3;
  const std::string v = "clip.vision.";
  read_tower_sizes(f, s);
  // llama.cpp's default for every Gemma 3 size; its tiny test model writes the key.
  s.n_merge = f.get_optional<uint32_t>(v + "projector.scale_factor").value_or(4);
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
  if (s.projector == ProjectorType::Pixtral) return read_pixtral_weights(f, s);
  if (s.projector == ProjectorType::Qwen25vl) return read_qwen25vl_weights(f, s);
  if (s.projector == ProjectorType::Gemma4v) {
    throw std::logic_error("read_vision_weights: gemma4v's are read_gemma4v_weights");
  }
  if (s.projector == ProjectorType::Qwen3vl) return read_qwen3vl_weights(f, s);
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
  if (t.bytes.empty()) return {};
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  std::vector<float> out(n);
  gguf::dequantize(t.type, t.bytes.data(), out.data(), n);
  return out;
}

}  // namespace vkllm::vision
