#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {
const char* suffix(Weight w) {
  switch (w) {
    case Weight::TokenEmbd:
      return "token_embd.weight";
    case Weight::OutputNorm:
      return "output_norm.weight";
    case Weight::Output:
      return "output.weight";
    case Weight::RopeFreqs:
      return "rope_freqs.weight";
    case Weight::AttnNorm:
      return "attn_norm.weight";
    case Weight::AttnQ:
      return "attn_q.weight";
    case Weight::AttnK:
      return "attn_k.weight";
    case Weight::AttnV:
      return "attn_v.weight";
    case Weight::AttnQKV:
      return "attn_qkv.weight";
    case Weight::AttnOut:
      return "attn_output.weight";
    case Weight::AttnQBias:
      return "attn_q.bias";
    case Weight::AttnKBias:
      return "attn_k.bias";
    case Weight::AttnVBias:
      return "attn_v.bias";
    case Weight::AttnQNorm:
      return "attn_q_norm.weight";
    case Weight::AttnKNorm:
      return "attn_k_norm.weight";
    case Weight::PostAttnNorm:
      return "post_attention_norm.weight";
    case Weight::FfnNorm:
      return "ffn_norm.weight";
    case Weight::FfnGate:
      return "ffn_gate.weight";
    case Weight::FfnUp:
      return "ffn_up.weight";
    case Weight::FfnDown:
      return "ffn_down.weight";
    case Weight::PostFfnNorm:
      return "post_ffw_norm.weight";
    case Weight::TokenTypes:
      return "token_types.weight";
    case Weight::PosEmbd:
      return "position_embd.weight";
    case Weight::TokenEmbdNorm:
      return "token_embd_norm.weight";
    case Weight::TokenEmbdNormBias:
      return "token_embd_norm.bias";
    case Weight::AttnOutBias:
      return "attn_output.bias";
    case Weight::AttnSinks:
      return "attn_sinks.weight";
    case Weight::FfnGateInpBias:
      return "ffn_gate_inp.bias";
    case Weight::FfnGateExpsBias:
      return "ffn_gate_exps.bias";
    case Weight::FfnUpExpsBias:
      return "ffn_up_exps.bias";
    case Weight::FfnDownExpsBias:
      return "ffn_down_exps.bias";
    case Weight::ShortConvInProj:
      return "shortconv.in_proj.weight";
    case Weight::ShortConvConv:
      return "shortconv.conv.weight";
    case Weight::ShortConvOutProj:
      return "shortconv.out_proj.weight";
    case Weight::AttnOutNorm:
      return "attn_output_norm.weight";
    case Weight::AttnOutNormBias:
      return "attn_output_norm.bias";
    case Weight::FfnUpBias:
      return "ffn_up.bias";
    case Weight::FfnDownBias:
      return "ffn_down.bias";
    case Weight::LayerOutNorm:
      return "layer_output_norm.weight";
    case Weight::LayerOutNormBias:
      return "layer_output_norm.bias";
    case Weight::Cls:
      return "cls.weight";
    case Weight::ClsBias:
      return "cls.bias";
    case Weight::ClsOut:
      return "cls.output.weight";
    case Weight::ClsOutBias:
      return "cls.output.bias";
    case Weight::FfnGateInp:
      return "ffn_gate_inp.weight";
    case Weight::FfnGateExps:
      return "ffn_gate_exps.weight";
    case Weight::FfnUpExps:
      return "ffn_up_exps.weight";
    case Weight::FfnDownExps:
      return "ffn_down_exps.weight";
    case Weight::Dense2:
      return "dense_2.weight";
    case Weight::Dense3:
      return "dense_3.weight";
    case Weight::PerLayerTokenEmbd:
      return "per_layer_token_embd.weight";
    case Weight::PerLayerModelProj:
      return "per_layer_model_proj.weight";
    case Weight::PerLayerProjNorm:
      return "per_layer_proj_norm.weight";
    case Weight::AltupProj:
      return "altup_proj.weight";
    case Weight::AltupUnembdProj:
      return "altup_unembd_proj.weight";
    case Weight::PerLayerInpGate:
      return "inp_gate.weight";
    case Weight::PerLayerProj:
      return "proj.weight";
    case Weight::PerLayerPostNorm:
      return "post_norm.weight";
    case Weight::AltupCorrectCoef:
      return "altup_correct_coef.weight";
    case Weight::AltupCorrectScale:
      return "altup_correct_scale.weight";
    case Weight::AltupPredictCoef:
      return "altup_predict_coef.weight";
    case Weight::AltupRouter:
      return "altup_router.weight";
    case Weight::AltupRouterNorm:
      return "altup_router_norm.weight";
    case Weight::LaurelL:
      return "laurel_l.weight";
    case Weight::LaurelR:
      return "laurel_r.weight";
    case Weight::LaurelPostNorm:
      return "laurel_post_norm.weight";
    case Weight::LayerOutScale:
      return "layer_output_scale.weight";
    case Weight::FfnPreNorm2:
      return "pre_ffw_norm_2.weight";
    case Weight::FfnPostNorm1:
      return "post_ffw_norm_1.weight";
    case Weight::FfnPostNorm2:
      return "post_ffw_norm_2.weight";
    case Weight::FfnGateInpScale:
      return "ffn_gate_inp.scale";
    case Weight::FfnDownExpsScale:
      return "ffn_down_exps.scale";
    case Weight::AttnGate:
      return "attn_gate.weight";
    case Weight::SsmConv1d:
      return "ssm_conv1d.weight";
    case Weight::SsmDt:
      return "ssm_dt.bias";
    case Weight::SsmA:
      return "ssm_a";
    case Weight::SsmAlpha:
      return "ssm_alpha.weight";
    case Weight::SsmBeta:
      return "ssm_beta.weight";
    case Weight::SsmNorm:
      return "ssm_norm.weight";
    case Weight::SsmOut:
      return "ssm_out.weight";
    case Weight::SsmIn:
      return "ssm_in.weight";
    case Weight::SsmConv1dBias:
      return "ssm_conv1d.bias";
    case Weight::SsmD:
      return "ssm_d";
  }
  return "";
}
}  // namespace

bool is_per_layer(Weight w) {
  switch (w) {
    case Weight::TokenEmbd:
    case Weight::OutputNorm:
    case Weight::Output:
    case Weight::RopeFreqs:
    case Weight::TokenTypes:
    case Weight::PosEmbd:
    case Weight::TokenEmbdNorm:
    case Weight::TokenEmbdNormBias:
    case Weight::Cls:
    case Weight::ClsBias:
    case Weight::ClsOut:
    case Weight::ClsOutBias:
    case Weight::Dense2:
    case Weight::Dense3:
    case Weight::PerLayerTokenEmbd:
    case Weight::PerLayerModelProj:
    case Weight::PerLayerProjNorm:
    case Weight::AltupProj:
    case Weight::AltupUnembdProj:
      return false;
    default:
      return true;
  }
}

std::string weight_name(Weight w, uint32_t layer) {
  if (!is_per_layer(w)) return suffix(w);
  return "blk." + std::to_string(layer) + "." + suffix(w);
}

}  // namespace vkllm::model
