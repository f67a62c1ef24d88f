#include "engine/model/encoder_maker.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/planned_tensor.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

// Encoders, as convert_hf_to_gguf.py writes them: bert (separate Q/K/V with biases, learned
// positions, GELU FFN with biases) and nomic-bert (fused QKV, rotary, SwiGLU, no biases); both
// post-norm with LayerNorms that have biases. A rerank model adds the classification head.
struct EncoderTraits {
  std::string_view name;  // the make-model name
  std::string_view arch;  // general.architecture
  uint32_t pooling;       // llama.cpp's pooling_type
  uint32_t max_ctx;       // context_length written (bert: 512, nomic-bert: 2048)
  float rope_base;        // 0: no rope
};
const EncoderTraits kEncoders[] = {
    {"bert", "bert", 1, 512, 0.0f},
    {"nomic-bert", "nomic-bert", 1, 2048, 1000.0f},
    {"bert-rerank", "bert", 4, 512, 0.0f},
};

const EncoderTraits* encoder_traits(std::string_view name) {
  for (const auto& e : kEncoders) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<PlannedTensor> plan_encoder_tensors(const EncoderTraits& a, const ModelShape& s,
                                                uint64_t n_vocab, uint64_t n_ctx,
                                                uint64_t n_types) {
  const bool bert = a.arch == "bert";
  const uint64_t e = s.n_embd, ff = s.n_ff;
  std::vector<PlannedTensor> t;
  auto add = [&](Weight w, uint32_t layer, std::vector<uint64_t> shape, Init init) {
    t.push_back({weight_name(w, layer), std::move(shape), init, layer});
  };
  add(Weight::TokenEmbd, 0, {e, n_vocab}, Init::Matrix);
  add(Weight::TokenTypes, 0, {e, n_types}, Init::Matrix);
  if (bert) add(Weight::PosEmbd, 0, {e, n_ctx}, Init::Matrix);
  add(Weight::TokenEmbdNorm, 0, {e}, Init::Norm);
  add(Weight::TokenEmbdNormBias, 0, {e}, Init::Bias);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    if (bert) {
      for (auto [w, b] : {std::pair{Weight::AttnQ, Weight::AttnQBias},
                          std::pair{Weight::AttnK, Weight::AttnKBias},
                          std::pair{Weight::AttnV, Weight::AttnVBias}}) {
        add(w, l, {e, e}, Init::Matrix);
        add(b, l, {e}, Init::Bias);
      }
    } else {
      add(Weight::AttnQKV, l, {e, 3 * e}, Init::Matrix);
    }
    add(Weight::AttnOut, l, {e, e}, Init::Matrix);
    if (bert) add(Weight::AttnOutBias, l, {e}, Init::Bias);
    add(Weight::AttnOutNorm, l, {e}, Init::Norm);
    add(Weight::AttnOutNormBias, l, {e}, Init::Bias);
    add(Weight::FfnUp, l, {e, ff}, Init::Matrix);
    if (bert) {
      add(Weight::FfnUpBias, l, {ff}, Init::Bias);
    } else {
      add(Weight::FfnGate, l, {e, ff}, Init::Matrix);
    }
    add(Weight::FfnDown, l, {ff, e}, Init::Matrix);
    if (bert) add(Weight::FfnDownBias, l, {e}, Init::Bias);
    add(Weight::LayerOutNorm, l, {e}, Init::Norm);
    add(Weight::LayerOutNormBias, l, {e}, Init::Bias);
  }
  if (a.pooling == 4) {
    add(Weight::Cls, 0, {e, e}, Init::Matrix);
    add(Weight::ClsBias, 0, {e}, Init::Bias);
    add(Weight::ClsOut, 0, {e, 1}, Init::Matrix);
    add(Weight::ClsOutBias, 0, {1}, Init::Bias);
  }
  return t;
}

void build_encoder(const EncoderTraits& a, const MakeModelOptions& o, const gguf::GgufFile& vocab,
                   gguf::GgufWriter& w) {
  const ModelShape& s = o.shape;
  if (s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 || s.n_ff == 0 || s.n_embd % s.n_head != 0 ||
      (s.n_embd / s.n_head) % 2 != 0) {
    throw std::invalid_argument("make-model: inconsistent model shape");
  }
  const uint64_t n_vocab = vocab_token_count(vocab);
  const uint32_t n_ctx = std::min(s.n_ctx, a.max_ctx);
  const uint32_t n_types =
      vocab.get_optional<uint32_t>("tokenizer.ggml.token_type_count").value_or(2);
  const std::string arch(a.arch);
  const std::string p = arch + ".";
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "vkllm random " + std::string(a.name));
  w.set_u32("general.file_type", static_cast<uint32_t>(o.file_type));
  if (is_quantized(o.file_type)) w.set_u32("general.quantization_version", 2);
  // Encoders have as many K/V heads as query heads (convert writes no head_count_kv for them).
  w.set_u32(p + "block_count", s.n_layer);
  w.set_u32(p + "context_length", n_ctx);
  w.set_u32(p + "embedding_length", s.n_embd);
  w.set_u32(p + "feed_forward_length", s.n_ff);
  w.set_u32(p + "attention.head_count", s.n_head);
  if (a.rope_base > 0) w.set_f32(p + "rope.freq_base", a.rope_base);
  w.set_f32(p + "attention.layer_norm_epsilon", 1e-12f);
  w.set_bool(p + "attention.causal", false);
  // An XLM-RoBERTa vocabulary (unigram, "t5") makes the model snowflake-arctic-embed2's kind:
  // CLS pooling (its sentence-transformers config) over bert's graph.
  const bool xlm_roberta =
      a.pooling == 1 && vocab.get_optional<std::string>("tokenizer.ggml.model") == "t5";
  w.set_u32(p + "pooling_type", xlm_roberta ? 2 : a.pooling);
  w.copy_metadata(vocab, "tokenizer.");
  if (!vocab.has("tokenizer.ggml.token_type_count")) {
    w.set_u32("tokenizer.ggml.token_type_count", n_types);
  }
  if (a.pooling == 4) w.set_strings(p + "classifier.output_labels", {"LABEL_0"});
  add_planned_tensors(plan_encoder_tensors(a, s, n_vocab, n_ctx, n_types), o, true, w);
}

}  // namespace

bool build_encoder_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                         gguf::GgufWriter& w) {
  const EncoderTraits* e = encoder_traits(o.arch);
  if (!e) return false;
  build_encoder(*e, o, vocab, w);
  return true;
}

}  // namespace vkllm::model
