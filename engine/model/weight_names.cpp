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
  }
  return "";
}
}  // namespace

bool is_per_layer(Weight w) {
  return w != Weight::TokenEmbd && w != Weight::OutputNorm && w != Weight::Output &&
         w != Weight::RopeFreqs;
}

std::string weight_name(Weight w, uint32_t layer) {
  if (!is_per_layer(w)) return suffix(w);
  return "blk." + std::to_string(layer) + "." + suffix(w);
}

}  // namespace vkllm::model
