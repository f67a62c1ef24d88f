#include "engine/model/gemma4_spec.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

#include "engine/model/weight_check.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

// Named for its family: names in anonymous namespaces must be unique in the library (unity builds).
bool gemma4_has(const gguf::GgufFile& f, Weight w, uint32_t layer = 0) {
  return f.find_tensor(weight_name(w, layer)) != nullptr;
}

std::vector<uint32_t> gemma4_per_layer(const gguf::GgufFile& f, const std::string& key,
                                       uint32_t n_layer) {
  const gguf::Value* v = f.find(key);
  if (!v) throw std::runtime_error("gemma4 model metadata is missing " + key);
  if (v->type() != gguf::ValueType::ARRAY)
    return std::vector<uint32_t>(n_layer, f.get<uint32_t>(key));
  std::vector<uint32_t> out = f.get_array<uint32_t>(key);
  if (out.size() != n_layer) {
    throw std::runtime_error(key + " has " + std::to_string(out.size()) + " entries for " +
                             std::to_string(n_layer) + " layers");
  }
  return out;
}

}  // namespace

void read_gemma4(const gguf::GgufFile& f, const std::vector<uint32_t>& kv_heads, ModelSpec& s) {
  const std::string p = s.arch_name + ".";
  const uint32_t L = s.n_layer;
  s.rope_ordering = RopeOrdering::NeoX;
  s.activation = Activation::GeluTanh;
  s.post_norms = true;
  s.embed_scale = std::sqrt(static_cast<float>(s.n_embd));
  s.attn_scale = 1.0f;  // the Q/K norms set the scale
  s.final_softcap = f.get_optional<float>(p + "final_logit_softcapping").value_or(30.0f);
  const auto eps = f.get_optional<float>(p + "attention.layer_norm_rms_epsilon");
  if (!eps)
    throw std::runtime_error("gemma4 model metadata is missing " + p +
                             "attention.layer_norm_rms_epsilon");
  s.norm_eps = *eps;
  const auto window = f.get_optional<uint32_t>(p + "attention.sliding_window");
  if (!window || *window == 0) {
    throw std::runtime_error("gemma4 model metadata is missing " + p + "attention.sliding_window");
  }
  s.sliding_window = *window;
  const std::string pattern_key = p + "attention.sliding_window_pattern";
  const gguf::Value* pattern = f.find(pattern_key);
  if (!pattern || pattern->type() != gguf::ValueType::ARRAY) {
    throw std::runtime_error("gemma4 model metadata has no per-layer " + pattern_key);
  }
  const std::vector<bool> swa = f.get_array<bool>(pattern_key);
  if (swa.size() != L) {
    throw std::runtime_error(pattern_key + " has " + std::to_string(swa.size()) + " entries for " +
                             std::to_string(L) + " layers");
  }
  for (uint32_t l = 0; l < L; ++l) s.layer_is_swa[l] = swa[l];
  s.rope_freq_base_swa = f.get_optional<float>(p + "rope.freq_base_swa").value_or(10000.0f);
  s.rope_freq_scale_swa = 1.0f;

  // Head sizes: the global layers' key_length (read as head_dim), the local ones' _swa.
  const uint32_t hd_swa =
      f.get_optional<uint32_t>(p + "attention.key_length_swa").value_or(s.head_dim);
  const uint32_t hd_v_swa =
      f.get_optional<uint32_t>(p + "attention.value_length_swa").value_or(hd_swa);
  if (s.head_dim_v != s.head_dim || hd_v_swa != hd_swa) {
    throw std::runtime_error("gemma4 needs K and V heads of one size (key_length == value_length)");
  }
  const uint32_t rot_swa =
      f.get_optional<uint32_t>(p + "rope.dimension_count_swa").value_or(s.rope_dims);
  const std::vector<uint32_t> ff = gemma4_per_layer(f, p + "feed_forward_length", L);
  s.layer_head_dim.resize(L);
  s.layer_n_head_kv = kv_heads;
  s.layer_n_ff = ff;
  s.layer_rope_dims.resize(L);
  s.layer_v_is_k.assign(L, false);
  s.layer_out_scaled.assign(L, false);
  for (uint32_t l = 0; l < L; ++l) {
    s.layer_head_dim[l] = swa[l] ? hd_swa : s.head_dim;
    s.layer_rope_dims[l] = swa[l] ? rot_swa : s.rope_dims;
    if (kv_heads[l] == 0 || s.n_head % kv_heads[l] != 0) {
      throw std::runtime_error("gemma4 layer " + std::to_string(l) + " has " +
                               std::to_string(kv_heads[l]) + " K/V heads for " +
                               std::to_string(s.n_head) + " query heads");
    }
    if (s.layer_rope_dims[l] > s.layer_head_dim[l] || s.layer_rope_dims[l] % 2 != 0) {
      throw std::runtime_error("gemma4 layer " + std::to_string(l) + " rotates " +
                               std::to_string(s.layer_rope_dims[l]) + " of " +
                               std::to_string(s.layer_head_dim[l]) + " head dimensions");
    }
  }
  s.head_dim = std::max(s.head_dim, hd_swa);
  s.head_dim_v = s.head_dim;

  const uint32_t shared = f.get_optional<uint32_t>(p + "attention.shared_kv_layers").value_or(0);
  if (shared > 0) {
    if (shared + 2 > L) {
      throw std::runtime_error("gemma4 shares the caches of " + std::to_string(shared) + " of " +
                               std::to_string(L) + " layers: fewer than two own one");
    }
    s.n_layer_kv = L - shared;
    // The layers that lend their caches: the last local and the last global one with a cache.
    if (!swa[s.n_layer_kv - 2] || swa[s.n_layer_kv - 1]) {
      throw std::runtime_error("gemma4 shares the caches of layers " +
                               std::to_string(s.n_layer_kv - 2) + " (local) and " +
                               std::to_string(s.n_layer_kv - 1) +
                               " (global), but its window pattern makes them otherwise");
    }
  }

  if (!s.qk_norm) throw std::runtime_error("gemma4 model has no blk.0.attn_q_norm.weight");
  if (s.fused_qkv || s.qkv_bias) {
    throw std::runtime_error(
        "gemma4 models with a fused attn_qkv or Q/K/V biases are not supported");
  }
  s.n_expert = f.get_optional<uint32_t>(p + "expert_count").value_or(0);
  if (s.n_expert > 0) {
    s.n_expert_used = f.get_optional<uint32_t>(p + "expert_used_count").value_or(0);
    if (s.n_expert_used == 0 || s.n_expert_used > s.n_expert) {
      throw std::runtime_error("gemma4 model metadata needs 0 < expert_used_count <= expert_count");
    }
    const std::vector<uint32_t> ff_exp = gemma4_per_layer(f, p + "expert_feed_forward_length", L);
    if (std::adjacent_find(ff_exp.begin(), ff_exp.end(), std::not_equal_to<>()) != ff_exp.end()) {
      throw std::runtime_error("gemma4 experts of different widths per layer are not supported");
    }
    s.n_ff_exp = ff_exp[0];
    s.moe_norm_weights = true;  // llama.cpp's gemma4 graph passes norm_w = true
    s.moe_gating = MoeGating::Softmax;
  }
  if (s.has_rope_freqs) {
    expect_weight(f, "gemma4", Weight::RopeFreqs, 0, {s.head_dim / 2});
  }

  s.n_embd_altup = f.get_optional<uint32_t>(p + "embedding_length_per_layer_input").value_or(0);
  const uint64_t E = s.n_embd, P = s.n_embd_altup, H = s.n_head;
  if (P > 0) {
    expect_weight(f, "gemma4", Weight::PerLayerTokenEmbd, 0, {P * L, s.n_vocab});
    expect_weight(f, "gemma4", Weight::PerLayerModelProj, 0, {E, P * L});
    expect_weight(f, "gemma4", Weight::PerLayerProjNorm, 0, {P});
  }
  for (uint32_t l = 0; l < L; ++l) {
    const uint64_t hd = s.layer_head_dim[l], kv = hd * kv_heads[l], n_ff = ff[l];
    expect_weight(f, "gemma4", Weight::AttnNorm, l, {E});
    expect_weight(f, "gemma4", Weight::AttnQ, l, {E, hd * H});
    expect_weight(f, "gemma4", Weight::AttnQNorm, l, {hd});
    expect_weight(f, "gemma4", Weight::AttnOut, l, {hd * H, E});
    expect_weight(f, "gemma4", Weight::PostAttnNorm, l, {E});
    if (s.owns_kv(l)) {
      expect_weight(f, "gemma4", Weight::AttnK, l, {E, kv});
      expect_weight(f, "gemma4", Weight::AttnKNorm, l, {hd});
      s.layer_v_is_k[l] = !gemma4_has(f, Weight::AttnV, l);
      if (!s.layer_v_is_k[l]) expect_weight(f, "gemma4", Weight::AttnV, l, {E, kv});
    }
    expect_weight(f, "gemma4", Weight::FfnNorm, l, {E});
    expect_weight(f, "gemma4", Weight::FfnGate, l, {E, n_ff});
    expect_weight(f, "gemma4", Weight::FfnUp, l, {E, n_ff});
    expect_weight(f, "gemma4", Weight::FfnDown, l, {n_ff, E});
    expect_weight(f, "gemma4", Weight::PostFfnNorm, l, {E});
    if (s.n_expert > 0) {
      const uint64_t X = s.n_expert, F = s.n_ff_exp;
      if (gemma4_has(f, Weight::FfnGateExps, l) == false) {
        throw std::runtime_error("gemma4 model has no " + weight_name(Weight::FfnGateExps, l) +
                                 " (nor a stacked ffn_gate_up_exps)");
      }
      expect_weight(f, "gemma4", Weight::FfnGateInp, l, {E, X});
      expect_weight(f, "gemma4", Weight::FfnGateInpScale, l, {E});
      expect_weight(f, "gemma4", Weight::FfnPreNorm2, l, {E});
      expect_weight(f, "gemma4", Weight::FfnPostNorm1, l, {E});
      expect_weight(f, "gemma4", Weight::FfnPostNorm2, l, {E});
      expect_weight(f, "gemma4", Weight::FfnGateExps, l, {E, F, X});
      expect_weight(f, "gemma4", Weight::FfnUpExps, l, {E, F, X});
      expect_weight(f, "gemma4", Weight::FfnDownExps, l, {F, E, X});
      const bool scaled = gemma4_has(f, Weight::FfnDownExpsScale, l);
      if (l > 0 && scaled != s.moe_down_scales) {
        throw std::runtime_error("gemma4 model has ffn_down_exps.scale in some layers only");
      }
      s.moe_down_scales = scaled;
      if (scaled) expect_weight(f, "gemma4", Weight::FfnDownExpsScale, l, {X});
    }
    s.layer_out_scaled[l] = gemma4_has(f, Weight::LayerOutScale, l);
    if (s.layer_out_scaled[l]) expect_weight(f, "gemma4", Weight::LayerOutScale, l, {1});
    if (P > 0) {
      expect_weight(f, "gemma4", Weight::PerLayerInpGate, l, {E, P});
      expect_weight(f, "gemma4", Weight::PerLayerProj, l, {P, E});
      expect_weight(f, "gemma4", Weight::PerLayerPostNorm, l, {E});
    }
  }
}

}  // namespace vkllm::model
