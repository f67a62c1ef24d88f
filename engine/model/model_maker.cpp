#include "engine/model/model_maker.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/gguf/quants.h"
#include "engine/model/encoder_maker.h"
#include "engine/model/fast_normal.h"
#include "engine/model/gemma3n_maker.h"
#include "engine/model/gemma4_maker.h"
#include "engine/model/mamba2_maker.h"
#include "engine/model/planned_tensor.h"
#include "engine/model/qwen35_maker.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

using gguf::TensorType;

// ---------------------------------------------------------------------------------------------
// Architectures

struct ArchTraits {
  std::string_view name;
  float default_rope_base;
  float rms_eps;
  bool qkv_bias = false;
  bool qk_norm = false;
  bool post_norms = false;
  bool fused = false;        // phi3: attn_qkv and stacked gate/up in ffn_up
  bool always_tied = false;  // gemma: no output.weight
  bool always_untied = false;
  bool writes_head_sizes = false;  // attention.key_length / value_length
  bool writes_rope_dims = false;
  uint32_t sliding_window = 0;  // written as <arch>.attention.sliding_window when > 0
  bool moe = false;             // router and stacked experts instead of the dense FFN
  // gpt-oss: attention output bias and sinks, post_attention_norm before the FFN, router and
  // expert biases, YaRN (build_random_model).
  bool gpt_oss = false;
  bool lfm2 = false;   // short-convolution layers between attention ones (lfm2_attention_layer)
  bool shexp = false;  // a gated shared expert beside the routed ones (qwen2moe)
  // Llama 4: MoE only every llama4_moe_step(shape)-th layer, dense FFNs between, an ungated
  // shared expert beside each MoE layer's routed ones; iRoPE is llama.cpp's fixed pattern.
  bool llama4 = false;
};

const ArchTraits kMakerArchs[] = {
    {"llama", 10000.0f, 1e-5f, false, false, false, false, false, false, false, true, 0},
    {"qwen2", 1000000.0f, 1e-6f, true, false, false, false, false, false, false, false, 0},
    // Qwen2-VL / Qwen2.5-VL's text model: qwen2's layers, multi-section RoPE (sections below).
    {"qwen2vl", 1000000.0f, 1e-6f, true, false, false, false, false, false, false, false, 0},
    {"qwen3", 1000000.0f, 1e-6f, false, true, false, false, false, false, true, false, 0},
    // Qwen3-VL's text model: qwen3's layers, interleaved M-RoPE (base 5e6) and deepstack inputs.
    {"qwen3vl", 5000000.0f, 1e-6f, false, true, false, false, false, false, true, false, 0},
    {"qwen3moe", 1000000.0f, 1e-6f, false, true, false, false, false, false, true, false, 0, true},
    // Qwen2-MoE (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): qwen2's attention, experts whose weights are
    // not renormalised, and a shared expert gated per token.
    {"qwen2moe", 1000000.0f, 1e-6f, true, false, false, false, false, false, false, false, 0, true,
     false, false, true},
    // gpt-oss-20b's values: rope base 150000, window 128, Q/K/V biases, never tied.
    {"gpt-oss", 150000.0f, 1e-5f, true, false, false, false, false, true, true, true, 128, true,
     true},
    {"gemma2", 10000.0f, 1e-6f, false, false, true, false, true, false, true, false, 4096},
    // Gemma 3 (1B's values): Q/K norms, post norms, five local (window 512, rope base 10000,
    // fixed in llama.cpp) per global layer (base 1e6); no softcaps.
    {"gemma3", 1000000.0f, 1e-6f, false, true, true, false, true, false, true, false, 512},
    // Phi-3-mini-4k's window, which convert_hf_to_gguf.py writes.
    {"phi3", 10000.0f, 1e-5f, false, false, false, true, false, true, false, true, 2047},
    // Ministral 3: llama's layout with YaRN and the attention temperature (build_random_model).
    {"mistral3", 1000000.0f, 1e-5f, false, false, false, false, false, false, true, true, 0},
    // EmbeddingGemma: Gemma 3's layers (window 512) run bidirectionally, mean pooling, then
    // dense_2 / dense_3 (plan_tensors).
    {"gemma-embedding", 1000000.0f, 1e-6f, false, true, true, false, true, false, true, false, 512},
    // LFM2: tied embeddings, Q/K norms on its attention layers, token_embd_norm as output norm.
    {"lfm2", 1000000.0f, 1e-5f, false, true, false, false, true, false, false, false, 0, false,
     false, true},
    // Llama 4 (Scout's values): rope base 500000, never tied, head sizes written, MoE.
    {"llama4", 500000.0f, 1e-5f, false, false, false, false, false, true, true, true, 0, true,
     false, false, false, true},
};

const ArchTraits& arch_traits(std::string_view name) {
  for (const auto& a : kMakerArchs) {
    if (a.name == name) return a;
  }
  throw std::invalid_argument(
      "make-model: unsupported architecture '" + std::string(name) +
      "' (supported: llama, qwen2, qwen2moe, qwen3, qwen3moe, gpt-oss, qwen2vl, qwen3vl, "
      "qwen3-embedding, gemma2, gemma3, gemma3n, gemma4, phi3, mistral3, "
      "gemma-embedding, lfm2, qwen35, qwen35moe, qwen3next, granitehybrid, nemotron_h, "
      "nemotron_h_moe, llama4, "
      "bert, nomic-bert, bert-rerank)");
}

// Llama 4's interleave_moe_layer_step: Scout's 1 (16 experts 5120 wide: every layer MoE), else
// Maverick's 2 (dense and MoE layers alternate), which test shapes take so both kinds appear.
uint32_t llama4_moe_step(const ModelShape& s) {
  return s.n_expert == 16 && s.n_embd == 5120 ? 1 : 2;
}
// Llama 4's attention.chunk_size (Ollama's converter writes it; llama.cpp always uses 8192).
constexpr uint32_t kLlama4Chunk = 8192;

// Qwen3-Embedding: qwen3 whose last token's hidden state is the embedding.
constexpr std::string_view kQwen3Embedding = "qwen3-embedding";

// EmbeddingGemma's dense projections: 768 -> 3072 -> 768.
constexpr uint64_t kDenseWidth = 4;
// Ministral 3's YaRN: a factor of 16 over the original context.
constexpr float kYarnFactor = 16.0f;
// gpt-oss's YaRN: a factor of 32.
constexpr float kGptOssYarnFactor = 32.0f;

// LFM2's kernel length, and its layer pattern: the published 16-layer models' attention layers
// (2, 5, 8, 10, 12, 14), else every second layer from layer 1; the others short convolutions.
constexpr uint32_t kLfm2ConvLength = 3;
bool lfm2_attention_layer(uint32_t l, uint32_t n_layer) {
  if (n_layer == 16) return l == 2 || l == 5 || l == 8 || l == 10 || l == 12 || l == 14;
  return l % 2 == 1;
}

bool tied(const ArchTraits& a, const ModelShape& s) {
  return a.always_tied || (s.tied_embeddings && !a.always_untied);
}

std::vector<PlannedTensor> plan_tensors(const ArchTraits& a, const ModelShape& s,
                                        uint64_t n_vocab) {
  const uint64_t e = s.n_embd, q = uint64_t{s.n_head} * s.head_dim,
                 kv = uint64_t{s.n_head_kv} * s.head_dim, ff = s.n_ff, hd = s.head_dim;
  std::vector<PlannedTensor> t;
  auto add = [&](Weight w, uint32_t layer, std::vector<uint64_t> shape, Init init) {
    t.push_back({weight_name(w, layer), std::move(shape), init, layer});
  };
  add(Weight::TokenEmbd, 0, {e, n_vocab}, Init::Matrix);
  if ((a.name == "llama" || a.llama4) && s.llama3_rope_factor > 0) {
    add(Weight::RopeFreqs, 0, {hd / 2}, Init::RopeFactors);
  }
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    add(Weight::AttnNorm, l, {e}, Init::Norm);
    const bool conv = a.lfm2 && !lfm2_attention_layer(l, s.n_layer);
    if (conv) {
      add(Weight::ShortConvInProj, l, {e, 3 * e}, Init::Matrix);
      add(Weight::ShortConvConv, l, {kLfm2ConvLength, e}, Init::Matrix);
      add(Weight::ShortConvOutProj, l, {e, e}, Init::Matrix);
    } else if (a.fused) {
      add(Weight::AttnQKV, l, {e, q + 2 * kv}, Init::Matrix);
    } else {
      add(Weight::AttnQ, l, {e, q}, Init::Matrix);
      add(Weight::AttnK, l, {e, kv}, Init::Matrix);
      add(Weight::AttnV, l, {e, kv}, Init::Matrix);
    }
    if (a.qkv_bias && !conv) {
      add(Weight::AttnQBias, l, {q}, Init::Bias);
      add(Weight::AttnKBias, l, {kv}, Init::Bias);
      add(Weight::AttnVBias, l, {kv}, Init::Bias);
    }
    if (a.qk_norm && !conv) {
      add(Weight::AttnQNorm, l, {hd}, Init::Norm);
      add(Weight::AttnKNorm, l, {hd}, Init::Norm);
    }
    if (!conv) add(Weight::AttnOut, l, {q, e}, Init::Matrix);
    if (a.gpt_oss) {
      add(Weight::AttnOutBias, l, {e}, Init::Bias);
      add(Weight::AttnSinks, l, {s.n_head}, Init::Logit);
    }
    if (a.post_norms || a.gpt_oss) add(Weight::PostAttnNorm, l, {e}, Init::Norm);
    if (!a.gpt_oss) add(Weight::FfnNorm, l, {e}, Init::Norm);
    const bool dense_layer = a.llama4 && (l + 1) % llama4_moe_step(s) != 0;
    if (a.moe && !dense_layer) {
      const uint64_t n = s.n_expert, ffe = s.n_ff_exp;
      add(Weight::FfnGateInp, l, {e, n}, Init::Matrix);
      // Llama 4 routes on raw logits of the normed input (std 1 from N(0, 1/E) weights): std 4
      // picks decisively, as trained routers do, so quantization noise does not flip near-ties.
      if (a.llama4) t.back().scale = 4.0f;
      add(Weight::FfnGateExps, l, {e, ffe, n}, Init::Matrix);
      add(Weight::FfnUpExps, l, {e, ffe, n}, Init::Matrix);
      add(Weight::FfnDownExps, l, {ffe, e, n}, Init::Matrix);
      if (a.shexp) {
        add(Weight::FfnGateInpShexp, l, {e}, Init::Matrix);
        add(Weight::FfnGateShexp, l, {e, s.n_ff_shexp}, Init::Matrix);
        add(Weight::FfnUpShexp, l, {e, s.n_ff_shexp}, Init::Matrix);
        add(Weight::FfnDownShexp, l, {s.n_ff_shexp, e}, Init::Matrix);
      }
      if (a.gpt_oss) {
        add(Weight::FfnGateInpBias, l, {n}, Init::Logit);
        add(Weight::FfnGateExpsBias, l, {ffe, n}, Init::Bias);
        add(Weight::FfnUpExpsBias, l, {ffe, n}, Init::Bias);
        add(Weight::FfnDownExpsBias, l, {e, n}, Init::Bias);
      }
      if (a.llama4) {  // an ungated shared expert, as wide as a routed one
        add(Weight::FfnGateShexp, l, {e, ffe}, Init::Matrix);
        add(Weight::FfnUpShexp, l, {e, ffe}, Init::Matrix);
        add(Weight::FfnDownShexp, l, {ffe, e}, Init::Matrix);
      }
    } else if (a.fused) {
      add(Weight::FfnUp, l, {e, 2 * ff}, Init::Matrix);
    } else {
      add(Weight::FfnGate, l, {e, ff}, Init::Matrix);
      add(Weight::FfnUp, l, {e, ff}, Init::Matrix);
    }
    if (!a.moe || dense_layer) add(Weight::FfnDown, l, {ff, e}, Init::Matrix);
    if (a.post_norms) add(Weight::PostFfnNorm, l, {e}, Init::Norm);
  }
  add(a.lfm2 ? Weight::TokenEmbdNorm : Weight::OutputNorm, 0, {e}, Init::Norm);
  if (!tied(a, s)) add(Weight::Output, 0, {e, n_vocab}, Init::Matrix);
  if (a.name == "gemma-embedding") {
    add(Weight::Dense2, 0, {e, kDenseWidth * e}, Init::Matrix);
    add(Weight::Dense3, 0, {kDenseWidth * e, e}, Init::Matrix);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Values

// Llama 3.1's frequency-dependent RoPE scaling (original context 8192, low/high frequency
// factors 1 and 4), as convert_hf_to_gguf.py stores it in rope_freqs.weight.
std::vector<float> llama3_rope_factors(uint32_t head_dim, float base, float factor) {
  constexpr double kOldContext = 8192, kLowFactor = 1, kHighFactor = 4;
  const double low_wavelen = kOldContext / kLowFactor, high_wavelen = kOldContext / kHighFactor;
  std::vector<float> out;
  for (uint32_t i = 0; i < head_dim; i += 2) {
    const double freq = 1.0 / std::pow(double{base}, double(i) / head_dim);
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      const double smooth = (kOldContext / wavelen - kLowFactor) / (kHighFactor - kLowFactor);
      out.push_back(static_cast<float>(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

struct TensorRecipe {
  PlannedTensor tensor;
  TensorType type;
  uint64_t seed;
  unsigned threads;
  std::vector<float> fixed_values;  // RopeFactors
};

// Generates the tensor in chunks of rows on several threads. Every chunk has its own generator
// seeded from (tensor, chunk index), so the bytes never depend on the thread count.
void fill_tensor(const TensorRecipe& r, std::span<uint8_t> out) {
  const uint64_t row_len = r.tensor.shape[0];
  uint64_t elements = 1;
  for (uint64_t d : r.tensor.shape) elements *= d;
  const uint64_t rows = elements / row_len;
  const size_t row_bytes = gguf::row_bytes(r.type, row_len);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, 65536 / row_len);
  const uint64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  const float matrix_std = 1.0f / std::sqrt(static_cast<float>(row_len));

  std::atomic<uint64_t> next{0};
  auto worker = [&] {
    std::vector<float> buf;
    for (uint64_t c = next++; c < chunks; c = next++) {
      const uint64_t first = c * rows_per_chunk;
      const uint64_t count = std::min(rows_per_chunk, rows - first);
      buf.resize(count * row_len);
      FastNormal rng(r.seed + 0x632be59bd9b4e019ull * (c + 1));
      for (float& v : buf) {
        switch (r.tensor.init) {
          case Init::Matrix:
            v = matrix_std * rng.next();
            break;
          case Init::Norm:
            v = 1.0f + 0.05f * rng.next();
            break;
          case Init::Bias:
            v = 0.02f * rng.next();
            break;
          case Init::Logit:
            v = rng.next();
            break;
          case Init::RopeFactors:
            break;
        }
      }
      if (r.tensor.init == Init::RopeFactors) buf = r.fixed_values;
      if (r.tensor.scale != 1.0f)
        for (float& v : buf) v *= r.tensor.scale;
      gguf::quantize(r.type, buf.data(), out.data() + first * row_bytes, buf.size(), 1);
    }
  };
  const unsigned hw = r.threads ? r.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto n_threads = static_cast<unsigned>(std::min<uint64_t>(hw, chunks));
  std::vector<std::jthread> pool;
  for (unsigned i = 1; i < n_threads; ++i) pool.emplace_back(worker);
  worker();
}

uint64_t vocab_size(const gguf::GgufFile& vocab) {
  const gguf::Value* tokens = vocab.find("tokenizer.ggml.tokens");
  const auto* arr = tokens ? std::get_if<std::shared_ptr<gguf::Array>>(&tokens->v) : nullptr;
  if (!arr || !*arr || (*arr)->items.empty()) {
    throw std::invalid_argument("make-model: the vocab file has no tokenizer.ggml.tokens array");
  }
  return (*arr)->items.size();
}

}  // namespace

void add_planned_tensors(std::vector<PlannedTensor> plan, const MakeModelOptions& o,
                         bool has_output, gguf::GgufWriter& w) {
  for (PlannedTensor& t : plan) {
    TensorSlot slot{t.name, t.shape, t.layer, o.shape.n_layer, has_output};
    TensorType type = choose_tensor_type(o.file_type, slot);
    // llama.cpp's converter always writes BERT's position and token-type embeddings as F32 (and
    // llama-quantize leaves them so); its CPU build refuses them in any other type.
    if (t.name == weight_name(Weight::PosEmbd) || t.name == weight_name(Weight::TokenTypes)) {
      type = TensorType::F32;
    }
    // ggml's ssm_conv reads the conv kernel as F32 (llama-quantize leaves it so).
    if (t.name.ends_with("ssm_conv1d.weight")) type = TensorType::F32;
    TensorRecipe r{t, type, hash_name(t.name, o.seed), o.threads, {}};
    w.add_lazy_tensor(std::move(t.name), type, t.shape,
                      [r = std::move(r)](std::span<uint8_t> out) { fill_tensor(r, out); });
  }
}

uint64_t vocab_token_count(const gguf::GgufFile& vocab) {
  return vocab_size(vocab);
}

void check_decoder_shape(const ModelShape& s, uint32_t head_dim_multiple) {
  if (s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 || s.n_head_kv == 0 || s.head_dim == 0 ||
      s.n_ff == 0 || s.n_head % s.n_head_kv != 0 || s.head_dim % head_dim_multiple != 0) {
    throw std::invalid_argument("make-model: inconsistent model shape");
  }
}

void add_random_tensor(gguf::GgufWriter& w, const MakeModelOptions& o, std::string name,
                       std::vector<uint64_t> shape, bool norm, uint32_t layer, bool has_output,
                       float scale) {
  std::vector<PlannedTensor> plan;
  plan.push_back(
      {std::move(name), std::move(shape), norm ? Init::Norm : Init::Matrix, layer, scale});
  add_planned_tensors(std::move(plan), o, has_output, w);
}

namespace {
void build_model_tensors(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                         gguf::GgufWriter& w);

// MakeModelOptions::stacked_experts: each layer's ffn_gate_exps and ffn_up_exps stacked.
void stack_gate_up_experts(const MakeModelOptions& o, gguf::GgufWriter& w) {
  uint32_t stacked = 0;
  for (uint32_t l = 0; l < o.shape.n_layer; ++l) {
    const std::string gate = weight_name(Weight::FfnGateExps, l);
    if (!w.has_tensor(gate)) continue;
    const std::string up = weight_name(Weight::FfnUpExps, l);
    w.stack_tensors(gate, up, "blk." + std::to_string(l) + ".ffn_gate_up_exps.weight");
    ++stacked;
  }
  if (stacked == 0) {
    throw std::invalid_argument(
        "make-model: --stacked-experts needs an architecture whose "
        "experts have gate and up projections (" +
        o.arch + " has none)");
  }
}
}  // namespace

void build_random_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& w) {
  build_model_tensors(o, vocab, w);
  if (o.stacked_experts) stack_gate_up_experts(o, w);
}

namespace {
void build_model_tensors(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                         gguf::GgufWriter& w) {
  if (o.arch == "granitehybrid" || o.arch == "nemotron_h" || o.arch == "nemotron_h_moe") {
    build_mamba2_model(o, vocab, w);
    return;
  }
  if (o.arch == "qwen35" || o.arch == "qwen35moe" || o.arch == "qwen3next") {
    build_qwen35_model(o, vocab, w);
    if (o.layout == FileLayout::Ollama) rewrite_as_ollama_layout(o, w);
    return;
  }
  if (o.arch == "gemma3n") {
    build_gemma3n_model(o, vocab, w);
    if (o.layout == FileLayout::Ollama) rewrite_as_ollama_layout(o, w);
    return;
  }
  if (o.arch == "gemma4") {
    build_gemma4_model(o, vocab, w);
    if (o.layout == FileLayout::Ollama) rewrite_as_ollama_layout(o, w);
    return;
  }
  if (build_encoder_model(o, vocab, w)) {
    if (o.layout == FileLayout::Ollama) rewrite_as_ollama_layout(o, w);
    return;
  }
  const bool qwen3_embedding = o.arch == kQwen3Embedding;
  const ArchTraits& a = arch_traits(qwen3_embedding ? "qwen3" : o.arch);
  ModelShape s = o.shape;
  if (a.moe) {
    if (s.n_expert == 0) s.n_expert = 8;
    if (s.n_expert_used == 0) s.n_expert_used = std::min(2u, s.n_expert);
    if (s.n_ff_exp == 0) s.n_ff_exp = std::max(32u, s.n_ff / 2 / 32 * 32);
    if (a.shexp && s.n_ff_shexp == 0) s.n_ff_shexp = 2 * s.n_ff_exp;
    if (s.n_expert_used > s.n_expert) {
      throw std::invalid_argument("make-model: more experts per token than experts");
    }
  }
  check_decoder_shape(s);
  const uint64_t n_vocab = vocab_size(vocab);
  const float rope_base = s.rope_freq_base > 0 ? s.rope_freq_base : a.default_rope_base;
  const std::string arch(a.name);
  const std::string p = arch + ".";

  w.set_string("general.architecture", arch);
  w.set_string("general.name", "vkllm random " + arch);
  w.set_u32("general.file_type", static_cast<uint32_t>(o.file_type));
  if (is_quantized(o.file_type)) w.set_u32("general.quantization_version", 2);
  w.set_u32(p + "context_length", s.n_ctx);
  w.set_u32(p + "embedding_length", s.n_embd);
  w.set_u32(p + "block_count", s.n_layer);
  w.set_u32(p + "feed_forward_length", s.n_ff);
  w.set_u32(p + "attention.head_count", s.n_head);
  if (a.lfm2) {
    // One K/V head count per layer, 0 for the short convolutions (as convert_hf_to_gguf.py).
    std::vector<int32_t> kv(s.n_layer);
    for (uint32_t l = 0; l < s.n_layer; ++l)
      kv[l] = lfm2_attention_layer(l, s.n_layer) ? static_cast<int32_t>(s.n_head_kv) : 0;
    w.set_i32s(p + "attention.head_count_kv", kv);
    w.set_u32(p + "shortconv.l_cache", kLfm2ConvLength);
  } else {
    w.set_u32(p + "attention.head_count_kv", s.n_head_kv);
  }
  w.set_f32(p + "rope.freq_base", rope_base);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", a.rms_eps);
  if (a.writes_rope_dims) w.set_u32(p + "rope.dimension_count", s.head_dim);
  if (a.writes_head_sizes || s.head_dim * s.n_head != s.n_embd) {
    w.set_u32(p + "attention.key_length", s.head_dim);
    w.set_u32(p + "attention.value_length", s.head_dim);
  }
  if (a.name == "gemma2") {
    w.set_f32(p + "attn_logit_softcapping", 50.0f);
    w.set_f32(p + "final_logit_softcapping", 30.0f);
  }
  if (a.sliding_window > 0) {
    w.set_u32(p + "attention.sliding_window",
              s.sliding_window > 0 ? s.sliding_window : a.sliding_window);
  }
  if (a.moe) {
    w.set_u32(p + "expert_count", s.n_expert);
    w.set_u32(p + "expert_used_count", s.n_expert_used);
    w.set_u32(p + "expert_feed_forward_length", s.n_ff_exp);
    if (a.shexp) w.set_u32(p + "expert_shared_feed_forward_length", s.n_ff_shexp);
  }
  if (a.llama4) {
    w.set_u32(p + "interleave_moe_layer_step", llama4_moe_step(s));
    w.set_u32(p + "attention.chunk_size", kLlama4Chunk);
  }
  if (a.gpt_oss) {
    // As convert_hf_to_gguf.py writes gpt-oss's YaRN (factor 32 over 4096 of 131072 tokens): the
    // same factor over n_ctx / 32 original tokens.
    w.set_string(p + "rope.scaling.type", "yarn");
    w.set_f32(p + "rope.scaling.factor", kGptOssYarnFactor);
    w.set_u32(p + "rope.scaling.original_context_length",
              std::max<uint32_t>(1, static_cast<uint32_t>(s.n_ctx / kGptOssYarnFactor)));
  }
  if (a.name == "mistral3") {
    // As convert_hf_to_gguf.py writes Ministral 3's rope_parameters (mscale_all_dim 1,
    // llama_4_scaling_beta 0.1).
    w.set_string(p + "rope.scaling.type", "yarn");
    w.set_f32(p + "rope.scaling.factor", kYarnFactor);
    w.set_u32(p + "rope.scaling.original_context_length",
              std::max<uint32_t>(1, static_cast<uint32_t>(s.n_ctx / kYarnFactor)));
    w.set_f32(p + "rope.scaling.yarn_beta_fast", 32.0f);
    w.set_f32(p + "rope.scaling.yarn_beta_slow", 1.0f);
    w.set_f32(p + "rope.scaling.yarn_log_multiplier", 1.0f);
    w.set_f32(p + "attention.temperature_scale", 0.1f);
  }
  if (a.name == "qwen2vl") {
    // Qwen2-VL's 16/24/24 of 64 rotated pairs (temporal, height, width), scaled to the head.
    const auto pairs = static_cast<int32_t>(s.head_dim / 2), t = pairs / 4, h = (pairs - t) / 2;
    w.set_i32s(p + "rope.dimension_sections", {t, h, pairs - t - h, 0});
  }
  if (a.name == "qwen3vl") {
    // Qwen3-VL's 24/20/20 of 64 pairs, scaled to the head, and its deepstack inputs (3 of 36
    // layers; fewer in shallow shapes: qwen3vl_deepstack_layers).
    const auto pairs = static_cast<int32_t>(s.head_dim / 2), hw = pairs * 20 / 64;
    w.set_i32s(p + "rope.dimension_sections", {pairs - 2 * hw, hw, hw, 0});
    w.set_u32(p + "n_deepstack_layers", qwen3vl_deepstack_layers(s.n_layer));
  }
  if (a.name == "gemma-embedding") {
    w.set_u32(p + "pooling_type", 1);  // mean
    const auto dense = static_cast<uint32_t>(kDenseWidth * s.n_embd);
    w.set_u32(p + "dense_2_feat_in", s.n_embd);
    w.set_u32(p + "dense_2_feat_out", dense);
    w.set_u32(p + "dense_3_feat_in", dense);
    w.set_u32(p + "dense_3_feat_out", s.n_embd);
  }
  // Gemma 3's 128k-context sizes stretch their 16k training context linearly (HF config).
  if (a.name == "gemma3" && s.n_ctx >= 131072) {
    w.set_string(p + "rope.scaling.type", "linear");
    w.set_f32(p + "rope.scaling.factor", 8.0f);
  }
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(n_vocab));
  if (qwen3_embedding) w.set_u32(p + "pooling_type", 3);  // last token
  w.copy_metadata(vocab, "tokenizer.");

  const bool has_output = !tied(a, s);
  for (PlannedTensor& t : plan_tensors(a, s, n_vocab)) {
    TensorSlot slot{t.name, t.shape, t.layer, s.n_layer, has_output, a.moe ? s.n_expert : 0};
    TensorRecipe r{
        t, choose_tensor_type(o.file_type, slot), hash_name(t.name, o.seed), o.threads, {}};
    // ggml's ssm_conv reads the conv kernel as F32 (llama-quantize leaves it so).
    if (t.name.ends_with("shortconv.conv.weight")) r.type = TensorType::F32;
    if (t.init == Init::RopeFactors) {
      r.fixed_values = llama3_rope_factors(s.head_dim, rope_base, s.llama3_rope_factor);
    }
    const TensorType type = r.type;
    w.add_lazy_tensor(std::move(t.name), type, t.shape,
                      [r = std::move(r)](std::span<uint8_t> out) { fill_tensor(r, out); });
  }
  if (o.layout == FileLayout::Ollama) rewrite_as_ollama_layout(o, w);
}

}  // namespace

}  // namespace vkllm::model
