// Gemma 4's vision projector (llama.cpp's PROJECTOR_TYPE_GEMMA4V) as its converter writes it, for
// `vkllm dev make-model --arch gemma4 --projector`: kept apart from projector_maker.cpp's
// SigLIP / Pixtral / Qwen towers because its layers carry more (per-head Q/K norms, post-norms,
// a layer scale, clamp scalars around every linear layer).
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/projector_maker.h"
#include "engine/model/projector_tensor_plan.h"

namespace vkllm::model {

// The tower (engine/vision/gemma4_vision.h reads it): a patch kernel without bias, learned
// positions as two tables (column, row) of ProjectorShape::image_size rows each, RMS-normed layers
// with per-head Q/K norms, 2D RoPE, post-attention and post-FFN norms, a gated FFN (no
// clip.use_gelu or use_silu flag, as in the published files: llama.cpp's quick GELU) and a layer
// scale, then 3x3 (n_merge) average pooling, the standardisation (v.std_bias / v.std_scale), an RMS
// norm and the projection to the text width. Every linear layer's input and output clamp bounds are
// set (loose enough to clip only a few outliers), as Gemma4ClippableLinear's are in the published
// files.
void build_gemma4v_projector(const MakeProjectorOptions& o, gguf::GgufWriter& w) {
  const ProjectorShape& s = o.shape;
  if (s.patch_size == 0 || s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 ||
      s.n_embd % s.n_head != 0 || (s.n_embd / s.n_head) % 4 != 0 || s.n_ff == 0 || s.n_merge == 0 ||
      s.image_size == 0 || o.text_embd == 0) {
    throw std::invalid_argument("make-model: inconsistent projector shape");
  }
  w.set_string("general.architecture", "clip");
  w.set_string("general.name", "vkllm random gemma4v projector");
  w.set_u32("general.file_type", o.f32 ? 0 : 1);
  w.set_bool("clip.has_vision_encoder", true);
  w.set_string("clip.projector_type", "gemma4v");
  const std::string v = "clip.vision.";
  w.set_u32(v + "image_size", 224);  // unused by llama.cpp, written as its converter does
  w.set_u32(v + "patch_size", s.patch_size);
  w.set_u32(v + "embedding_length", s.n_embd);
  w.set_u32(v + "feed_forward_length", s.n_ff);
  w.set_u32(v + "projection_dim", o.text_embd);
  w.set_u32(v + "block_count", s.n_layer);
  w.set_u32(v + "attention.head_count", s.n_head);
  w.set_f32(v + "attention.layer_norm_epsilon", 1e-6f);
  w.set_f32s(v + "image_mean", {0.0f, 0.0f, 0.0f});
  w.set_f32s(v + "image_std", {1.0f, 1.0f, 1.0f});
  w.set_u32(v + "projector.scale_factor", s.n_merge);

  const uint64_t E = s.n_embd, F = s.n_ff, P = s.patch_size, D = s.n_embd / s.n_head;
  using Init = ProjectorInit;
  std::vector<ProjectorTensor> plan;
  auto matrix = [&](std::string name, std::vector<uint64_t> shape, uint64_t fan_in) {
    plan.push_back({std::move(name), std::move(shape), Init::Matrix, fan_in});
  };
  auto norm = [&](std::string name, uint64_t n) {
    plan.push_back({std::move(name), {n}, Init::Norm});
  };
  auto scalar = [&](std::string name, float value) {
    plan.push_back({std::move(name), {1}, Init::Constant, 0, value});
  };
  // A linear layer with its clamp bounds: inputs (normed rows) within +-in, outputs within +-out.
  auto clipped = [&](const std::string& base, std::vector<uint64_t> shape, float in, float out) {
    const uint64_t fan_in = shape[0];
    matrix(base + ".weight", std::move(shape), fan_in);
    scalar(base + ".input_min", -in);
    scalar(base + ".input_max", in);
    scalar(base + ".output_min", -out);
    scalar(base + ".output_max", out);
  };
  matrix("v.patch_embd.weight", {P, P, 3, E}, 3 * P * P);
  // Learned positions, small next to the patch embeddings: a column table then a row table.
  plan.push_back({"v.position_embd.weight", {E, s.image_size, 2}, Init::Matrix, 16 * E});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    norm(b + "ln1.weight", E);
    clipped(b + "attn_q", {E, E}, 2.5f, 3.0f);
    clipped(b + "attn_k", {E, E}, 2.5f, 3.0f);
    clipped(b + "attn_v", {E, E}, 2.5f, 3.0f);
    norm(b + "attn_q_norm.weight", D);
    norm(b + "attn_k_norm.weight", D);
    clipped(b + "attn_out", {E, E}, 2.0f, 3.0f);
    norm(b + "attn_post_norm.weight", E);
    norm(b + "ln2.weight", E);
    clipped(b + "ffn_gate", {E, F}, 2.5f, 3.0f);
    clipped(b + "ffn_up", {E, F}, 2.5f, 3.0f);
    clipped(b + "ffn_down", {F, E}, 1.5f, 3.0f);
    norm(b + "ffn_post_norm.weight", E);
    scalar(b + "out_scale.weight", 0.8f + 0.1f * static_cast<float>(l % 3));
  }
  norm("v.std_bias", E);
  plan.back().init = Init::Matrix;  // a bias around 0: N(0, 1/E)
  plan.back().fan_in = E;
  norm("v.std_scale", E);
  clipped("mm.input_projection", {E, o.text_embd}, 3.0f, 3.0f);

  add_projector_tensors(plan, o, w);
}

}  // namespace vkllm::model
