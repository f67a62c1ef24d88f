// A plain scalar CPU forward pass for the supported architectures, used only by tests as the
// reference the Vulkan engine is checked against. Deliberately simple: weights dequantized to
// float once, one sequence, a contiguous cache, double accumulation in dot products.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "tests/reference/reference_matrix.h"

namespace vkllm::reference {

// The mixture-of-experts routing of one token, written plainly (a stable sort of the softmax
// probabilities, larger first): the experts in rank order and their weights, renormalised when
// `norm`. The scalar reference of cpu::moe_route and shaders/moe_route.comp.
struct MoeRoute {
  std::vector<uint32_t> ids;
  std::vector<float> weights;
};
MoeRoute reference_moe_route(std::span<const float> logits, uint32_t n_used, bool norm);
// gpt-oss's routing: the n_used largest logits (ties: the lower index), weights a softmax over
// them.
MoeRoute reference_moe_route_top_k_softmax(std::span<const float> logits, uint32_t n_used);

class ReferenceModel {
 public:
  // With llama_cpp_rounding, activations are rounded the way llama.cpp's CPU backend rounds them
  // inside its matrix products (to the weight type's "vec_dot" type: Q8_0, Q8_1, Q8_K, F16 or
  // BF16), and K/V are stored as f16, so quantized references can be matched closely.
  explicit ReferenceModel(const gguf::GgufFile& file, bool llama_cpp_rounding = true);

  // Like our Vulkan engine: activations stay f32, only K/V are stored as f16.
  struct EngineRounding {};
  ReferenceModel(const gguf::GgufFile& file, EngineRounding);

  const model::ModelSpec& spec() const { return spec_; }

  // Appends `tokens` at the next positions and returns the logits after each of them
  // (tokens.size() rows of n_vocab), or only after the last one (one row) unless all_rows.
  std::vector<std::vector<float>> forward(std::span<const int32_t> tokens, bool all_rows = true);
  // Like forward(), but each row is the hidden state after the final norm (n_embd; no LM head):
  // what a decoder used as an embedder pools.
  std::vector<std::vector<float>> hidden_states(std::span<const int32_t> tokens);
  // An embedding model's (gemma-embedding) pooled output for one whole input: every layer over
  // all its tokens with the spec's (non-causal) attention, the final norm, pooling and the dense
  // projections. Not normalised. Resets the cache first.
  std::vector<float> embed(std::span<const int32_t> tokens);
  void reset() {
    layers_cache_.assign(spec_.n_layer, {});
    n_past_ = 0;
  }
  uint32_t n_past() const { return n_past_; }
  // Mixture-of-experts models: for each token of the last forward() (every row, kept or not),
  // per layer, how far the last selected expert's router logit is above the best unselected
  // one. A backend that rounds differently may pick the other expert where this is small.
  const std::vector<std::vector<float>>& route_gaps() const { return route_gaps_; }

 private:
  using Matrix = ReferenceMatrix;
  struct Layer {
    Matrix attn_norm, wq, wk, wv, wqkv, wo, bq, bk, bv, q_norm, k_norm, post_attn_norm;
    Matrix ffn_norm, gate, up, down, post_ffn_norm;
    Matrix router;                             // MoE: [n_embd -> n_expert]
    std::vector<Matrix> gate_e, up_e, down_e;  // MoE: each expert's own
    // gpt-oss: output bias, attention sinks (one logit per head), router and expert biases.
    Matrix bo, sinks, router_b;
    std::vector<Matrix> gate_eb, up_eb, down_eb;
    // A shared expert (ModelSpec::n_ff_shexp) and its per-token gate (one row).
    Matrix gate_sh, up_sh, down_sh, gate_inp_sh;
  };
  struct Cache {
    std::vector<std::vector<float>> k, v;  // per position: n_head_kv * head_dim
  };

  std::vector<float> matvec(const Matrix& m, const std::vector<float>& x) const;
  std::vector<float> rms_norm(const std::vector<float>& x, const Matrix& w, size_t offset = 0,
                              size_t n = 0) const;
  void rope(std::vector<float>& v, uint32_t n_heads, uint32_t pos, bool swa) const;
  // One layer of one token in three parts: its Q (K and V go to the cache), the attention of
  // a query at `pos` over the cached positions, then the output projection and the FFN into x.
  std::vector<float> layer_qkv(uint32_t l, const std::vector<float>& x, uint32_t pos);
  std::vector<float> attend(uint32_t l, const std::vector<float>& q, uint32_t pos) const;
  void layer_rest(uint32_t l, std::vector<float>& x, const std::vector<float>& attn) const;
  std::vector<float> token_embedding(int32_t token) const;
  std::vector<float> forward_one(int32_t token, uint32_t pos, bool logits);
  // The dense FFN or the mixture of experts of layer L on the normed input h.
  std::vector<float> ffn(const Layer& L, const std::vector<float>& h) const;
  std::vector<float> moe(const Layer& L, const std::vector<float>& h) const;
  void load_moe(const gguf::GgufFile& f, uint32_t layer, Layer& L) const;
  // YaRN as ggml's rope computes it (ext_factor 1), read from the file on its own.
  struct Yarn {
    bool on = false;
    float freq_scale = 1.f, low = 0.f, high = 0.f, mscale = 1.f;
    float temp_scale = 0.f;  // attention temperature (mistral3), over temp_floor positions
    uint32_t temp_floor = 1;
  };
  Yarn yarn_;

  model::ModelSpec spec_;
  bool llama_cpp_rounding_;
  bool f16_kv_;
  Matrix embd_, out_norm_, out_, rope_freqs_, dense2_, dense3_;
  std::vector<Layer> layers_;
  std::vector<Cache> layers_cache_;
  uint32_t n_past_ = 0;
  bool hidden_out_ = false;
  mutable std::vector<std::vector<float>> route_gaps_;
};

}  // namespace vkllm::reference
