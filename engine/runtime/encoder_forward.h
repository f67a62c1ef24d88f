// The encoder graph of one step (bert, nomic-bert, the bert cross-encoder; EmbeddingGemma, whose
// layers are runtime::Forward's run non-causally), written once for every backend: token + type (+
// learned position) embeddings and their LayerNorm, each post-norm layer (non-causal attention over
// the step's scratch K/V, GELU or gated FFN, biases where the model has them), then pooling per
// input (mean, first, last; rank: the first token through the classification head). It calls a
// StepBackend in order; the Encoder prepares the step's inputs before and reads the outputs after.
#pragma once

#include <cstdint>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

struct EncoderShape {
  uint32_t n_tokens = 0;  // T: the step's tokens over all inputs
  uint32_t n_seqs = 0;    // S: the step's inputs
};

class EncoderForward {
 public:
  explicit EncoderForward(const model::ModelSpec& spec) : spec_(spec) {}
  // Leaves the pooled outputs in Logits (S rows of n_embd_out) or, with pooling none, every
  // token's hidden state in X.
  void step(StepBackend& b, const EncoderShape& shape) const;

 private:
  void decoder_step(StepBackend& b, const EncoderShape& shape) const;
  void embeddings(StepBackend& b, uint32_t T) const;
  void layer(StepBackend& b, uint32_t l, uint32_t T) const;
  void attention_block(StepBackend& b, uint32_t l, uint32_t T) const;
  void ffn_block(StepBackend& b, uint32_t l, uint32_t T) const;
  void pooling(StepBackend& b, uint32_t S) const;

  const model::ModelSpec& spec_;
};

}  // namespace vkllm::runtime
