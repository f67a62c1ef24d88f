#include "engine/model/gemma3n_maker.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

// Names unique in the library (unity builds): gemma3n_spec.cpp has its own.
constexpr uint64_t kMakerStreams = 4, kMakerPerLayerWidth = 256, kMakerLaurelRank = 64;
constexpr uint32_t kMakerSparseLayers = 10, kMakerLayersWithKv = 20, kMakerSwaPeriod = 5;
constexpr uint32_t kMakerDefaultWindow = 512;
constexpr float kMakerSparsity = 1.6448533535003662f;

template <typename T>
gguf::Value gemma3n_array_value(gguf::ValueType type, const std::vector<T>& items) {
  auto arr = std::make_shared<gguf::Array>();
  arr->element_type = type;
  for (const T& x : items) arr->items.push_back(gguf::Value{x});
  return gguf::Value{std::move(arr)};
}

}  // namespace

void build_gemma3n_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                         gguf::GgufWriter& w) {
  const ModelShape& s = o.shape;
  check_decoder_shape(s);
  const uint64_t n_vocab = vocab_token_count(vocab);
  const std::string p = "gemma3n.";
  const uint32_t L = s.n_layer;
  w.set_string("general.architecture", "gemma3n");
  w.set_string("general.name", "vkllm random gemma3n");
  w.set_u32("general.file_type", static_cast<uint32_t>(o.file_type));
  if (is_quantized(o.file_type)) w.set_u32("general.quantization_version", 2);
  w.set_u32(p + "context_length", s.n_ctx);
  w.set_u32(p + "embedding_length", s.n_embd);
  w.set_u32(p + "block_count", L);
  w.set(p + "feed_forward_length",
        gemma3n_array_value(gguf::ValueType::U32, std::vector<uint32_t>(L, s.n_ff)));
  w.set_u32(p + "attention.head_count", s.n_head);
  w.set_u32(p + "attention.head_count_kv", s.n_head_kv);
  w.set_u32(p + "attention.key_length", s.head_dim);
  w.set_u32(p + "attention.value_length", s.head_dim);
  w.set_f32(p + "rope.freq_base", s.rope_freq_base > 0 ? s.rope_freq_base : 1000000.0f);
  w.set_f32(p + "rope.freq_base_swa", 10000.0f);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32(p + "attention.sliding_window",
            s.sliding_window ? s.sliding_window : kMakerDefaultWindow);
  std::vector<bool> swa(L);
  for (uint32_t l = 0; l < L; ++l) swa[l] = l % kMakerSwaPeriod < kMakerSwaPeriod - 1;
  w.set(p + "attention.sliding_window_pattern", gemma3n_array_value(gguf::ValueType::BOOL, swa));
  w.set_f32(p + "final_logit_softcapping", 30.0f);
  w.set_u32(p + "altup.active_idx", 0);
  w.set_u32(p + "altup.num_inputs", static_cast<uint32_t>(kMakerStreams));
  w.set_u32(p + "embedding_length_per_layer_input", static_cast<uint32_t>(kMakerPerLayerWidth));
  w.set_u32(p + "attention.shared_kv_layers", L > kMakerLayersWithKv ? L - kMakerLayersWithKv : 0);
  std::vector<float> sparsity(L, 0.0f);
  std::fill_n(sparsity.begin(), std::min(L, kMakerSparseLayers), kMakerSparsity);
  w.set_f32s(p + "activation_sparsity_scale", sparsity);
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(n_vocab));
  w.copy_metadata(vocab, "tokenizer.");

  const uint64_t E = s.n_embd, q = uint64_t{s.n_head} * s.head_dim,
                 kv = uint64_t{s.n_head_kv} * s.head_dim, hd = s.head_dim, ff = s.n_ff;
  const uint64_t A = kMakerStreams, P = kMakerPerLayerWidth, R = kMakerLaurelRank;
  auto add = [&](Weight wt, uint32_t layer, std::vector<uint64_t> shape, bool norm = false,
                 float scale = 1.0f) {
    add_random_tensor(w, o, weight_name(wt, layer), std::move(shape), norm, layer, false, scale);
  };
  // Gemma 3n's QK^T is unscaled: Q/K norms of head_dim^-1/4 give the scores of a 1/sqrt(head_dim)
  // attention over unit heads (norms of 1 make them head_dim^1/2 times larger, every softmax
  // nearly one-hot and the random model chaotic: llama.cpp's own flash and plain attention then
  // disagree). Small AltUp coefficients keep the streams from growing layer after layer, as
  // trained ones do.
  const float qk_norm = 1.0f / std::sqrt(std::sqrt(static_cast<float>(s.head_dim)));
  const float coef = 0.2f;
  add(Weight::TokenEmbd, 0, {E, n_vocab});
  add(Weight::PerLayerTokenEmbd, 0, {P * L, n_vocab});
  add(Weight::PerLayerModelProj, 0, {E, P * L});
  add(Weight::PerLayerProjNorm, 0, {P}, true);
  add(Weight::AltupProj, 0, {E, E, A - 1});
  add(Weight::AltupUnembdProj, 0, {E, E, A - 1});
  for (uint32_t l = 0; l < L; ++l) {
    add(Weight::AttnNorm, l, {E}, true);
    add(Weight::AttnQ, l, {E, q});
    add(Weight::AttnK, l, {E, kv});
    add(Weight::AttnV, l, {E, kv});
    add(Weight::AttnQNorm, l, {hd}, true, qk_norm);
    add(Weight::AttnKNorm, l, {hd}, true, qk_norm);
    add(Weight::AttnOut, l, {q, E});
    add(Weight::PostAttnNorm, l, {E}, true);
    add(Weight::FfnNorm, l, {E}, true);
    add(Weight::FfnGate, l, {E, ff});
    add(Weight::FfnUp, l, {E, ff});
    add(Weight::FfnDown, l, {ff, E});
    add(Weight::PostFfnNorm, l, {E}, true);
    add(Weight::PerLayerInpGate, l, {E, P});
    add(Weight::PerLayerProj, l, {P, E});
    add(Weight::PerLayerPostNorm, l, {E}, true);
    add(Weight::AltupCorrectCoef, l, {A, A}, false, coef);
    add(Weight::AltupCorrectScale, l, {E}, true);
    add(Weight::AltupPredictCoef, l, {A, A * A}, false, coef);
    add(Weight::AltupRouter, l, {E, A});
    add(Weight::AltupRouterNorm, l, {E}, true);
    add(Weight::LaurelL, l, {E, R});
    add(Weight::LaurelR, l, {R, E});
    add(Weight::LaurelPostNorm, l, {E}, true);
  }
  add(Weight::OutputNorm, 0, {E}, true);
}

}  // namespace vkllm::model
