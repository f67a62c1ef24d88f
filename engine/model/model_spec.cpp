#include "engine/model/model_spec.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

struct ArchEntry {
  std::string_view name;
  Arch arch;
};
constexpr ArchEntry kArchs[] = {
    {"llama", Arch::Llama},       {"qwen2", Arch::Qwen2},   {"qwen3", Arch::Qwen3},
    {"qwen3moe", Arch::Qwen3Moe}, {"gemma2", Arch::Gemma2}, {"gemma3", Arch::Gemma3},
    {"phi3", Arch::Phi3},         {"bert", Arch::Bert},     {"nomic-bert", Arch::NomicBert},
};

// Reads "<arch>.<key>" with a default, failing clearly when a required key is missing.
class Keys {
 public:
  Keys(const gguf::GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  uint32_t u32(std::string_view key) const {
    auto v = f_.get_optional<uint32_t>(full(key));
    if (!v) throw std::runtime_error("model metadata is missing " + full(key));
    return *v;
  }
  uint32_t u32(std::string_view key, uint32_t fallback) const {
    return f_.get_optional<uint32_t>(full(key)).value_or(fallback);
  }
  float f32(std::string_view key, float fallback) const {
    return f_.get_optional<float>(full(key)).value_or(fallback);
  }
  std::string str(std::string_view key, std::string fallback) const {
    return f_.get_optional<std::string>(full(key)).value_or(std::move(fallback));
  }
  bool flag(std::string_view key, bool fallback) const {
    return f_.get_optional<bool>(full(key)).value_or(fallback);
  }
  std::optional<uint32_t> opt_u32(std::string_view key) const {
    return f_.get_optional<uint32_t>(full(key));
  }

 private:
  std::string full(std::string_view key) const { return arch_ + "." + std::string(key); }
  const gguf::GgufFile& f_;
  std::string arch_;
};

// Row count of a global 2-D tensor, 0 if absent.
uint32_t rows_of(const gguf::GgufFile& f, Weight w) {
  const auto* t = f.find_tensor(weight_name(w));
  return t && t->shape.size() == 2 ? static_cast<uint32_t>(t->shape[1]) : 0;
}

// bert and nomic-bert, as llama.cpp reads them.
void read_encoder(const gguf::GgufFile& f, const Keys& k, ModelSpec& s) {
  s.norm_eps = k.f32("attention.layer_norm_epsilon", 1e-12f);
  s.causal_attn = k.flag("attention.causal", false);
  s.rope_ordering = RopeOrdering::NeoX;
  s.n_token_types = rows_of(f, Weight::TokenTypes);
  if (s.n_token_types == 0) throw std::runtime_error("model has no 2-D token_types.weight tensor");
  if (!f.find_tensor(weight_name(Weight::TokenEmbdNorm))) {
    throw std::runtime_error("model has no token_embd_norm.weight tensor");
  }
  if (s.arch == Arch::Bert) {
    s.rope = false;
    s.rope_dims = 0;
    s.position_embd = true;
    s.gated_ffn = false;
    s.fused_gate_up = false;
    const uint32_t positions = rows_of(f, Weight::PosEmbd);
    if (positions == 0) throw std::runtime_error("model has no 2-D position_embd.weight tensor");
    s.n_ctx_train = std::min(s.n_ctx_train, positions);
  } else if (!s.fused_qkv) {
    throw std::runtime_error("model has no blk.0.attn_qkv.weight tensor");
  }
  s.cls_dense = f.find_tensor(weight_name(Weight::Cls)) != nullptr;
  s.n_cls_out = rows_of(f, Weight::ClsOut);
  if (s.n_cls_out == 0 && s.cls_dense) s.n_cls_out = s.n_embd;
  if (s.pooling == Pooling::Rank && s.n_cls_out == 0) {
    throw std::runtime_error("rank pooling needs a classification head (cls.output.weight)");
  }
}

// qwen3moe, as llama.cpp reads it: expert_count and expert_used_count are required,
// expert_feed_forward_length defaults to n_ff / n_expert_used, the router is a softmax and the
// selected weights are always renormalised (its graph passes norm_w = true); no dense FFN.
void read_moe(const gguf::GgufFile& f, const Keys& k, ModelSpec& s) {
  s.n_expert = k.u32("expert_count", 0);
  s.n_expert_used = k.u32("expert_used_count", 0);
  if (s.n_expert == 0 || s.n_expert_used == 0 || s.n_expert_used > s.n_expert) {
    throw std::runtime_error(s.arch_name + " model metadata needs expert_count > 0 and 0 < " +
                             "expert_used_count <= expert_count (got " +
                             std::to_string(s.n_expert) + " and " +
                             std::to_string(s.n_expert_used) + ")");
  }
  s.n_ff_exp = k.u32("expert_feed_forward_length", s.n_ff / s.n_expert_used);
  s.moe_norm_weights = true;
  s.fused_gate_up = false;
  const Weight stacked[] = {Weight::FfnGateExps, Weight::FfnUpExps, Weight::FfnDownExps};
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const auto* router = f.find_tensor(weight_name(Weight::FfnGateInp, l));
    if (!router || router->shape.size() != 2 || router->shape[0] != s.n_embd ||
        router->shape[1] != s.n_expert) {
      throw std::runtime_error("model has no [" + std::to_string(s.n_embd) + ", " +
                               std::to_string(s.n_expert) + "] tensor " +
                               weight_name(Weight::FfnGateInp, l));
    }
    for (Weight w : stacked) {
      const bool down = w == Weight::FfnDownExps;
      const auto* t = f.find_tensor(weight_name(w, l));
      if (!t || t->shape.size() != 3 || t->shape[0] != (down ? s.n_ff_exp : s.n_embd) ||
          t->shape[1] != (down ? s.n_embd : s.n_ff_exp) || t->shape[2] != s.n_expert) {
        throw std::runtime_error("model has no expert tensor " + weight_name(w, l) +
                                 " of the shape its metadata gives");
      }
    }
  }
}

}  // namespace

const char* arch_name(Arch arch) {
  for (const auto& e : kArchs)
    if (e.arch == arch) return e.name.data();
  return "unknown";
}

ModelSpec ModelSpec::from_gguf(const gguf::GgufFile& f) {
  ModelSpec s;
  s.arch_name = f.get<std::string>("general.architecture");
  bool known = false;
  for (const auto& e : kArchs) {
    if (e.name == s.arch_name) {
      s.arch = e.arch;
      known = true;
    }
  }
  if (!known) {
    throw std::runtime_error(
        "unsupported model architecture '" + s.arch_name +
        "' (supported: llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, bert, nomic-bert)");
  }
  const Keys k(f, s.arch_name);
  s.n_layer = k.u32("block_count");
  s.n_embd = k.u32("embedding_length");
  s.n_ff = k.u32("feed_forward_length");
  s.n_head = k.u32("attention.head_count");
  s.n_head_kv = k.u32("attention.head_count_kv", s.n_head);
  s.n_ctx_train = k.u32("context_length", 2048);
  if (s.n_layer == 0 || s.n_embd == 0 || s.n_head == 0 || s.n_head_kv == 0 ||
      s.n_head % s.n_head_kv != 0) {
    throw std::runtime_error("model metadata has inconsistent sizes (layers " +
                             std::to_string(s.n_layer) + ", heads " + std::to_string(s.n_head) +
                             ", kv heads " + std::to_string(s.n_head_kv) + ")");
  }
  s.head_dim = k.u32("attention.key_length", s.n_embd / s.n_head);
  s.head_dim_v = k.u32("attention.value_length", s.head_dim);
  s.norm_eps = k.f32("attention.layer_norm_rms_epsilon", 1e-5f);
  s.rope_dims = k.u32("rope.dimension_count", s.head_dim);
  s.rope_freq_base = k.f32("rope.freq_base", 10000.0f);
  const std::string scaling = k.str("rope.scaling.type", "none");
  const float factor = k.f32("rope.scaling.factor", 0.0f);
  if (scaling == "linear" && factor > 0) s.rope_freq_scale = 1.0f / factor;
  s.rope_freq_base_swa = s.rope_freq_base;
  s.rope_freq_scale_swa = s.rope_freq_scale;
  s.has_rope_freqs = f.find_tensor(weight_name(Weight::RopeFreqs)) != nullptr;

  const auto* embd = f.find_tensor(weight_name(Weight::TokenEmbd));
  if (!embd || embd->shape.size() != 2) {
    throw std::runtime_error("model has no 2-D token_embd.weight tensor");
  }
  s.n_vocab = k.u32("vocab_size", static_cast<uint32_t>(embd->shape[1]));
  s.tied_embeddings = f.find_tensor(weight_name(Weight::Output)) == nullptr;
  s.qkv_bias = f.find_tensor(weight_name(Weight::AttnQBias, 0)) != nullptr;
  s.qk_norm = f.find_tensor(weight_name(Weight::AttnQNorm, 0)) != nullptr;
  s.fused_qkv = f.find_tensor(weight_name(Weight::AttnQKV, 0)) != nullptr;
  s.fused_gate_up = f.find_tensor(weight_name(Weight::FfnGate, 0)) == nullptr;
  s.attn_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  s.layer_is_swa.assign(s.n_layer, false);
  s.causal_attn = k.flag("attention.causal", true);
  if (const auto pooling = k.opt_u32("pooling_type")) {
    if (*pooling > static_cast<uint32_t>(Pooling::Rank)) {
      throw std::runtime_error("model metadata has an unknown " + s.arch_name + ".pooling_type " +
                               std::to_string(*pooling));
    }
    s.pooling = static_cast<Pooling>(*pooling);
    s.has_pooling_type = true;
  }

  switch (s.arch) {
    case Arch::Llama:
      s.rope_ordering = RopeOrdering::Normal;
      break;
    case Arch::Qwen2:
    case Arch::Qwen3:
      s.rope_ordering = RopeOrdering::NeoX;
      break;
    case Arch::Qwen3Moe:
      s.rope_ordering = RopeOrdering::NeoX;
      read_moe(f, k, s);
      break;
    case Arch::Phi3:
      s.rope_ordering = RopeOrdering::NeoX;
      s.sliding_window = k.u32("attention.sliding_window", 0);
      if (s.sliding_window) s.layer_is_swa.assign(s.n_layer, true);
      break;
    case Arch::Bert:
    case Arch::NomicBert:
      read_encoder(f, k, s);
      break;
    case Arch::Gemma2:
    case Arch::Gemma3: {
      s.rope_ordering = RopeOrdering::NeoX;
      s.activation = Activation::GeluTanh;
      s.post_norms = true;
      s.embed_scale = std::sqrt(static_cast<float>(s.n_embd));
      s.norm_eps = k.f32("attention.layer_norm_rms_epsilon", 1e-6f);
      s.sliding_window = k.u32("attention.sliding_window", 4096);
      // Gemma 2 alternates local and global layers; Gemma 3 has five local per global one.
      const uint32_t period = s.arch == Arch::Gemma2 ? 2 : 6;
      for (uint32_t l = 0; l < s.n_layer; ++l) s.layer_is_swa[l] = (l % period) < period - 1;
      // The largest models scale queries by the model width per head rather than head size.
      const bool wide_scale = (s.arch == Arch::Gemma2 && s.n_layer == 46) ||
                              (s.arch == Arch::Gemma3 && s.n_layer == 62);
      if (wide_scale) s.attn_scale = 1.0f / std::sqrt(float(s.n_embd) / float(s.n_head));
      if (s.arch == Arch::Gemma2) {
        s.attn_softcap = k.f32("attn_logit_softcapping", 50.0f);
        s.final_softcap = k.f32("final_logit_softcapping", 30.0f);
      } else {
        s.rope_freq_base_swa = k.f32("rope.freq_base_swa", 10000.0f);  // local layers
        s.rope_freq_scale_swa = 1.0f;
      }
      break;
    }
  }
  if (s.fused_gate_up && s.arch != Arch::Phi3 && s.gated_ffn) {
    throw std::runtime_error("model has no blk.0.ffn_gate.weight");
  }
  return s;
}

}  // namespace vkllm::model
