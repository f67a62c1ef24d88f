#include "engine/model/projector_maker.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/gguf/inline_projector.h"
#include "engine/gguf/quants.h"
#include "engine/model/fast_normal.h"
#include "engine/model/projector_tensor_plan.h"

namespace vkllm::model {

namespace {

void fill_projector_tensor(const ProjectorTensor& t, gguf::TensorType type, uint64_t seed,
                           std::span<uint8_t> out) {
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  std::vector<float> values(n, t.value);
  if (t.init != ProjectorInit::Constant) {
    FastNormal rng(hash_name(t.name, seed));
    const float matrix_std = t.fan_in ? 1.0f / std::sqrt(static_cast<float>(t.fan_in)) : 0.0f;
    for (float& v : values) {
      const float r = rng.next();
      v = t.init == ProjectorInit::Matrix ? matrix_std * r
          : t.init == ProjectorInit::Norm ? 1.0f + 0.05f * r
                                          : 0.02f * r;
    }
  }
  gguf::quantize(type, values.data(), out.data(), n);
}

}  // namespace

// Matrices F16 (or F32), as the converter writes an f16 mmproj; vectors and the learned
// positions F32 (ggml's CPU add takes no F16 addend).
void add_projector_tensors(std::vector<ProjectorTensor>& plan, const MakeProjectorOptions& o,
                           gguf::GgufWriter& w) {
  for (ProjectorTensor& t : plan) {
    const bool half = !o.f32 && t.shape.size() >= 2 && t.name != "v.position_embd.weight";
    const gguf::TensorType type = half ? gguf::TensorType::F16 : gguf::TensorType::F32;
    std::vector<uint64_t> shape = t.shape;
    std::string name = t.name;
    w.add_lazy_tensor(std::move(name), type, std::move(shape),
                      [t = std::move(t), type, seed = o.seed](std::span<uint8_t> out) {
                        fill_projector_tensor(t, type, seed, out);
                      });
  }
}

namespace {

// What distinguishes the two projectors' shared keys.
struct ClipKind {
  const char* projector_type;  // clip.projector_type, also in general.name
  const char* act_flag;        // the tower's activation flag (clip.use_gelu, clip.use_silu)
  float eps;
  std::vector<float> mean, std;
};

// The keys both projector files carry, in the order llama.cpp's converter writes them: the clip
// header, the projector type and activation, the tower's sizes, epsilon, mean and std (each
// projector's merge key follows).
void write_clip_keys(gguf::GgufWriter& w, const MakeProjectorOptions& o, const ClipKind& kind) {
  const ProjectorShape& s = o.shape;
  w.set_string("general.architecture", "clip");
  w.set_string("general.name", std::string("vkllm random ") + kind.projector_type + " projector");
  w.set_u32("general.file_type", o.f32 ? 0 : 1);
  w.set_bool("clip.has_vision_encoder", true);
  w.set_string("clip.projector_type", kind.projector_type);
  w.set_bool(kind.act_flag, true);
  const std::string v = "clip.vision.";
  w.set_u32(v + "image_size", s.image_size);
  w.set_u32(v + "patch_size", s.patch_size);
  w.set_u32(v + "embedding_length", s.n_embd);
  w.set_u32(v + "feed_forward_length", s.n_ff);
  w.set_u32(v + "projection_dim", o.text_embd);
  w.set_u32(v + "block_count", s.n_layer);
  w.set_u32(v + "attention.head_count", s.n_head);
  w.set_f32(v + "attention.layer_norm_epsilon", kind.eps);
  w.set_f32s(v + "image_mean", kind.mean);
  w.set_f32s(v + "image_std", kind.std);
}

// Mistral 3's Pixtral projector as llama.cpp's converter writes it (clip.cpp's PROJECTOR_TYPE_
// PIXTRAL reads it): no patch or projection biases (Mistral Small 3.1 has none), CLIP's mean and
// std, and the [IMG_BREAK] token's row of the text model's embeddings as v.token_embd.img_break.
void build_pixtral_projector(const MakeProjectorOptions& o, gguf::GgufWriter& w) {
  const ProjectorShape& s = o.shape;
  if (s.patch_size == 0 || s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 ||
      s.n_embd % s.n_head != 0 || (s.n_embd / s.n_head) % 4 != 0 || s.n_ff == 0 || s.n_merge == 0 ||
      o.text_embd == 0) {
    throw std::invalid_argument("make-model: inconsistent projector shape");
  }
  write_clip_keys(w, o,
                  {"pixtral",
                   "clip.use_silu",
                   1e-5f,
                   {0.48145466f, 0.4578275f, 0.40821073f},
                   {0.26862954f, 0.26130258f, 0.27577711f}});
  w.set_u32("clip.vision.spatial_merge_size", s.n_merge);

  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, M = s.n_merge, T = o.text_embd;
  std::vector<ProjectorTensor> plan;
  auto matrix = [&](std::string name, std::vector<uint64_t> shape, uint64_t fan_in) {
    plan.push_back({std::move(name), std::move(shape), ProjectorInit::Matrix, fan_in});
  };
  auto norm = [&](std::string name, uint64_t n) {
    plan.push_back({std::move(name), {n}, ProjectorInit::Norm, 0});
  };
  matrix("v.patch_embd.weight", {P, P, 3, E}, 3 * P * P);
  norm("v.pre_ln.weight", E);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    for (const char* proj : {"attn_q", "attn_k", "attn_v", "attn_out"})
      matrix(b + proj + ".weight", {E, E}, E);
    norm(b + "ln1.weight", E);
    norm(b + "ln2.weight", E);
    matrix(b + "ffn_gate.weight", {E, F}, E);
    matrix(b + "ffn_up.weight", {E, F}, E);
    matrix(b + "ffn_down.weight", {F, E}, F);
  }
  if (M > 1) {
    norm("mm.input_norm.weight", E);
    matrix("mm.patch_merger.weight", {E * M * M, E}, E * M * M);
  }
  matrix("mm.1.weight", {E, T}, E);
  matrix("mm.2.weight", {T, T}, T);
  add_projector_tensors(plan, o, w);
  if (o.img_break.size() != T) {
    throw std::invalid_argument(
        "make-model: a pixtral projector needs the text model's [IMG_BREAK] embedding (" +
        std::to_string(T) + " values, got " + std::to_string(o.img_break.size()) + ")");
  }
  std::vector<uint8_t> row(T * sizeof(float));
  std::memcpy(row.data(), o.img_break.data(), row.size());
  w.add_tensor("v.token_embd.img_break", gguf::TensorType::F32, {T}, std::move(row));
}

// Qwen2.5-VL's projector as llama.cpp's converter writes it (clip.cpp's PROJECTOR_TYPE_QWEN25VL
// reads it): the Conv3D patch embedding split into its two frames' kernels (v.patch_embd.weight
// and .weight.1, no bias), RMS norms without biases, Q/K/V/out and the SiLU-gated FFN with
// biases, the merger's RMS norm as v.post_ln, its MLP as mm.0 (4 x n_embd square) and mm.2 (to
// the text width), and the full-attention layers as clip.vision.n_wa_pattern (every n-th).
void build_qwen25vl_projector(const MakeProjectorOptions& o, gguf::GgufWriter& w) {
  const ProjectorShape& s = o.shape;
  if (s.patch_size == 0 || s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 ||
      s.n_embd % s.n_head != 0 || (s.n_embd / s.n_head) % 4 != 0 || s.n_ff == 0 || s.n_merge != 2 ||
      s.n_wa_pattern == 0 || o.text_embd == 0) {
    throw std::invalid_argument("make-model: inconsistent projector shape");
  }
  write_clip_keys(w, o,
                  {"qwen2.5vl_merger",
                   "clip.use_silu",
                   1e-6f,
                   {0.48145466f, 0.4578275f, 0.40821073f},
                   {0.26862954f, 0.26130258f, 0.27577711f}});
  w.set_u32("clip.vision.spatial_merge_size", s.n_merge);
  w.set_u32("clip.vision.n_wa_pattern", s.n_wa_pattern);

  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, T = o.text_embd;
  std::vector<ProjectorTensor> plan;
  auto matrix = [&](std::string name, std::vector<uint64_t> shape, uint64_t fan_in) {
    plan.push_back({std::move(name), std::move(shape), ProjectorInit::Matrix, fan_in});
  };
  auto vec = [&](std::string name, uint64_t n, ProjectorInit init) {
    plan.push_back({std::move(name), {n}, init, 0});
  };
  // Each frame's kernel takes half the Conv3D's fan-in (a still image is both frames).
  matrix("v.patch_embd.weight", {P, P, 3, E}, 6 * P * P);
  matrix("v.patch_embd.weight.1", {P, P, 3, E}, 6 * P * P);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    for (const char* proj : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      matrix(b + proj + ".weight", {E, E}, E);
      vec(b + proj + ".bias", E, ProjectorInit::Bias);
    }
    vec(b + "ln1.weight", E, ProjectorInit::Norm);
    vec(b + "ln2.weight", E, ProjectorInit::Norm);
    matrix(b + "ffn_gate.weight", {E, F}, E);
    vec(b + "ffn_gate.bias", F, ProjectorInit::Bias);
    matrix(b + "ffn_up.weight", {E, F}, E);
    vec(b + "ffn_up.bias", F, ProjectorInit::Bias);
    matrix(b + "ffn_down.weight", {F, E}, F);
    vec(b + "ffn_down.bias", E, ProjectorInit::Bias);
  }
  vec("v.post_ln.weight", E, ProjectorInit::Norm);
  matrix("mm.0.weight", {4 * E, 4 * E}, 4 * E);
  vec("mm.0.bias", 4 * E, ProjectorInit::Bias);
  matrix("mm.2.weight", {4 * E, T}, 4 * E);
  vec("mm.2.bias", T, ProjectorInit::Bias);
  add_projector_tensors(plan, o, w);
}

// Qwen3-VL's projector as llama.cpp's converter writes it (conversion/qwen3vl.py; clip.cpp's
// PROJECTOR_TYPE_QWEN3VL reads it): the Conv3D patch embedding split into its two frames' kernels
// with a bias, learned positions for a square of image_size / patch_size patches a side (F32),
// LayerNorms with biases, fused Q|K|V and out with biases, a GELU MLP (ffn_up, ffn_down) with
// biases, the merger's LayerNorm as v.post_ln and its MLP as mm.0 / mm.2, and a deepstack merger
// (LayerNorm over 4 x n_embd, fc1, fc2 to the text width) after o.n_deepstack layers: layers
// deepstack_every, 2 deepstack_every, ... (v.deepstack.<layer>.*). Its mean and std are 0.5, as
// Qwen3-VL's preprocessor config says.
void build_qwen3vl_projector(const MakeProjectorOptions& o, gguf::GgufWriter& w) {
  const ProjectorShape& s = o.shape;
  if (s.patch_size == 0 || s.image_size % s.patch_size != 0 || s.n_embd == 0 || s.n_layer == 0 ||
      s.n_head == 0 || s.n_embd % s.n_head != 0 || (s.n_embd / s.n_head) % 4 != 0 || s.n_ff == 0 ||
      s.n_merge != 2 || o.text_embd == 0 || s.deepstack_every == 0) {
    throw std::invalid_argument("make-model: inconsistent projector shape");
  }
  if (o.n_deepstack * s.deepstack_every >= s.n_layer) {
    throw std::invalid_argument("make-model: a qwen3vl projector of " + std::to_string(s.n_layer) +
                                " layers has no room for the text "
                                "model's " +
                                std::to_string(o.n_deepstack) + " deepstack layers (one every " +
                                std::to_string(s.deepstack_every) + ")");
  }
  write_clip_keys(
      w, o, {"qwen3vl_merger", "clip.use_gelu", 1e-6f, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}});
  w.set_u32("clip.vision.spatial_merge_size", s.n_merge);

  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, T = o.text_embd;
  const uint64_t side = s.image_size / s.patch_size;
  std::vector<ProjectorTensor> plan;
  auto matrix = [&](std::string name, std::vector<uint64_t> shape, uint64_t fan_in) {
    plan.push_back({std::move(name), std::move(shape), ProjectorInit::Matrix, fan_in});
  };
  auto vec = [&](std::string name, uint64_t n, ProjectorInit init) {
    plan.push_back({std::move(name), {n}, init, 0});
  };
  auto layer_norm = [&](const std::string& name, uint64_t n) {
    vec(name + ".weight", n, ProjectorInit::Norm);
    vec(name + ".bias", n, ProjectorInit::Bias);
  };
  matrix("v.patch_embd.weight", {P, P, 3, E}, 6 * P * P);
  matrix("v.patch_embd.weight.1", {P, P, 3, E}, 6 * P * P);
  vec("v.patch_embd.bias", E, ProjectorInit::Bias);
  plan.push_back({"v.position_embd.weight", {E, side * side}, ProjectorInit::Matrix, 16 * E});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    matrix(b + "attn_qkv.weight", {E, 3 * E}, E);
    vec(b + "attn_qkv.bias", 3 * E, ProjectorInit::Bias);
    matrix(b + "attn_out.weight", {E, E}, E);
    vec(b + "attn_out.bias", E, ProjectorInit::Bias);
    layer_norm(b + "ln1", E);
    layer_norm(b + "ln2", E);
    matrix(b + "ffn_up.weight", {E, F}, E);
    vec(b + "ffn_up.bias", F, ProjectorInit::Bias);
    matrix(b + "ffn_down.weight", {F, E}, F);
    vec(b + "ffn_down.bias", E, ProjectorInit::Bias);
  }
  layer_norm("v.post_ln", E);
  matrix("mm.0.weight", {4 * E, 4 * E}, 4 * E);
  vec("mm.0.bias", 4 * E, ProjectorInit::Bias);
  matrix("mm.2.weight", {4 * E, T}, 4 * E);
  vec("mm.2.bias", T, ProjectorInit::Bias);
  for (uint32_t i = 0; i < o.n_deepstack; ++i) {
    const uint32_t l = (i + 1) * s.deepstack_every;
    const std::string b = "v.deepstack." + std::to_string(l) + ".";
    layer_norm(b + "norm", 4 * E);
    matrix(b + "fc1.weight", {4 * E, 4 * E}, 4 * E);
    vec(b + "fc1.bias", 4 * E, ProjectorInit::Bias);
    matrix(b + "fc2.weight", {4 * E, T}, 4 * E);
    vec(b + "fc2.bias", T, ProjectorInit::Bias);
  }
  add_projector_tensors(plan, o, w);
}

}  // namespace

std::vector<float> img_break_embedding(const gguf::GgufWriter& text) {
  const auto embd = text.copy_tensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2) {
    throw std::invalid_argument("make-model: the text model has no token_embd.weight");
  }
  const uint32_t token = gguf::img_break_token(text.find("tokenizer.ggml.tokens"));
  const uint64_t n = embd->shape[0];
  if (token >= embd->shape[1]) {
    throw std::invalid_argument("make-model: the text model has no embedding for [IMG_BREAK] (" +
                                std::to_string(token) + ")");
  }
  std::vector<float> row(n);
  const size_t row_bytes = gguf::quantized_size(embd->type, n);
  gguf::dequantize(embd->type, embd->data.data() + token * row_bytes, row.data(), n);
  return row;
}

ProjectorShape parse_projector_shape(std::string_view text, std::string_view arch) {
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  ProjectorShape shape;
  if (arch == "gemma4") {
    if (name == "test") {
      shape = {256, 16, 128, 2, 4, 256, 3};
    } else if (name == "gemma4-e2b") {
      shape = {10240, 16, 768, 16, 12, 3072, 3};
    } else {
      throw std::invalid_argument("unknown gemma4 projector shape '" + std::string(text) +
                                  "' (test, gemma4-e2b, optionally :LAYERS)");
    }
  } else if (arch == "qwen3vl") {
    // Qwen3-VL: patch 16, learned positions for image_size / patch a side, deepstack mergers.
    if (name == "test") {
      shape = {256, 16, 128, 2, 4, 256, 2, 0, 1};
    } else if (name == "qwen3vl-8b") {
      shape = {768, 16, 1152, 27, 16, 4304, 2, 0, 8};
    } else {
      throw std::invalid_argument("unknown qwen3vl projector shape '" + std::string(text) +
                                  "' (test, qwen3vl-8b, optionally :LAYERS)");
    }
  } else if (arch == "qwen2vl") {
    // Qwen2.5-VL: window attention but every n_wa_pattern-th layer.
    if (name == "test") {
      shape = {224, 14, 128, 2, 4, 256, 2, 2};
    } else if (name == "qwen25vl-7b") {
      shape = {560, 14, 1280, 32, 16, 3420, 2, 8};
    } else {
      throw std::invalid_argument("unknown qwen2vl projector shape '" + std::string(text) +
                                  "' (test, qwen25vl-7b, optionally :LAYERS)");
    }
  } else if (arch == "mistral3") {
    if (name == "test") {
      shape = {224, 14, 128, 2, 4, 256, 2};
    } else if (name == "pixtral-24b") {
      shape = {1540, 14, 1024, 24, 16, 4096, 2};
    } else {
      throw std::invalid_argument("unknown mistral3 projector shape '" + std::string(text) +
                                  "' (test, pixtral-24b, optionally :LAYERS)");
    }
  } else if (name == "test") {
    shape = {224, 14, 128, 2, 4, 512, 4};
  } else if (name == "test-wide") {
    shape = {224, 14, 1152, 2, 16, 4304, 4};
  } else if (name == "gemma3-4b") {
    shape = {896, 14, 1152, 27, 16, 4304, 4};
  } else {
    throw std::invalid_argument("unknown projector shape '" + std::string(text) +
                                "' (test, test-wide, gemma3-4b, optionally :LAYERS)");
  }
  if (colon != std::string_view::npos) {
    const std::string layers(text.substr(colon + 1));
    char* end = nullptr;
    const unsigned long n = std::strtoul(layers.c_str(), &end, 10);
    if (layers.empty() || *end != '\0' || n == 0 || n > 1000) {
      throw std::invalid_argument("projector shape '" + std::string(text) +
                                  "': the layer count after ':' must be 1 to 1000");
    }
    shape.n_layer = static_cast<uint32_t>(n);
  }
  return shape;
}

void build_random_projector(const MakeProjectorOptions& o, gguf::GgufWriter& w) {
  if (o.arch == "mistral3") {
    build_pixtral_projector(o, w);
    return;
  }
  if (o.arch == "qwen2vl") {
    build_qwen25vl_projector(o, w);
    return;
  }
  if (o.arch == "gemma4") {
    build_gemma4v_projector(o, w);
    return;
  }
  if (o.arch == "qwen3vl") {
    build_qwen3vl_projector(o, w);
    return;
  }
  if (o.arch != "gemma3") {
    throw std::invalid_argument(
        "make-model: --projector is for gemma3, gemma4, mistral3, qwen2vl and qwen3vl only (got '" +
        o.arch + "')");
  }
  const ProjectorShape& s = o.shape;
  if (s.image_size == 0 || s.patch_size == 0 || s.image_size % s.patch_size != 0 || s.n_embd == 0 ||
      s.n_layer == 0 || s.n_head == 0 || s.n_embd % s.n_head != 0 || s.n_ff == 0 ||
      s.n_merge == 0 || (s.image_size / s.patch_size) % s.n_merge != 0 || o.text_embd == 0) {
    throw std::invalid_argument("make-model: inconsistent projector shape");
  }
  // The keys and names llama.cpp's converter writes for Gemma 3's mmproj (tools/mtmd clip-impl.h
  // there): a "clip" file whose vision tower is SigLIP with GELU, mean and std 0.5.
  write_clip_keys(w, o, {"gemma3", "clip.use_gelu", 1e-6f, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}});
  w.set_u32("clip.vision.projector.scale_factor", s.n_merge);

  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size;
  const uint64_t side = s.image_size / s.patch_size;
  std::vector<ProjectorTensor> plan;
  auto matrix = [&](std::string name, std::vector<uint64_t> shape, uint64_t fan_in) {
    plan.push_back({std::move(name), std::move(shape), ProjectorInit::Matrix, fan_in});
  };
  auto vec = [&](std::string name, uint64_t n, ProjectorInit init) {
    plan.push_back({std::move(name), {n}, init, 0});
  };
  matrix("v.patch_embd.weight", {P, P, 3, E}, 3 * P * P);
  vec("v.patch_embd.bias", E, ProjectorInit::Bias);
  // Learned positions: small next to the patch embeddings, as in a trained SigLIP.
  plan.push_back({"v.position_embd.weight", {E, side * side}, ProjectorInit::Matrix, 16 * E});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    for (const char* proj : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      matrix(b + proj + ".weight", {E, E}, E);
      vec(b + proj + ".bias", E, ProjectorInit::Bias);
    }
    vec(b + "ln1.weight", E, ProjectorInit::Norm);
    vec(b + "ln1.bias", E, ProjectorInit::Bias);
    vec(b + "ln2.weight", E, ProjectorInit::Norm);
    vec(b + "ln2.bias", E, ProjectorInit::Bias);
    // fc1 as ffn_up (n_embd in, n_ff out), fc2 as ffn_down: llama.cpp's current names (it also
    // reads files that swapped them, as engine/vision does).
    matrix(b + "ffn_up.weight", {E, F}, E);
    vec(b + "ffn_up.bias", F, ProjectorInit::Bias);
    matrix(b + "ffn_down.weight", {F, E}, F);
    vec(b + "ffn_down.bias", E, ProjectorInit::Bias);
  }
  vec("v.post_ln.weight", E, ProjectorInit::Norm);
  vec("v.post_ln.bias", E, ProjectorInit::Bias);
  vec("mm.soft_emb_norm.weight", E, ProjectorInit::Norm);
  // ggml order {text width, n_embd}: llama.cpp multiplies by its transpose.
  matrix("mm.input_projection.weight", {o.text_embd, E}, E);

  add_projector_tensors(plan, o, w);
}

}  // namespace vkllm::model
