#include "engine/model/gemma4_maker.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

// Names unique in the library (unity builds).
constexpr uint32_t kGemma4DefaultWindow = 512;
constexpr float kGemma4GlobalRotary = 0.25f;  // partial_rotary_factor of the global layers
constexpr float kGemma4Unrotated = 1e30f;     // a rope_freqs divisor that stops the rotation

template <typename T>
gguf::Value gemma4_array_value(gguf::ValueType type, const std::vector<T>& items) {
  auto arr = std::make_shared<gguf::Array>();
  arr->element_type = type;
  for (const T& x : items) arr->items.push_back(gguf::Value{x});
  return gguf::Value{std::move(arr)};
}

// What the shape leaves open, as the published configs set it: E2B (1536 x 35), 26B-A4B
// (2816 x 30), and test shapes (head size under 256) made to exercise every path.
struct Gemma4Variant {
  uint32_t period;     // every period-th layer (and the last) is global
  uint32_t shared;     // the last layers that share KV
  uint32_t per_layer;  // per-layer input width (0: none)
  bool v_on_global;    // global layers have attn_v (else V = K: attention_k_eq_v)
  bool double_wide;    // shared layers' FFNs twice as wide (use_double_wide_mlp)
  uint32_t kv_global;  // global layers' K/V heads
};

Gemma4Variant gemma4_variant(const ModelShape& s) {
  if (s.n_embd == 1536 && s.n_layer == 35) return {5, 20, 256, true, true, 1};
  if (s.n_embd == 2816 && s.n_layer == 30) return {6, 0, 0, false, false, 2};
  const bool test = s.head_dim < 256;
  const uint32_t period = s.n_layer >= 10 ? 5 : 3;
  return {period,
          s.n_layer > period ? s.n_layer - period : 0,
          test ? 64u : 256u,
          !test,
          true,
          std::max(1u, s.n_head_kv / 2)};
}

}  // namespace

void build_gemma4_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& w) {
  const ModelShape& s = o.shape;
  check_decoder_shape(s, 8);
  const uint64_t n_vocab = vocab_token_count(vocab);
  const std::string p = "gemma4.";
  const uint32_t L = s.n_layer;
  const Gemma4Variant v = gemma4_variant(s);
  const uint32_t hd_swa = s.head_dim, hd_global = 2 * s.head_dim;
  const uint32_t kv_swa = s.n_head_kv, kv_global = v.kv_global;
  const uint32_t per_layer = v.per_layer, shared = v.shared, period = v.period;
  const uint32_t n_kv = L - shared;
  const bool moe = s.moe_variant;
  if (moe && (s.n_expert == 0 || s.n_expert_used == 0 || s.n_ff_exp == 0 ||
              s.n_expert_used > s.n_expert)) {
    throw std::invalid_argument("make-model: gemma4's MoE variant needs experts in its shape");
  }
  std::vector<bool> swa(L);
  std::vector<uint32_t> kv_heads(L), ff(L);
  for (uint32_t l = 0; l < L; ++l) {
    swa[l] = (l + 1) % period != 0 && l + 1 != L;
    kv_heads[l] = swa[l] ? kv_swa : kv_global;
    ff[l] = l < n_kv || !v.double_wide ? s.n_ff : 2 * s.n_ff;
  }
  if (shared > 0 && (n_kv < 2 || !swa[n_kv - 2] || swa[n_kv - 1])) {
    throw std::invalid_argument("make-model: gemma4 with " + std::to_string(L) +
                                " layers has no local and global layer to share KV from");
  }

  w.set_string("general.architecture", "gemma4");
  w.set_string("general.name", "vkllm random gemma4");
  w.set_u32("general.file_type", static_cast<uint32_t>(o.file_type));
  if (is_quantized(o.file_type)) w.set_u32("general.quantization_version", 2);
  w.set_u32(p + "context_length", s.n_ctx);
  w.set_u32(p + "embedding_length", s.n_embd);
  w.set_u32(p + "block_count", L);
  w.set(p + "feed_forward_length", gemma4_array_value(gguf::ValueType::U32, ff));
  w.set_u32(p + "attention.head_count", s.n_head);
  w.set(p + "attention.head_count_kv", gemma4_array_value(gguf::ValueType::U32, kv_heads));
  w.set_u32(p + "attention.key_length", hd_global);
  w.set_u32(p + "attention.value_length", hd_global);
  w.set_u32(p + "attention.key_length_swa", hd_swa);
  w.set_u32(p + "attention.value_length_swa", hd_swa);
  w.set_u32(p + "rope.dimension_count", hd_global);
  w.set_u32(p + "rope.dimension_count_swa", hd_swa);
  w.set_f32(p + "rope.freq_base", s.rope_freq_base > 0 ? s.rope_freq_base : 1000000.0f);
  w.set_f32(p + "rope.freq_base_swa", 10000.0f);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32(p + "attention.sliding_window",
            s.sliding_window ? s.sliding_window : kGemma4DefaultWindow);
  w.set(p + "attention.sliding_window_pattern", gemma4_array_value(gguf::ValueType::BOOL, swa));
  w.set_f32(p + "final_logit_softcapping", 30.0f);
  w.set_u32(p + "attention.shared_kv_layers", shared);
  w.set_u32(p + "embedding_length_per_layer_input", per_layer);
  if (moe) {
    w.set_u32(p + "expert_count", s.n_expert);
    w.set_u32(p + "expert_used_count", s.n_expert_used);
    w.set_u32(p + "expert_feed_forward_length", s.n_ff_exp);
  }
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(n_vocab));
  w.copy_metadata(vocab, "tokenizer.");

  const uint64_t E = s.n_embd, H = s.n_head, P = per_layer;
  auto add = [&](Weight wt, uint32_t layer, std::vector<uint64_t> shape, bool norm = false,
                 float scale = 1.0f) {
    add_random_tensor(w, o, weight_name(wt, layer), std::move(shape), norm, layer, false, scale);
  };
  // The global layers' rope_freqs (convert_hf_to_gguf.py's "proportional" RoPE): the first
  // quarter of each head's pairs rotate, the rest get a divisor that leaves them still.
  {
    const uint32_t pairs = hd_global / 2;
    const auto rotated = static_cast<uint32_t>(hd_global * kGemma4GlobalRotary / 2);
    std::vector<float> factors(pairs, kGemma4Unrotated);
    std::fill_n(factors.begin(), rotated, 1.0f);
    std::vector<uint8_t> bytes(factors.size() * 4);
    std::memcpy(bytes.data(), factors.data(), bytes.size());
    w.add_tensor(weight_name(Weight::RopeFreqs), gguf::TensorType::F32, {pairs}, std::move(bytes));
  }
  add(Weight::TokenEmbd, 0, {E, n_vocab});
  if (P > 0) {
    add(Weight::PerLayerTokenEmbd, 0, {P * L, n_vocab});
    add(Weight::PerLayerModelProj, 0, {E, P * L});
    add(Weight::PerLayerProjNorm, 0, {P}, true);
  }
  for (uint32_t l = 0; l < L; ++l) {
    const uint64_t hd = swa[l] ? hd_swa : hd_global, q = H * hd, kv = kv_heads[l] * hd;
    // The QK^T is unscaled: Q/K norms of head_dim^-1/4 give the scores of a 1/sqrt(head_dim)
    // attention over unit heads (as gemma3n_maker.cpp: larger ones make the random model
    // chaotic).
    const float qk_norm = 1.0f / std::sqrt(std::sqrt(static_cast<float>(hd)));
    add(Weight::AttnNorm, l, {E}, true);
    add(Weight::AttnQ, l, {E, q});
    if (l < n_kv) {
      add(Weight::AttnK, l, {E, kv});
      if (swa[l] || v.v_on_global) add(Weight::AttnV, l, {E, kv});
      add(Weight::AttnKNorm, l, {hd}, true, qk_norm);
    }
    add(Weight::AttnQNorm, l, {hd}, true, qk_norm);
    add(Weight::AttnOut, l, {q, E});
    add(Weight::PostAttnNorm, l, {E}, true);
    add(Weight::FfnNorm, l, {E}, true);
    add(Weight::FfnGate, l, {E, ff[l]});
    add(Weight::FfnUp, l, {E, ff[l]});
    add(Weight::FfnDown, l, {ff[l], E});
    add(Weight::PostFfnNorm, l, {E}, true);
    if (moe) {
      const uint64_t X = s.n_expert, F = s.n_ff_exp;
      // The router reads a unit-norm input: N(0, 1/E) weights would give logits of std
      // 1/sqrt(E), every softmax nearly flat and each top-k a near-tie that quantization noise
      // flips (llama.cpp against itself included). Logits of std 4 route decisively, as trained
      // routers do.
      add(Weight::FfnGateInp, l, {E, X}, false, 4.0f * std::sqrt(static_cast<float>(E)));
      add_random_tensor(w, o, weight_name(Weight::FfnGateInpScale, l), {E}, true, l, false);
      add(Weight::FfnPreNorm2, l, {E}, true);
      add(Weight::FfnPostNorm1, l, {E}, true);
      add(Weight::FfnPostNorm2, l, {E}, true);
      add(Weight::FfnGateExps, l, {E, F, X});
      add(Weight::FfnUpExps, l, {E, F, X});
      add(Weight::FfnDownExps, l, {F, E, X});
      add_random_tensor(w, o, weight_name(Weight::FfnDownExpsScale, l), {X}, true, l, false);
    }
    if (P > 0) {
      add(Weight::PerLayerInpGate, l, {E, P});
      add(Weight::PerLayerProj, l, {P, E});
      add(Weight::PerLayerPostNorm, l, {E}, true);
    }
    add(Weight::LayerOutScale, l, {1}, true);
  }
  add(Weight::OutputNorm, 0, {E}, true);
}

}  // namespace vkllm::model
