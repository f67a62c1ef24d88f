#include "engine/model/mamba2_maker.h"

#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

constexpr uint32_t kMambaConvKernel = 4;
constexpr uint32_t kMambaHeadDim = 64;
constexpr uint32_t kGraniteAttentionInterval = 10;
constexpr std::string_view kNemotronPattern = "M-M-M-M*-";
// Nemotron 3 Nano's hybrid_override_pattern (E: a MoE layer).
constexpr std::string_view kNemotronMoePattern =
    "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
constexpr float kMambaDtBias = -4.5f;  // softplus(-4.5) = 0.011: a slow, long memory
constexpr float kMambaDecay = -1.0f;   // A = -exp(A_log)
constexpr float kConvBias = 0.1f;
constexpr float kRouterScale = 4.0f;  // router logits of std about 4 (qwen35_maker.cpp)
// Nemotron-H MoE's selection bias: std 0.1 beside sigmoid scores spread over (0, 1), enough to
// change some tokens' choices; its routed scaling factor (Nemotron 3 Nano's).
constexpr float kSelectBiasStd = 0.1f;
constexpr float kNemotronWeightsScale = 2.5f;

gguf::Value mamba2_u32_array(const std::vector<uint32_t>& items) {
  auto arr = std::make_shared<gguf::Array>();
  arr->element_type = gguf::ValueType::U32;
  for (uint32_t x : items) arr->items.push_back(gguf::Value{x});
  return gguf::Value{std::move(arr)};
}

enum class Mamba2Kind : char { Mamba = 'M', Attention = '*', Mlp = '-' };

Mamba2Kind mamba2_kind_of(char c) {
  return c == 'M' ? Mamba2Kind::Mamba : c == '*' ? Mamba2Kind::Attention : Mamba2Kind::Mlp;
}

std::vector<Mamba2Kind> layer_kinds(bool granite, bool moe, uint32_t& n_layer) {
  std::vector<Mamba2Kind> k;
  if (granite) {
    const uint32_t every = n_layer >= kGraniteAttentionInterval ? kGraniteAttentionInterval : 2;
    for (uint32_t l = 0; l < n_layer; ++l)
      k.push_back((l + 1) % every == 0 ? Mamba2Kind::Attention : Mamba2Kind::Mamba);
    return k;
  }
  if (n_layer <= 3) {
    n_layer = 3;
    return {Mamba2Kind::Mamba, Mamba2Kind::Attention, Mamba2Kind::Mlp};
  }
  const std::string_view pattern = moe ? kNemotronMoePattern : kNemotronPattern;
  for (uint32_t l = 0; l < n_layer; ++l) k.push_back(mamba2_kind_of(pattern[l % pattern.size()]));
  return k;
}

}  // namespace

void build_mamba2_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& w) {
  const ModelShape& s = o.shape;
  check_decoder_shape(s, 8);
  const bool granite = o.arch == "granitehybrid";
  const bool nemotron_moe = o.arch == "nemotron_h_moe";
  const std::string arch = o.arch;
  const std::string p = arch + ".";
  uint32_t L = s.n_layer;
  const std::vector<Mamba2Kind> kinds = layer_kinds(granite, nemotron_moe, L);
  const bool wide = s.n_embd >= 1024;
  const uint64_t n_vocab = vocab_token_count(vocab);
  // Granite's MoE variant (Granite 4.0-H Tiny / Small): experts of the shape's width, written as
  // feed_forward_length (llama.cpp's granitehybrid reads them so), and a shared expert (twice
  // one expert unless set).
  // Nemotron-H MoE: its FFN layers are MoE layers of up-only relu^2 experts and a shared expert.
  const bool moe = (granite && s.moe_variant) || nemotron_moe;
  const uint32_t n_exp = s.n_expert ? s.n_expert : 8,
                 n_used = s.n_expert_used ? s.n_expert_used : 2;
  const uint64_t E = s.n_embd, qd = uint64_t{s.n_head} * s.head_dim,
                 kv = uint64_t{s.n_head_kv} * s.head_dim,
                 ff = moe && s.n_ff_exp ? s.n_ff_exp : s.n_ff;
  const uint64_t ffs = s.n_ff_shexp ? s.n_ff_shexp : 2 * ff;
  const uint64_t xe = nemotron_moe && s.moe_latent ? s.moe_latent : E;  // the experts' width
  const uint64_t di = s.mamba_d_inner ? s.mamba_d_inner : 2 * E, nh = di / kMambaHeadDim,
                 ds = wide ? 128 : 64;
  // Groups divide the heads (narrow shapes have few heads).
  const uint64_t ng = std::gcd(uint64_t{granite ? (wide ? 1u : 2u) : (wide ? 8u : 4u)}, nh);
  const uint64_t C = di + 2 * ng * ds, in_proj = di + C + nh;

  std::vector<uint32_t> kv_heads, ff_widths;
  for (Mamba2Kind k : kinds) {
    kv_heads.push_back(k == Mamba2Kind::Attention ? s.n_head_kv : 0);
    ff_widths.push_back(k == Mamba2Kind::Mlp ? static_cast<uint32_t>(moe ? ff : s.n_ff) : 0);
  }
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "vkllm random " + arch);
  w.set_u32("general.file_type", static_cast<uint32_t>(o.file_type));
  if (is_quantized(o.file_type)) w.set_u32("general.quantization_version", 2);
  w.set_u32(p + "context_length", s.n_ctx);
  w.set_u32(p + "embedding_length", s.n_embd);
  w.set_u32(p + "block_count", L);
  if (granite) {
    w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(ff));
  } else {
    w.set(p + "feed_forward_length", mamba2_u32_array(ff_widths));
  }
  w.set_u32(p + "attention.head_count", s.n_head);
  w.set(p + "attention.head_count_kv", mamba2_u32_array(kv_heads));
  w.set_u32(p + "attention.key_length", s.head_dim);
  w.set_u32(p + "attention.value_length", s.head_dim);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (!granite) w.set_f32(p + "attention.layer_norm_epsilon", 1e-5f);  // llama.cpp requires it
  w.set_u32(p + "ssm.conv_kernel", kMambaConvKernel);
  w.set_u32(p + "ssm.inner_size", static_cast<uint32_t>(di));
  w.set_u32(p + "ssm.state_size", static_cast<uint32_t>(ds));
  w.set_u32(p + "ssm.group_count", static_cast<uint32_t>(ng));
  w.set_u32(p + "ssm.time_step_rank", static_cast<uint32_t>(nh));
  if (granite) {
    w.set_f32(p + "rope.freq_base", 10000.0f);
    w.set_bool(p + "rope.scaling.finetuned", false);
    w.set_f32(p + "embedding_scale", 12.0f);
    w.set_f32(p + "residual_scale", 0.22f);
    w.set_f32(p + "attention.scale", 0.0078125f);
    // Granite 4.0 divides its logits by 8 or 10; random weights' logits are small already,
    // so the fixture multiplies them (a divisor of 0.5) to keep greedy steps off near-ties.
    w.set_f32(p + "logit_scale", 0.5f);
  }
  if (moe) {
    if (n_used > n_exp)
      throw std::invalid_argument("make-model: more experts per token than experts");
    w.set_u32(p + "expert_count", n_exp);
    w.set_u32(p + "expert_used_count", n_used);
    w.set_u32(p + "expert_shared_feed_forward_length", static_cast<uint32_t>(ffs));
  }
  if (nemotron_moe) {  // as llama.cpp's converter writes Nemotron 3 Nano's
    w.set_u32(p + "expert_feed_forward_length", static_cast<uint32_t>(ff));
    w.set_u32(p + "expert_shared_count", 1);
    w.set_bool(p + "expert_weights_norm", true);
    w.set_f32(p + "expert_weights_scale", kNemotronWeightsScale);
    w.set_u32(p + "expert_group_count", 1);
    if (s.moe_latent) w.set_u32(p + "moe_latent_size", s.moe_latent);
  }
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(n_vocab));
  w.copy_metadata(vocab, "tokenizer.");

  MakeModelOptions opts = o;
  opts.shape.n_layer = L;  // tensor types follow the layer count written
  const bool has_output = !s.tied_embeddings;
  auto add = [&](Weight wt, uint32_t layer, std::vector<uint64_t> shape, bool norm = false,
                 float scale = 1.0f) {
    add_random_tensor(w, opts, weight_name(wt, layer), std::move(shape), norm, layer, has_output,
                      scale);
  };
  add(Weight::TokenEmbd, 0, {E, n_vocab});
  for (uint32_t l = 0; l < L; ++l) {
    add(Weight::AttnNorm, l, {E}, true);
    switch (kinds[l]) {
      case Mamba2Kind::Mamba:
        add(Weight::SsmIn, l, {E, in_proj});
        add(Weight::SsmConv1d, l, {kMambaConvKernel, C});
        add(Weight::SsmConv1dBias, l, {C}, true, kConvBias);
        add(Weight::SsmDt, l, {nh}, true, kMambaDtBias);
        add(Weight::SsmA, l, {1, nh}, true, kMambaDecay);
        add(Weight::SsmD, l, {1, nh}, true);
        add(Weight::SsmNorm, l, {di / ng, ng}, true);
        add(Weight::SsmOut, l, {di, E});
        break;
      case Mamba2Kind::Attention:
        add(Weight::AttnQ, l, {E, qd});
        add(Weight::AttnK, l, {E, kv});
        add(Weight::AttnV, l, {E, kv});
        add(Weight::AttnOut, l, {qd, E});
        break;
      case Mamba2Kind::Mlp:
        if (nemotron_moe) {
          add(Weight::FfnGateInp, l, {E, n_exp}, false, kRouterScale);
          add(Weight::FfnExpProbsBias, l, {n_exp}, false,
              kSelectBiasStd * std::sqrt(static_cast<float>(n_exp)));
          if (s.moe_latent) {
            add(Weight::FfnLatentDown, l, {E, s.moe_latent});
            add(Weight::FfnLatentUp, l, {s.moe_latent, E});
          }
          add(Weight::FfnUpExps, l, {xe, ff, n_exp});
          add(Weight::FfnDownExps, l, {ff, xe, n_exp});
          add(Weight::FfnUpShexp, l, {E, ffs});
          add(Weight::FfnDownShexp, l, {ffs, E});
          break;
        }
        add(Weight::FfnUp, l, {E, ff});
        add(Weight::FfnDown, l, {ff, E});
        break;
    }
    if (granite) add(Weight::FfnNorm, l, {E}, true);
    if (moe && granite) {
      add(Weight::FfnGateInp, l, {E, n_exp}, false, kRouterScale);
      add(Weight::FfnGateExps, l, {E, ff, n_exp});
      add(Weight::FfnUpExps, l, {E, ff, n_exp});
      add(Weight::FfnDownExps, l, {ff, E, n_exp});
      add(Weight::FfnGateShexp, l, {E, ffs});
      add(Weight::FfnUpShexp, l, {E, ffs});
      add(Weight::FfnDownShexp, l, {ffs, E});
    } else if (granite) {
      add(Weight::FfnGate, l, {E, ff});
      add(Weight::FfnUp, l, {E, ff});
      add(Weight::FfnDown, l, {ff, E});
    }
  }
  add(Weight::OutputNorm, 0, {E}, true);
  if (has_output) add(Weight::Output, 0, {E, n_vocab});
}

}  // namespace vkllm::model
