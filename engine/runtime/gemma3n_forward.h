// Gemma 3n's decoder graph (llama.cpp's gemma3n), on any StepBackend with the Gemma 3n
// operations. What it adds to Gemma 3's layer:
// - per-layer inputs: each token's row of per_layer_token_embd (n_layer x n_embd_altup, scaled
//   by sqrt(n_embd_altup)) plus the RMS-normed projection of its embedding, times 1/sqrt(2);
//   layer l gates its slice into the residual streams after the layer;
// - AltUp: n_altup residual streams (the embedding and its altup_proj projections rescaled to
//   its magnitude); before a layer a router predicts every stream as a mix of all, the active
//   stream's prediction runs through the layer, and a router-weighted correction spreads the
//   layer's change to every stream; at the end the streams are unprojected, rescaled and
//   averaged;
// - LAuReL: a low-rank branch beside attention, added with it at 1/sqrt(2);
// - activation sparsity: the first layers' FFN gates keep only values above mean + 1.645 std;
// - KV sharing: layers past ModelSpec::n_layer_kv compute queries only and attend over an
//   earlier layer's cache (the backend maps the layer, ModelSpec::kv_layer);
// - V RMS-normed without a weight, QK^T unscaled, final logits soft-capped.
#pragma once

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

class Gemma3nForward {
 public:
  explicit Gemma3nForward(const model::ModelSpec& spec) : spec_(spec) {}
  // From the step's token ids through every layer to the merged streams in X (the rows the
  // output norm and LM head then read, as for every decoder: Forward::step).
  void layers(StepBackend& b, uint32_t T) const;

 private:
  // Token t's stream i of Alt / AltPred.
  Rows stream(Act a, uint32_t i) const;
  void inputs(StepBackend& b, uint32_t T) const;
  // Modal = tanh(router(rms_norm(x) / n_embd)) of layer l; `normed`: AuxB holds the norm already.
  void router(StepBackend& b, uint32_t l, Rows x, uint32_t T, bool normed = false) const;
  void layer(StepBackend& b, uint32_t l, uint32_t T) const;
  void attention(StepBackend& b, uint32_t l, uint32_t T) const;
  void ffn(StepBackend& b, uint32_t l, uint32_t T) const;
  void per_layer_input(StepBackend& b, uint32_t l, uint32_t T) const;
  void merge_streams(StepBackend& b, uint32_t T) const;

  const model::ModelSpec& spec_;
};

}  // namespace vkllm::runtime
