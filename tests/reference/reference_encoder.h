// A plain scalar CPU forward pass for encoder models (bert, nomic-bert), used only by tests as the
// reference the Vulkan Encoder is checked against: weights dequantized to float once, one input
// at a time, full (non-causal) attention, double accumulation in dot products, K/V rounded
// through f16 as the engine's scratch cache stores them. Written from the model's definition
// (llama.cpp's build_bert), independently of the engine's code.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "tests/reference/reference_matrix.h"

namespace vkllm::reference {

class ReferenceEncoder {
 public:
  explicit ReferenceEncoder(const gguf::GgufFile& file);

  const model::ModelSpec& spec() const { return spec_; }

  // Every token's hidden state after the last layer (n_tokens rows of n_embd).
  std::vector<std::vector<float>> hidden_states(std::span<const int32_t> tokens) const;
  // The input's output as the model's pooling_type says: mean, first (cls), last token, or for
  // rank the classification head's outputs on the first token. Pooling none: all rows, flat.
  std::vector<float> embed(std::span<const int32_t> tokens) const;

 private:
  using Matrix = ReferenceMatrix;
  struct Layer {
    Matrix wq, bq, wk, bk, wv, bv, wqkv, wo, bo, attn_norm_w, attn_norm_b;
    Matrix up, up_b, gate, down, down_b, out_norm_w, out_norm_b;
  };

  model::ModelSpec spec_;
  Matrix tok_embd_, type_embd_, pos_embd_, embd_norm_w_, embd_norm_b_;
  Matrix cls_, cls_b_, cls_out_, cls_out_b_;
  std::vector<Layer> layers_;
};

}  // namespace vkllm::reference
