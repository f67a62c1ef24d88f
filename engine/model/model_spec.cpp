#include "engine/model/model_spec.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <variant>

#include "engine/model/gemma3n_spec.h"
#include "engine/model/gemma4_spec.h"
#include "engine/model/llama4_spec.h"
#include "engine/model/mamba2_spec.h"
#include "engine/model/moe_spec.h"
#include "engine/model/qwen35_spec.h"
#include "engine/model/spec_keys.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

using detail::Keys;
using detail::read_gpt_oss;
using detail::read_moe;

namespace {

struct ArchEntry {
  std::string_view name;
  Arch arch;
};
constexpr ArchEntry kArchs[] = {
    {"llama", Arch::Llama},
    {"qwen2", Arch::Qwen2},
    {"qwen3", Arch::Qwen3},
    {"qwen3moe", Arch::Qwen3Moe},
    {"qwen2moe", Arch::Qwen2Moe},
    {"gpt-oss", Arch::GptOss},
    {"gemma2", Arch::Gemma2},
    {"gemma3", Arch::Gemma3},
    {"phi3", Arch::Phi3},
    {"mistral3", Arch::Mistral3},
    {"bert", Arch::Bert},
    {"nomic-bert", Arch::NomicBert},
    {"gemma-embedding", Arch::GemmaEmbedding},
    {"lfm2", Arch::Lfm2},
    {"gemma3n", Arch::Gemma3n},
    {"gemma4", Arch::Gemma4},
    {"qwen35", Arch::Qwen35},
    {"qwen35moe", Arch::Qwen35Moe},
    {"qwen3next", Arch::Qwen3Next},
    {"granitehybrid", Arch::GraniteHybrid},
    {"nemotron_h", Arch::NemotronH},
    {"nemotron_h_moe", Arch::NemotronHMoe},
    {"llama4", Arch::Llama4},
    {"qwen2vl", Arch::Qwen2Vl},
    {"qwen3vl", Arch::Qwen3Vl},
};

// <arch>.feed_forward_length: one width, or (Gemma 3n's converter) one per layer, which must
// then all be equal unless the architecture reads them per layer (Gemma 4: the largest).
uint32_t feed_forward_length(const gguf::GgufFile& f, const std::string& arch) {
  const std::string key = arch + ".feed_forward_length";
  const gguf::Value* v = f.find(key);
  // The converter writes it only where the HF config has a dense intermediate_size; MoE models
  // whose every FFN is experts may have none (their widths are the expert_* keys).
  if (!v && (arch == "qwen35moe" || arch == "qwen3next" || arch == "qwen2moe")) return 0;
  if (!v) throw std::runtime_error("model metadata is missing " + key);
  if (v->type() != gguf::ValueType::ARRAY) return f.get<uint32_t>(key);
  const std::vector<uint32_t> widths = f.get_array<uint32_t>(key);
  // Gemma 4 and Nemotron-H read their widths per layer (Nemotron-H: 0 where a layer has no FFN).
  if ((arch == "gemma4" || arch == "nemotron_h" || arch == "nemotron_h_moe") && !widths.empty())
    return *std::max_element(widths.begin(), widths.end());
  if (widths.empty() ||
      std::adjacent_find(widths.begin(), widths.end(), std::not_equal_to<>()) != widths.end()) {
    throw std::runtime_error(key + " gives layers of different widths, which is not supported");
  }
  return widths[0];
}

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

// EmbeddingGemma: non-causal whatever the file says (llama.cpp forces it), a symmetric window,
// and optionally its two dense projections after pooling.
void read_gemma_embedding(const gguf::GgufFile& f, ModelSpec& s) {
  s.causal_attn = false;
  if (s.pooling == Pooling::Rank) {
    throw std::runtime_error("gemma-embedding has no classification head for rank pooling");
  }
  const auto* d2 = f.find_tensor(weight_name(Weight::Dense2));
  const auto* d3 = f.find_tensor(weight_name(Weight::Dense3));
  if (!d2 && !d3) return;
  if (!d2 || !d3 || d2->shape.size() != 2 || d3->shape.size() != 2 || d2->shape[0] != s.n_embd ||
      d3->shape[1] != s.n_embd || d3->shape[0] != d2->shape[1]) {
    throw std::runtime_error(
        "gemma-embedding needs both dense_2 (n_embd -> N) and dense_3 (N -> n_embd) weights");
  }
  s.n_dense = static_cast<uint32_t>(d2->shape[1]);
}

// The per-layer K/V head counts: <arch>.attention.head_count_kv as one number for every layer,
// or (LFM2) an array of one per layer, where 0 marks a recurrent layer. n_head_kv is then the
// attention layers' count (they must agree).
std::vector<uint32_t> read_head_count_kv(const gguf::GgufFile& f, const Keys& k, ModelSpec& s) {
  const std::string key = s.arch_name + ".attention.head_count_kv";
  const gguf::Value* v = f.find(key);
  if (!v || !std::holds_alternative<std::shared_ptr<gguf::Array>>(v->v)) {
    return std::vector<uint32_t>(s.n_layer, k.u32("attention.head_count_kv", s.n_head));
  }
  if (s.arch != Arch::Lfm2 && s.arch != Arch::Gemma4 && s.arch != Arch::GraniteHybrid &&
      !s.is_nemotron_h()) {
    throw std::runtime_error(s.arch_name + ": a per-layer " + key + " is not supported");
  }
  std::vector<uint32_t> per_layer = f.get_array<uint32_t>(key);
  if (per_layer.size() != s.n_layer) {
    throw std::runtime_error(key + " has " + std::to_string(per_layer.size()) + " entries for " +
                             std::to_string(s.n_layer) + " layers");
  }
  return per_layer;
}

// LFM2, as llama.cpp reads it: the layers with no K/V heads are gated short convolutions
// (shortconv.in_proj / conv / out_proj, kernel length shortconv.l_cache), the others attention
// with Q/K norms and NeoX RoPE; token_embd_norm is the output norm; tied embeddings unless the
// file has output.weight.
void read_lfm2(const gguf::GgufFile& f, const Keys& k, const std::vector<uint32_t>& kv_heads,
               ModelSpec& s) {
  s.rope_ordering = RopeOrdering::NeoX;
  s.shortconv_l_cache = k.u32("shortconv.l_cache");
  if (s.shortconv_l_cache < 2 || s.shortconv_l_cache > kMaxShortConvLength) {
    throw std::runtime_error("lfm2: shortconv.l_cache " + std::to_string(s.shortconv_l_cache) +
                             " is outside 2.." + std::to_string(kMaxShortConvLength));
  }
  s.layer_is_recurrent.assign(s.n_layer, false);
  std::optional<uint32_t> first_attention;
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    s.layer_is_recurrent[l] = kv_heads[l] == 0;
    if (!s.layer_is_recurrent[l] && !first_attention) first_attention = l;
  }
  s.sliding_window = k.u32("attention.sliding_window", 0);
  for (uint32_t l = 0; l < s.n_layer && s.sliding_window > 0; ++l)
    s.layer_is_swa[l] = !s.layer_is_recurrent[l];
  s.qk_norm =
      first_attention && f.find_tensor(weight_name(Weight::AttnQNorm, *first_attention)) != nullptr;
  s.fused_qkv = false;
  if (!f.find_tensor(weight_name(Weight::TokenEmbdNorm))) {
    throw std::runtime_error("lfm2 model has no token_embd_norm.weight (its output norm)");
  }
  const uint64_t E = s.n_embd;
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    if (!s.layer_is_recurrent[l]) continue;
    const std::tuple<Weight, uint64_t, uint64_t> needed[] = {
        {Weight::ShortConvInProj, E, 3 * E},
        {Weight::ShortConvConv, s.shortconv_l_cache, E},
        {Weight::ShortConvOutProj, E, E}};
    for (const auto& [w, cols, rows] : needed) {
      const auto* t = f.find_tensor(weight_name(w, l));
      if (!t || t->shape.size() != 2 || t->shape[0] != cols || t->shape[1] != rows ||
          (w == Weight::ShortConvConv && t->type != gguf::TensorType::F32)) {
        throw std::runtime_error(
            "lfm2 model has no " + std::string(w == Weight::ShortConvConv ? "F32 " : "") + "[" +
            std::to_string(cols) + ", " + std::to_string(rows) + "] tensor " + weight_name(w, l));
      }
    }
  }
}

// YaRN as llama.cpp configures ggml's rope for rope.scaling.type "yarn" (ext_factor 1): the
// correction dimensions from beta_fast / beta_slow over the original context, the per-pair blend
// of interpolated and original angles as divisors, and the magnitude factor.
// Qwen2-VL's rope.dimension_sections (llama.cpp requires them; up to 4, the rest 0).
void read_mrope_sections(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string key = s.arch_name + ".rope.dimension_sections";
  if (!f.find(key)) throw std::runtime_error("model metadata is missing " + key);
  const std::vector<int32_t> sections = f.get_array<int32_t>(key);
  if (sections.empty() || sections.size() > 4)
    throw std::runtime_error(key + " needs 1 to 4 values");
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i] < 0) throw std::runtime_error(key + " has a negative section");
    s.mrope_sections[i] = static_cast<uint32_t>(sections[i]);
  }
}

void read_yarn(const Keys& k, float factor, ModelSpec& s) {
  if (s.rope_dims != s.head_dim) {
    throw std::runtime_error("YaRN RoPE scaling on part of each head (rope.dimension_count " +
                             std::to_string(s.rope_dims) + " of " + std::to_string(s.head_dim) +
                             ") is not supported");
  }
  if (s.has_rope_freqs) throw std::runtime_error("YaRN together with rope_freqs is not supported");
  const float freq_scale = factor > 0 ? 1.0f / factor : 1.0f;
  const float n_orig =
      static_cast<float>(k.u32("rope.scaling.original_context_length", s.n_ctx_train));
  const float beta_fast = k.f32("rope.scaling.yarn_beta_fast", 32.0f);
  const float beta_slow = k.f32("rope.scaling.yarn_beta_slow", 1.0f);
  const float n_dims = static_cast<float>(s.rope_dims);
  // The dimension whose wavelength turns n_rot times over the original context.
  auto corr_dim = [&](float n_rot) {
    return n_dims * std::log(n_orig / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
           (2.0f * std::log(s.rope_freq_base));
  };
  const float low = std::max(0.0f, std::floor(corr_dim(beta_fast)));
  const float high = std::min(n_dims - 1.0f, std::ceil(corr_dim(beta_slow)));
  s.yarn_freq_factors.resize(s.rope_dims / 2);
  for (uint32_t i = 0; i < s.rope_dims / 2; ++i) {
    const float y = (static_cast<float>(i) - low) / std::max(0.001f, high - low);
    const float ramp = 1.0f - std::clamp(y, 0.0f, 1.0f);  // 1: keep the original frequency
    s.yarn_freq_factors[i] = 1.0f / (freq_scale * (1.0f - ramp) + ramp);
  }
  s.rope_freq_scale = 1.0f;
  s.has_rope_freqs = true;
  // ggml multiplies cos and sin by attn_factor * (1 + 0.1 ln(factor)); llama.cpp sets
  // attn_factor so that the product is mscale(factor, 1) [/ mscale(factor, log_mul)] times
  // rope.scaling.attn_factor.
  auto mscale = [&](float m) { return factor <= 1.0f ? 1.0f : 0.1f * m * std::log(factor) + 1.0f; };
  const float log_mul = k.f32("rope.scaling.yarn_log_multiplier", 0.0f);
  s.yarn_mscale = (log_mul != 0.0f ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f)) *
                  k.f32("rope.scaling.attn_factor", 1.0f);
}

}  // namespace

std::vector<uint64_t> ModelSpec::recurrent_state_floats() const {
  std::vector<uint64_t> out(n_layer, 0);
  for (uint32_t l = 0; l < n_layer; ++l)
    if (is_recurrent(l)) {
      out[l] = is_delta_net() ? delta_net_state_floats()
               : is_mamba2()  ? mamba_state_floats()
                              : uint64_t(shortconv_l_cache - 1) * n_embd;
    }
  return out;
}

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
        "' (supported: llama, qwen2, qwen2moe, qwen3, qwen3moe, gpt-oss, gemma2, "
        "gemma3, phi3, mistral3, bert, "
        "nomic-bert, gemma-embedding, lfm2, gemma3n, gemma4, qwen35, qwen35moe, qwen3next, "
        "granitehybrid, nemotron_h, nemotron_h_moe, llama4, qwen2vl, qwen3vl)");
  }
  const Keys k(f, s.arch_name);
  s.n_layer = k.u32("block_count");
  s.n_embd = k.u32("embedding_length");
  s.n_ff = feed_forward_length(f, s.arch_name);
  s.n_head = k.u32("attention.head_count");
  const std::vector<uint32_t> kv_heads = read_head_count_kv(f, k, s);
  s.n_head_kv = 0;
  // Gemma 4's global layers have their own K/V head count (read per layer by read_gemma4).
  for (uint32_t h : kv_heads) {
    if (s.arch == Arch::Gemma4) {
      s.n_head_kv = std::max(s.n_head_kv, h);
      continue;
    }
    if (h != 0 && s.n_head_kv != 0 && h != s.n_head_kv) {
      throw std::runtime_error(
          "model metadata has attention layers with different K/V head "
          "counts (" +
          std::to_string(s.n_head_kv) + " and " + std::to_string(h) + ")");
    }
    if (h != 0) s.n_head_kv = h;
  }
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
    case Arch::Mistral3:
      s.rope_ordering = RopeOrdering::Normal;
      // llama.cpp: the temperature's floor is the YaRN original context (n_ctx_train without it).
      s.attn_temp_scale = k.f32("attention.temperature_scale", 0.0f);
      if (s.attn_temp_scale != 0.0f) {
        s.attn_temp_floor = k.u32("rope.scaling.original_context_length", s.n_ctx_train);
        if (s.attn_temp_floor == 0) {
          throw std::runtime_error("attention temperature scaling needs an original context");
        }
      }
      break;
    case Arch::Qwen2:
    case Arch::Qwen3:
      s.rope_ordering = RopeOrdering::NeoX;
      break;
    case Arch::Qwen2Vl:
      s.rope_ordering = RopeOrdering::NeoX;
      read_mrope_sections(f, s);
      break;
    case Arch::Qwen3Vl:
      // Qwen3's layers (Q/K norms) with interleaved M-RoPE and the deepstack inputs.
      s.rope_ordering = RopeOrdering::NeoX;
      read_mrope_sections(f, s);
      s.mrope_interleaved = true;
      s.n_deepstack = k.u32("n_deepstack_layers", 0);
      if (s.n_deepstack >= s.n_layer)
        throw std::runtime_error("qwen3vl: n_deepstack_layers " + std::to_string(s.n_deepstack) +
                                 " is not below the layer count");
      break;
    case Arch::Qwen3Moe:
    case Arch::Qwen2Moe:
      s.rope_ordering = RopeOrdering::NeoX;
      read_moe(f, k, s);
      break;
    case Arch::GptOss:
      read_gpt_oss(f, k, s);
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
    case Arch::Lfm2:
      read_lfm2(f, k, kv_heads, s);
      break;
    case Arch::Gemma2:
    case Arch::Gemma3:
    case Arch::GemmaEmbedding: {
      s.rope_ordering = RopeOrdering::NeoX;
      s.activation = Activation::GeluTanh;
      s.post_norms = true;
      s.embed_scale = std::sqrt(static_cast<float>(s.n_embd));
      s.norm_eps = k.f32("attention.layer_norm_rms_epsilon", 1e-6f);
      s.sliding_window = k.u32("attention.sliding_window", 4096);
      // Gemma 2 alternates local and global layers; Gemma 3 has five local per global one.
      const uint32_t period = s.arch == Arch::Gemma2 ? 2
                              : s.arch == Arch::GemmaEmbedding
                                  ? k.u32("attention.sliding_window_pattern", 6)
                                  : 6;
      if (period == 0) throw std::runtime_error("sliding_window_pattern 0");
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
      if (s.arch == Arch::GemmaEmbedding) read_gemma_embedding(f, s);
      break;
    }
    case Arch::Gemma3n:
      read_gemma3n(f, s);
      break;
    case Arch::Gemma4:
      read_gemma4(f, kv_heads, s);
      break;
    case Arch::Qwen35:
    case Arch::Qwen35Moe:
    case Arch::Qwen3Next:
      read_qwen35(f, s);
      // Qwen3.5-MoE and Qwen3-Next: every layer's FFN is the experts with a gated shared one.
      if (s.arch != Arch::Qwen35) read_moe(f, k, s);
      break;
    case Arch::GraniteHybrid:
    case Arch::NemotronH:
    case Arch::NemotronHMoe:
      if (s.arch == Arch::NemotronHMoe && k.u32("expert_count", 0) == 0)
        throw std::runtime_error("nemotron_h_moe model metadata needs expert_count > 0");
      read_mamba2(f, kv_heads, s);
      // Granite 4.0-H Tiny / Small: every FFN is the experts (softmax, top k renormalised) with
      // an ungated shared expert. Nemotron-H MoE: read_nemotron_moe.
      if (k.u32("expert_count", 0) > 0) {
        if (s.arch == Arch::GraniteHybrid) {
          read_moe(f, k, s);
        } else {
          read_nemotron_moe(f, s);
          read_moe(f, k, s);
          if (s.n_ff_shexp == 0)
            throw std::runtime_error(s.arch_name + ": the MoE layers have no shared expert");
        }
      }
      break;
    case Arch::Llama4:
      read_llama4(f, s);
      read_moe(f, k, s);
      if (s.n_ff_shexp == 0 || s.moe_shexp_gated)  // llama.cpp requires the ungated one
        throw std::runtime_error("llama4 model has no ungated shared expert (ffn_up_shexp)");
      break;
  }
  if (s.layer_is_recurrent.empty()) s.layer_is_recurrent.assign(s.n_layer, false);
  if (k.str("rope.scaling.type", "none") == "yarn") {
    // The per-pair YaRN divisors are computed for one base: windowed layers must share it.
    const bool swa =
        std::find(s.layer_is_swa.begin(), s.layer_is_swa.end(), true) != s.layer_is_swa.end();
    if (swa &&
        (s.rope_freq_base_swa != s.rope_freq_base || s.rope_freq_scale_swa != s.rope_freq_scale)) {
      throw std::runtime_error("YaRN RoPE scaling with sliding-window layers is not supported");
    }
    read_yarn(k, factor, s);
    s.attn_scale *= s.yarn_mscale * s.yarn_mscale;
  }
  if (s.fused_gate_up && s.arch != Arch::Phi3 && s.gated_ffn) {
    throw std::runtime_error("model has no blk.0.ffn_gate.weight");
  }
  return s;
}

}  // namespace vkllm::model
