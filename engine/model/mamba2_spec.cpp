#include "engine/model/mamba2_spec.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/model/weight_check.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

uint32_t mamba_u32(const gguf::GgufFile& f, const std::string& key) {
  const auto v = f.get_optional<uint32_t>(key);
  if (!v || *v == 0) throw std::runtime_error("model metadata is missing " + key);
  return *v;
}

// Granite's multipliers: 0 or absent means none (llama.cpp's test of f_*_scale != 0).
float multiplier(const gguf::GgufFile& f, const std::string& key) {
  const float v = f.get_optional<float>(key).value_or(0.0f);
  return v == 0.0f ? 1.0f : v;
}

// feed_forward_length per layer (nemotron_h writes one per layer, 0 where there is no FFN).
std::vector<uint32_t> ffn_widths(const gguf::GgufFile& f, const ModelSpec& s) {
  const std::string key = s.arch_name + ".feed_forward_length";
  const gguf::Value* v = f.find(key);
  if (v && v->type() == gguf::ValueType::ARRAY) {
    std::vector<uint32_t> w = f.get_array<uint32_t>(key);
    if (w.size() < s.n_layer) {
      throw std::runtime_error(key + " has " + std::to_string(w.size()) + " entries for " +
                               std::to_string(s.n_layer) + " layers");
    }
    w.resize(s.n_layer);
    return w;
  }
  return std::vector<uint32_t>(s.n_layer, s.n_ff);
}

void read_mamba_sizes(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string p = s.arch_name + ".ssm.";
  const std::string fam = s.arch_name + ": ";
  s.ssm_conv_kernel = mamba_u32(f, p + "conv_kernel");
  s.mamba_d_inner = mamba_u32(f, p + "inner_size");
  s.mamba_d_state = mamba_u32(f, p + "state_size");
  s.mamba_n_group = mamba_u32(f, p + "group_count");
  s.mamba_n_head = mamba_u32(f, p + "time_step_rank");
  if (s.ssm_conv_kernel < 2 || s.ssm_conv_kernel > kMaxShortConvLength) {
    throw std::runtime_error(fam + "ssm.conv_kernel " + std::to_string(s.ssm_conv_kernel) +
                             " is outside 2.." + std::to_string(kMaxShortConvLength));
  }
  if (s.mamba_d_inner % s.mamba_n_head != 0 || s.mamba_d_inner % s.mamba_n_group != 0 ||
      s.mamba_n_head % s.mamba_n_group != 0) {
    throw std::runtime_error(fam + "ssm.inner_size " + std::to_string(s.mamba_d_inner) +
                             " is not split evenly by its " + std::to_string(s.mamba_n_head) +
                             " heads into " + std::to_string(s.mamba_n_group) + " groups");
  }
  if (s.mamba_d_state > kMaxMambaStateSize) {
    throw std::runtime_error(fam + "ssm.state_size " + std::to_string(s.mamba_d_state) +
                             " is over " + std::to_string(kMaxMambaStateSize));
  }
}

void expect_mamba_layer(const gguf::GgufFile& f, const ModelSpec& s, uint32_t l) {
  const std::string_view fam = s.arch_name;
  const uint64_t E = s.n_embd, C = s.mamba_conv_channels(), nh = s.mamba_n_head;
  const uint64_t ng = s.mamba_n_group, di = s.mamba_d_inner;
  expect_weight(f, fam, Weight::SsmIn, l, {E, s.mamba_in_proj()});
  expect_weight(f, fam, Weight::SsmConv1d, l, {s.ssm_conv_kernel, C}, true);
  expect_weight(f, fam, Weight::SsmConv1dBias, l, {C}, true);
  expect_weight(f, fam, Weight::SsmDt, l, {nh}, true);
  expect_weight(f, fam, Weight::SsmA, l, {1, nh}, true);
  expect_weight(f, fam, Weight::SsmD, l, {1, nh}, true);
  expect_weight(f, fam, Weight::SsmNorm, l, {di / ng, ng}, true);
  expect_weight(f, fam, Weight::SsmOut, l, {di, E});
}

void expect_attention_layer(const gguf::GgufFile& f, const ModelSpec& s, uint32_t l) {
  const std::string_view fam = s.arch_name;
  const uint64_t E = s.n_embd, qd = s.n_embd_q(), kvd = s.n_embd_k_gqa();
  for (Weight b : {Weight::AttnQBias, Weight::AttnKBias, Weight::AttnVBias, Weight::AttnOutBias}) {
    if (f.find_tensor(weight_name(b, l))) {
      throw std::runtime_error(s.arch_name + ": attention biases (" + weight_name(b, l) +
                               ") are not supported");
    }
  }
  expect_weight(f, fam, Weight::AttnQ, l, {E, qd});
  expect_weight(f, fam, Weight::AttnK, l, {E, kvd});
  expect_weight(f, fam, Weight::AttnV, l, {E, kvd});
  expect_weight(f, fam, Weight::AttnOut, l, {qd, E});
}

}  // namespace

void read_mamba2(const gguf::GgufFile& f, const std::vector<uint32_t>& kv_heads, ModelSpec& s) {
  const std::string p = s.arch_name + ".";
  const bool granite = s.arch == Arch::GraniteHybrid;
  read_mamba_sizes(f, s);
  // The MoE variants (Granite 4.0-H Tiny, Nemotron-H MoE): model_spec.cpp reads the experts
  // (read_moe) after these; Nemotron-H's FFN layers are then its MoE layers.
  const bool moe = f.get_optional<uint32_t>(p + "expert_count").value_or(0) > 0;
  if (s.head_dim != s.head_dim_v) {
    throw std::runtime_error(s.arch_name + ": key and value heads differ");
  }
  const std::vector<uint32_t> ff = ffn_widths(f, s);
  s.layer_is_recurrent.assign(s.n_layer, false);
  s.layer_is_mlp.assign(s.n_layer, false);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    if (granite) {
      s.layer_is_recurrent[l] = kv_heads[l] == 0;
    } else {
      s.layer_is_recurrent[l] = kv_heads[l] == 0 && ff[l] == 0;
      s.layer_is_mlp[l] = ff[l] > 0;
    }
  }
  if (moe && !granite) s.layer_is_moe = s.layer_is_mlp;
  s.n_ff = *std::max_element(ff.begin(), ff.end());
  s.fused_qkv = false;
  s.qkv_bias = false;
  s.qk_norm = false;
  s.fused_gate_up = false;
  s.rope_ordering = RopeOrdering::Normal;
  if (granite) {
    s.norm_eps = f.get_optional<float>(p + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
    // Granite switches RoPE with rope.scaling.finetuned (llama.cpp's default: on); Granite
    // 4.0-H's converter turns it off (no positions at all).
    s.rope = f.get_optional<bool>(p + "rope.scaling.finetuned").value_or(true);
    s.embed_scale = multiplier(f, p + "embedding_scale");
    s.residual_scale = multiplier(f, p + "residual_scale");
    s.logit_scale = multiplier(f, p + "logit_scale");
    if (const float a = f.get_optional<float>(p + "attention.scale").value_or(0.0f); a != 0.0f)
      s.attn_scale = a;
  } else {
    const auto rms = f.get_optional<float>(p + "attention.layer_norm_rms_epsilon");
    s.norm_eps =
        rms ? *rms : f.get_optional<float>(p + "attention.layer_norm_epsilon").value_or(1e-5f);
    s.rope = false;
    s.gated_ffn = false;
  }

  const uint64_t E = s.n_embd;
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    expect_weight(f, s.arch_name, Weight::AttnNorm, l, {E});
    if (s.is_recurrent(l)) {
      expect_mamba_layer(f, s, l);
    } else if (s.is_mlp_layer(l) && moe) {
      // The experts and shared expert: read_moe.
    } else if (s.is_mlp_layer(l)) {
      expect_weight(f, s.arch_name, Weight::FfnUp, l, {E, ff[l]});
      expect_weight(f, s.arch_name, Weight::FfnDown, l, {ff[l], E});
      if (ff[l] != s.n_ff) {
        throw std::runtime_error(s.arch_name + ": FFN layers of different widths");
      }
    } else {
      expect_attention_layer(f, s, l);
    }
    if (granite) expect_weight(f, s.arch_name, Weight::FfnNorm, l, {E});
    if (granite && !moe) {
      expect_weight(f, s.arch_name, Weight::FfnGate, l, {E, s.n_ff});
      expect_weight(f, s.arch_name, Weight::FfnUp, l, {E, s.n_ff});
      expect_weight(f, s.arch_name, Weight::FfnDown, l, {s.n_ff, E});
    }
  }
  expect_weight(f, s.arch_name, Weight::OutputNorm, 0, {E});
}

void read_nemotron_moe(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string p = s.arch_name + ".", fam = s.arch_name + ": ";
  auto u32 = [&](const char* key) { return f.get_optional<uint32_t>(p + key).value_or(0); };
  for (const char* key : {"expert_feed_forward_length", "expert_used_count"}) {
    const gguf::Value* v = f.find(p + key);
    if (v && v->type() == gguf::ValueType::ARRAY)
      throw std::runtime_error(fam + "a per-layer " + key + " is not supported");
  }
  // llama.cpp runs the latent projections where the tensors exist and sizes the experts by
  // moe_latent_size: both or neither (a file with one only does not load there either).
  s.moe_latent = u32("moe_latent_size");
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    if (!s.is_mlp_layer(l)) continue;  // the MoE layers
    const uint64_t E = s.n_embd, Lt = s.moe_latent;
    const auto* down = f.find_tensor(weight_name(Weight::FfnLatentDown, l));
    const auto* up = f.find_tensor(weight_name(Weight::FfnLatentUp, l));
    if (Lt == 0 && !down && !up) continue;
    if (Lt == 0 || !down || !up || down->shape != std::vector<uint64_t>{E, Lt} ||
        up->shape != std::vector<uint64_t>{Lt, E}) {
      throw std::runtime_error(fam + "moe_latent_size " + std::to_string(Lt) +
                               " does not match layer " + std::to_string(l) +
                               "'s ffn_latent_down / ffn_latent_up");
    }
  }
  // The latent rows live in the Attn and QKV activations (Mamba2Forward::nemotron_moe).
  if (s.moe_latent > std::min(s.attn_act_width(), s.qkv_act_width()))
    throw std::runtime_error(fam + "moe_latent_size " + std::to_string(s.moe_latent) +
                             " is wider than the activations that hold it");
  if (u32("expert_group_count") > 1)
    throw std::runtime_error(fam +
                             "grouped expert selection (expert_group_count) is not supported");
  if (u32("nextn_predict_layers") > 0) {
    throw std::runtime_error(
        fam + "multi-token prediction layers (nextn_predict_layers) are not supported");
  }
  s.moe_gating = MoeGating::SigmoidScores;
  s.moe_select_bias = true;  // llama.cpp requires exp_probs_b
  s.moe_up_only = true;
  const float scale = f.get_optional<float>(p + "expert_weights_scale").value_or(0.0f);
  s.moe_weights_scale = scale == 0.0f ? 1.0f : scale;  // llama.cpp: 0 means none
}

}  // namespace vkllm::model
