// The decoder graph of one step, written once for every backend: embeddings, each layer
// (attention and FFN blocks with the architecture's variants), then only the rows that produce
// logits through the final norm, the LM head, soft-capping and greedy argmax. It calls a
// StepBackend in order; the Runner prepares the step's inputs before and collects results after.
#pragma once

#include <cstdint>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

struct StepShape {
  uint32_t n_tokens = 0;  // T: the step's tokens over all sequences
  uint32_t n_rows = 0;    // R: rows that produce logits (or hidden states)
  bool hidden = false;    // stop after the final norm (hidden states, no LM head)
  bool injected = false;  // StepBackend::inject_rows after the embedding (images)
  // Every token's hidden state after the final norm into H as well (StepOutputs::token_hidden).
  bool token_hidden = false;
};

class Forward {
 public:
  explicit Forward(const model::ModelSpec& spec) : spec_(spec) {}
  void step(StepBackend& b, const StepShape& shape) const;
  // Every layer over the step's T tokens, from the residual stream in X back into X: the
  // decoder's, or an encoder's made of the same layers (EmbeddingGemma; attention causal or not
  // as the spec says).
  // `injected`: the step has image rows (StepBackend::inject_rows), which deepstack layers add
  // their slices to.
  void layers(StepBackend& b, uint32_t T, bool injected = false) const;

 private:
  // The weights that read a block's normed input H (their q8 copy is made with it): Q|K|V or
  // Q, K, V; gate|up or gate, up; a DeltaNet's four input projections.
  struct BlockInputs {
    WeightRef w[4];
    size_t n = 0;
    std::span<const WeightRef> span() const { return {w, n}; }
  };
  BlockInputs qkv_inputs(uint32_t l) const;
  BlockInputs ffn_inputs(uint32_t l) const;

  // Every block starts from H, the norm its predecessor wrote: without post-norms a block ends
  // in a residual product whose sum the next block normalizes (products_then_norm), with them
  // (Gemma 2/3) in the post-norm's residual add and the next norm (rms_norm_add_norm).
  // The norm before the FFN (gpt-oss names it post_attention_norm) and the FFN's activation.
  WeightRef ffn_norm(uint32_t l) const;
  GluAct glu_act() const;
  void layer(StepBackend& b, uint32_t l, uint32_t T, bool injected) const;
  void attention_block(StepBackend& b, uint32_t l, uint32_t T) const;
  // LFM2's gated short convolution: in_proj to B|C|X, y = C * conv(B * X) over the sequence with
  // its carried state, out_proj added into the residual stream.
  void short_conv_block(StepBackend& b, uint32_t l, uint32_t T) const;
  // The block's output projection added into X, then the FFN's norm into H.
  void block_out_then_ffn_norm(StepBackend& b, uint32_t l, uint32_t T, WeightRef wo) const;
  // `deepstack`: add the injected rows' slice l + 1 after the layer (Qwen3-VL).
  void ffn_block(StepBackend& b, uint32_t l, uint32_t T, bool deepstack = false) const;
  void moe_block(StepBackend& b, uint32_t l, uint32_t T) const;
  void output(StepBackend& b, const StepShape& shape) const;
  // A NextN block's input (model::ModelSpec::nextn_head, nextn_head.h): X = eh_proj of
  // [enorm(embedding) | hnorm(hidden)], the hidden states being the step's injected rows.
  void nextn_input(StepBackend& b, uint32_t T) const;

  const model::ModelSpec& spec_;
};

}  // namespace vkllm::runtime
