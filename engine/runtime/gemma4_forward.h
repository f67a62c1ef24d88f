// Gemma 4's decoder graph (llama.cpp's gemma4), on any StepBackend with the operations Gemma 3n
// added (rms_norm_plain, add_rows, mul_rows, mul_weight, scale_rows, gelu, copy). What it adds
// to Gemma 3's layer:
// - global layers with their own head size, K/V head count and rotated dimensions (the
//   rope_freqs factors leave the rest of a global head unrotated), local ones with their own
//   RoPE base; per-layer FFN widths;
// - V RMS-normed without a weight, and taken from K's raw projection where a layer has no
//   attn_v; QK^T unscaled;
// - per-layer inputs as Gemma 3n's (each token's row of per_layer_token_embd, scaled by
//   sqrt(width), plus the normed projection of its embedding, times 1/sqrt(2)), gated by the
//   layer's output and added back into the residual stream after each layer;
// - KV sharing: layers past ModelSpec::n_layer_kv compute queries only and attend over an
//   earlier layer's cache (the backend maps the layer, ModelSpec::kv_layer);
// - an optional output scale per layer; final logits soft-capped.
// Each layer's input norm is written by the layer before (StepBackend::rms_norm_add_norm: a
// post-norm, its residual and the next norm in one pass where the backend fuses them), as is the
// pre-FFN norm by the post-attention norm in layers without experts.
#pragma once

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

class Gemma4Forward {
 public:
  explicit Gemma4Forward(const model::ModelSpec& spec) : spec_(spec) {}
  // From the step's token ids through every layer to the residual stream in X (the rows the
  // output norm and LM head then read, as for every decoder: Forward::step).
  // `injected`: rows replace some token embeddings (images): after the scaled embedding, so they
  // are not scaled, and before the per-layer inputs, which project them as llama.cpp does (their
  // token rows are id 0's, the padding token's, as llama.cpp takes for embedding inputs).
  void layers(StepBackend& b, uint32_t T, bool injected = false) const;

 private:
  void inputs(StepBackend& b, uint32_t T, bool injected) const;
  void layer(StepBackend& b, uint32_t l, uint32_t T) const;
  void attention(StepBackend& b, uint32_t l, uint32_t T) const;
  void ffn(StepBackend& b, uint32_t l, uint32_t T) const;
  void per_layer_input(StepBackend& b, uint32_t l, uint32_t T) const;
  // The layer's last post-norm (of `x` by `w`) into the residual, its output scale, and where a
  // layer follows, that layer's input norm into H, fused where the backend can.
  void close_layer(StepBackend& b, uint32_t l, uint32_t T, Rows x, WeightRef w) const;
  // The weight the FFN's first product reads (gate, or gate|up stacked in ffn_up).
  WeightRef gate_up_input(uint32_t l) const;

  const model::ModelSpec& spec_;
};

}  // namespace vkllm::runtime
