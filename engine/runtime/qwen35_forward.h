// Qwen3.5's two kinds of token-mixing block (llama.cpp's qwen35), on any StepBackend with the
// DeltaNet operations; Forward runs them in place of the attention block and adds the FFN. Each
// starts from the layer's normed input in H and ends, like every chained block, with its output
// projection added into X and the FFN's norm (post_attention_norm) of the sum in H.
//
// Gated attention: attn_q gives per head the query and an output gate side by side (QKV, 2 x
// n_embd_q per token); Q and K RMS-normed per head, RoPE, paged attention, its output times
// sigmoid(gate), attn_output.
//
// Gated DeltaNet: attn_qkv (the conv's Q|K|V channels), attn_gate (z), ssm_alpha and ssm_beta
// into one QKV row per token [qkv | z | alpha | beta | conv(qkv)]; the causal conv with SiLU
// into the row's last part; the gated delta rule into Attn (value heads x head_dim); then per
// head rms_norm with ssm_norm times silu(z), and ssm_out.
#pragma once

#include <span>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

class Qwen35Forward {
 public:
  explicit Qwen35Forward(const model::ModelSpec& spec) : spec_(spec) {}
  // Layer l's attention or DeltaNet block over the step's T tokens; ffn_inputs are the weights
  // that read the FFN norm's output (Forward::ffn_inputs: gate and up, or them fused).
  void block(StepBackend& b, uint32_t l, uint32_t T, std::span<const WeightRef> ffn_inputs) const;

 private:
  using Feeds = std::span<const WeightRef>;
  void attention(StepBackend& b, uint32_t l, uint32_t T, Feeds ffn) const;
  void delta_net(StepBackend& b, uint32_t l, uint32_t T, Feeds ffn) const;
  // The block's output projection (from Attn) into X, then post_attention_norm into H.
  void out_then_ffn_norm(StepBackend& b, uint32_t l, uint32_t T, model::Weight wo, Feeds ffn) const;

  const model::ModelSpec& spec_;
};

}  // namespace vkllm::runtime
