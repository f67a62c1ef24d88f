#include "engine/runtime/routed_experts.h"

namespace vkllm::runtime {

GluAct glu_act_of(model::Activation activation) {
  switch (activation) {
    case model::Activation::SiLU:
      return GluAct::Silu;
    case model::Activation::GeluTanh:
      return GluAct::GeluTanh;
    case model::Activation::SwigluOai:
      return GluAct::SwigluOai;
  }
  return GluAct::Silu;
}

MoeSpec routed_experts(const model::ModelSpec& spec, uint32_t l) {
  MoeSpec m;
  m.layer = l;
  m.x = {Act::H};
  m.out = {Act::X};
  m.n_embd = spec.n_embd;
  m.n_ff = spec.n_ff_exp;
  m.n_expert = spec.n_expert;
  m.n_used = spec.n_expert_used;
  m.norm_weights = spec.moe_norm_weights;
  m.act = glu_act_of(spec.activation);
  m.softmax_after_top_k = spec.moe_gating == model::MoeGating::SoftmaxTopK;
  m.biases = spec.moe_biases;
  m.sigmoid = spec.moe_gating == model::MoeGating::Sigmoid;
  m.weight_before_ffn = spec.moe_weight_before_ffn;
  m.sigmoid_scores = spec.moe_gating == model::MoeGating::SigmoidScores;
  m.select_bias = spec.moe_select_bias;
  m.weight_scale = spec.moe_weights_scale;
  m.gated = !spec.moe_up_only;
  return m;
}

}  // namespace vkllm::runtime
