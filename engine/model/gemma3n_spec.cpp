#include "engine/model/gemma3n_spec.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/weight_check.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

// The sizes llama.cpp's gemma3n fixes rather than reads (llama-hparams.h, models/gemma3n.cpp).
constexpr uint32_t kAltupStreams = 4;
constexpr uint32_t kAltupActive = 0;
constexpr uint32_t kPerLayerWidth = 256;
constexpr uint32_t kLaurelRank = 64;
constexpr uint32_t kSparseLayers = 10;
constexpr uint32_t kLayersWithKv = 20;
constexpr uint32_t kDefaultSwaPeriod = 5;
// The 95th percentile of the standard normal: values above mean + 1.645 std survive.
constexpr float kSparsityStdMul = 1.6448533535003662f;

void read_swa_pattern(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string key = s.arch_name + ".attention.sliding_window_pattern";
  const gguf::Value* v = f.find(key);
  if (v && v->type() == gguf::ValueType::ARRAY) {
    const std::vector<bool> swa = f.get_array<bool>(key);
    if (swa.size() != s.n_layer) {
      throw std::runtime_error(key + " has " + std::to_string(swa.size()) + " entries for " +
                               std::to_string(s.n_layer) + " layers");
    }
    for (uint32_t l = 0; l < s.n_layer; ++l) s.layer_is_swa[l] = swa[l];
    return;
  }
  const uint32_t period = v ? f.get<uint32_t>(key) : kDefaultSwaPeriod;
  // llama.cpp: a period of 0 makes every layer local.
  for (uint32_t l = 0; l < s.n_layer; ++l)
    s.layer_is_swa[l] = period == 0 || l % period < period - 1;
}

}  // namespace

void read_gemma3n(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string p = s.arch_name + ".";
  s.rope_ordering = RopeOrdering::NeoX;
  s.activation = Activation::GeluTanh;
  s.post_norms = true;
  s.embed_scale = std::sqrt(static_cast<float>(s.n_embd));
  s.norm_eps = f.get_optional<float>(p + "attention.layer_norm_rms_epsilon").value_or(1e-6f);
  s.attn_scale = 1.0f;
  s.final_softcap = 30.0f;  // llama.cpp's default; it reads no key for gemma3n
  const auto window = f.get_optional<uint32_t>(p + "attention.sliding_window");
  if (!window || *window == 0) {
    throw std::runtime_error("gemma3n model metadata is missing " + p + "attention.sliding_window");
  }
  s.sliding_window = *window;
  read_swa_pattern(f, s);
  s.rope_freq_base_swa = f.get_optional<float>(p + "rope.freq_base_swa").value_or(s.rope_freq_base);
  s.rope_freq_scale_swa = 1.0f;

  s.n_altup = kAltupStreams;
  s.altup_active = kAltupActive;
  s.n_embd_altup = kPerLayerWidth;
  s.laurel_rank = kLaurelRank;
  s.n_layer_sparse = std::min(kSparseLayers, s.n_layer);
  s.sparsity_std_mul = kSparsityStdMul;
  if (s.n_layer > kLayersWithKv) {
    s.n_layer_kv = kLayersWithKv;
    // The layers that lend their caches: the last local and the last global one with a cache.
    if (!s.layer_is_swa[kLayersWithKv - 2] || s.layer_is_swa[kLayersWithKv - 1]) {
      throw std::runtime_error(
          "gemma3n shares the caches of layers 18 (local) and 19 (global), but this model's "
          "window pattern makes them otherwise");
    }
  }
  if (!s.qk_norm) throw std::runtime_error("gemma3n model has no blk.0.attn_q_norm.weight");
  if (s.fused_qkv || s.qkv_bias) {
    throw std::runtime_error("gemma3n model has a fused attn_qkv or Q/K/V biases");
  }

  const uint64_t E = s.n_embd, A = s.n_altup, P = s.n_embd_altup, L = s.n_layer;
  expect_weight(f, "gemma3n", Weight::PerLayerTokenEmbd, 0, {P * L, s.n_vocab});
  expect_weight(f, "gemma3n", Weight::PerLayerModelProj, 0, {E, P * L});
  expect_weight(f, "gemma3n", Weight::PerLayerProjNorm, 0, {P});
  expect_weight(f, "gemma3n", Weight::AltupProj, 0, {E, E, A - 1});
  expect_weight(f, "gemma3n", Weight::AltupUnembdProj, 0, {E, E, A - 1});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    expect_weight(f, "gemma3n", Weight::PerLayerInpGate, l, {E, P});
    expect_weight(f, "gemma3n", Weight::PerLayerProj, l, {P, E});
    expect_weight(f, "gemma3n", Weight::PerLayerPostNorm, l, {E});
    expect_weight(f, "gemma3n", Weight::AltupCorrectCoef, l, {A, A});
    expect_weight(f, "gemma3n", Weight::AltupCorrectScale, l, {E});
    expect_weight(f, "gemma3n", Weight::AltupPredictCoef, l, {A, A * A});
    expect_weight(f, "gemma3n", Weight::AltupRouter, l, {E, A});
    expect_weight(f, "gemma3n", Weight::AltupRouterNorm, l, {E});
    expect_weight(f, "gemma3n", Weight::LaurelL, l, {E, s.laurel_rank});
    expect_weight(f, "gemma3n", Weight::LaurelR, l, {s.laurel_rank, E});
    expect_weight(f, "gemma3n", Weight::LaurelPostNorm, l, {E});
  }
}

}  // namespace vkllm::model
