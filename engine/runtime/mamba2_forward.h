// The Mamba-2 hybrids' layers (llama.cpp's granitehybrid and nemotron_h), on any StepBackend with
// the recurrent operations; Forward::step runs them in place of its own layers, then the common
// output (final norm, LM head, Granite's logit scale). Every layer starts with attn_norm of the
// residual stream X into H and adds its block's output back into X.
//
// Mamba-2 mixer: ssm_in into one QKV row per token [z | xBC | dt | conv(xBC)] (ModelSpec::
// mamba2_row), the causal conv + bias + SiLU of xBC into the row's last part, the selective scan
// (StepBackend::ssm_scan, D skip included) into Attn, times silu(z), an RMS norm over each group
// of d_inner / n_group (rms_norm_plain, then ssm_norm's weight), ssm_out.
// Attention: Q, K, V, RoPE where the model has it (Granite's switch; Nemotron-H never), paged
// attention, attn_output.
// Nemotron-H's FFN-only layers: ffn_up, relu^2, ffn_down; in its MoE variant the up-only relu^2
// experts (sigmoid scores, selection bias) and an up-only relu^2 shared expert. Granite 4.0-H adds
// ffn_norm and a SwiGLU FFN after each mixer (its MoE variant: experts and a shared expert,
// shared_expert.h); its block outputs are scaled by residual_scale.
#pragma once

#include <span>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

class Mamba2Forward {
 public:
  explicit Mamba2Forward(const model::ModelSpec& spec) : spec_(spec) {}
  // The embeddings (times embed_scale) into X, then every layer over the step's T tokens.
  void layers(StepBackend& b, uint32_t T) const;

 private:
  void layer(StepBackend& b, uint32_t l, uint32_t T) const;
  // Each block leaves its output in Attn (n wide) for its output projection `wo`.
  void mamba(StepBackend& b, uint32_t l, uint32_t T) const;
  void attention(StepBackend& b, uint32_t l, uint32_t T) const;
  // x (n wide rows) times residual_scale, then W x added into X.
  void residual_product(StepBackend& b, Rows x, uint32_t n, uint32_t T, WeightRef w) const;
  void relu2_ffn(StepBackend& b, uint32_t l, uint32_t T) const;
  void swiglu_ffn(StepBackend& b, uint32_t l, uint32_t T) const;
  // Granite's MoE variant: ffn_norm, the experts and the shared expert, scaled by residual_scale.
  void moe_ffn(StepBackend& b, uint32_t l, uint32_t T) const;
  // Nemotron-H's MoE layers: attn_norm, the experts and the shared expert (shared_expert.h).
  void nemotron_moe(StepBackend& b, uint32_t l, uint32_t T) const;

  const model::ModelSpec& spec_;
};

}  // namespace vkllm::runtime
