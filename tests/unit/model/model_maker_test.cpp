// `make-model` fixtures: names, shapes, types and metadata as llama.cpp writes them for each
// architecture, llama.cpp's quantization mix, determinism, and sane random weights.
#include "engine/model/model_maker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/quants.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {
namespace {

using gguf::TensorType;
const std::filesystem::path kShared = std::filesystem::path(VKLLM_SHARED_DIR) / "testdata";

// A small vocab GGUF (300 tokens) so most tests stay fast.
std::vector<uint8_t> small_vocab_bytes() {
  gguf::GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  while (tokens.size() < 300) tokens.push_back("tok" + std::to_string(tokens.size()));
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_f32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_string("general.name", "not copied");
  return w.serialize();
}

const std::vector<uint8_t>& small_vocab_image() {
  static const std::vector<uint8_t> bytes = small_vocab_bytes();
  return bytes;
}

// A generated model, parsed back.
struct Made {
  std::vector<uint8_t> bytes;
  gguf::GgufFile file;
  std::map<std::string, const gguf::TensorInfo*> by_name;
  TensorType type_of(const std::string& name) const {
    auto it = by_name.find(name);
    EXPECT_NE(it, by_name.end()) << name;
    return it == by_name.end() ? TensorType::I8 : it->second->type;
  }
};

std::unique_ptr<Made> make(const std::string& arch, const ModelShape& shape, FileType type,
                           uint64_t seed = 7, unsigned threads = 2,
                           const gguf::GgufFile* vocab = nullptr) {
  const gguf::GgufFile small = gguf::GgufFile::parse(small_vocab_image());
  MakeModelOptions o;
  o.arch = arch;
  o.shape = shape;
  o.file_type = type;
  o.seed = seed;
  o.threads = threads;
  gguf::GgufWriter w;
  build_random_model(o, vocab ? *vocab : small, w);
  std::vector<uint8_t> bytes = w.serialize();
  // Moving a vector keeps its buffer, so the parsed view stays valid inside Made.
  auto file = gguf::GgufFile::parse(bytes);
  auto m = std::unique_ptr<Made>(new Made{std::move(bytes), std::move(file), {}});
  for (const auto& t : m->file.tensors()) m->by_name[t.name] = &t;
  return m;
}

std::vector<float> values(const Made& m, const std::string& name) {
  const gguf::TensorInfo* t = m.by_name.at(name);
  std::vector<float> out(t->element_count());
  gguf::dequantize(t->type, m.file.tensor_data(*t).data(), out.data(), out.size());
  return out;
}

// Per-layer tensor suffixes and shapes of each architecture, written out from llama.cpp's
// tensor tables for E = 256, 4 heads of 64, 2 KV heads, FF = 768.
using Layout = std::map<std::string, std::vector<uint64_t>>;
Layout expected_layer(const std::string& arch) {
  const uint64_t E = 256, Q = 256, KV = 128, FF = 768, HD = 64;
  Layout l{{"attn_norm.weight", {E}},
           {"attn_output.weight", {Q, E}},
           {"ffn_norm.weight", {E}},
           {"ffn_down.weight", {FF, E}}};
  if (arch == "phi3") {
    l["attn_qkv.weight"] = {E, Q + 2 * KV};
    l["ffn_up.weight"] = {E, 2 * FF};
    return l;
  }
  l["attn_q.weight"] = {E, Q};
  l["attn_k.weight"] = {E, KV};
  l["attn_v.weight"] = {E, KV};
  l["ffn_gate.weight"] = {E, FF};
  l["ffn_up.weight"] = {E, FF};
  if (arch == "qwen2") {
    l["attn_q.bias"] = {Q};
    l["attn_k.bias"] = {KV};
    l["attn_v.bias"] = {KV};
  }
  if (arch == "qwen3" || arch == "gemma3") {
    l["attn_q_norm.weight"] = {HD};
    l["attn_k_norm.weight"] = {HD};
  }
  if (arch == "gemma2" || arch == "gemma3") {
    l["post_attention_norm.weight"] = {E};
    l["post_ffw_norm.weight"] = {E};
  }
  return l;
}

TEST(MakeModel, EachArchitectureHasLlamaCppTensorsAndMetadata) {
  // Seven layers: gemma3's sixth is its first global one, the seventh local again.
  const ModelShape shape = parse_model_shape("256x7x4x2");
  for (std::string arch : {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"}) {
    SCOPED_TRACE(arch);
    const bool gemma = arch.rfind("gemma", 0) == 0;
    const auto m = make(arch, shape, FileType::F32);
    Layout expected{{"token_embd.weight", {256, 300}}, {"output_norm.weight", {256}}};
    if (!gemma) expected["output.weight"] = {256, 300};  // gemma ties embeddings
    for (uint32_t layer = 0; layer < 7; ++layer) {
      for (const auto& [suffix, dims] : expected_layer(arch)) {
        expected["blk." + std::to_string(layer) + "." + suffix] = dims;
      }
    }
    ASSERT_EQ(m->by_name.size(), expected.size());
    for (const auto& [name, dims] : expected) {
      ASSERT_TRUE(m->by_name.count(name)) << name;
      EXPECT_EQ(m->by_name.at(name)->shape, dims) << name;
      EXPECT_EQ(m->by_name.at(name)->type, TensorType::F32) << name;
    }
    EXPECT_EQ(m->file.get<std::string>("general.architecture"), arch);
    EXPECT_EQ(m->file.get<uint32_t>("general.file_type"), 0u);
    EXPECT_EQ(m->file.get<uint32_t>(arch + ".block_count"), 7u);
    EXPECT_EQ(m->file.get<uint32_t>(arch + ".embedding_length"), 256u);
    EXPECT_EQ(m->file.get<uint32_t>(arch + ".feed_forward_length"), 768u);
    EXPECT_EQ(m->file.get<uint32_t>(arch + ".attention.head_count"), 4u);
    EXPECT_EQ(m->file.get<uint32_t>(arch + ".attention.head_count_kv"), 2u);
    EXPECT_EQ(m->file.get<uint32_t>(arch + ".vocab_size"), 300u);
    EXPECT_EQ(m->file.get_array<std::string>("tokenizer.ggml.tokens").size(), 300u);
    EXPECT_EQ(m->file.get<std::string>("tokenizer.ggml.model"), "llama");
    EXPECT_NE(m->file.get<std::string>("general.name"), "not copied");

    const ModelSpec spec = ModelSpec::from_gguf(m->file);
    EXPECT_EQ(spec.arch_name, arch);
    EXPECT_EQ(spec.n_layer, 7u);
    EXPECT_EQ(spec.n_embd, 256u);
    EXPECT_EQ(spec.n_head, 4u);
    EXPECT_EQ(spec.n_head_kv, 2u);
    EXPECT_EQ(spec.head_dim, 64u);
    EXPECT_EQ(spec.n_ff, 768u);
    EXPECT_EQ(spec.n_vocab, 300u);
    EXPECT_EQ(spec.qkv_bias, arch == "qwen2");
    EXPECT_EQ(spec.qk_norm, arch == "qwen3" || arch == "gemma3");
    EXPECT_EQ(spec.post_norms, gemma);
    EXPECT_EQ(spec.fused_qkv, arch == "phi3");
    EXPECT_EQ(spec.fused_gate_up, arch == "phi3");
    EXPECT_EQ(spec.tied_embeddings, gemma);
    EXPECT_FLOAT_EQ(spec.embed_scale, gemma ? 16.0f : 1.0f);
    EXPECT_EQ(spec.activation, gemma ? Activation::GeluTanh : Activation::SiLU);
    EXPECT_EQ(spec.rope_ordering, arch == "llama" ? RopeOrdering::Normal : RopeOrdering::NeoX);
    if (arch == "gemma2") {
      EXPECT_FLOAT_EQ(spec.attn_softcap, 50.0f);
      EXPECT_FLOAT_EQ(spec.final_softcap, 30.0f);
      EXPECT_EQ(spec.sliding_window, 4096u);
      EXPECT_EQ(spec.layer_is_swa, (std::vector<bool>{1, 0, 1, 0, 1, 0, 1}));
    }
    if (arch == "gemma3") {
      EXPECT_FLOAT_EQ(spec.attn_softcap, 0.0f);
      EXPECT_FLOAT_EQ(spec.final_softcap, 0.0f);
      EXPECT_EQ(spec.sliding_window, 512u);
      EXPECT_EQ(spec.layer_is_swa, (std::vector<bool>{1, 1, 1, 1, 1, 0, 1}));
      EXPECT_FLOAT_EQ(spec.rope_freq_base, 1000000.0f);
      EXPECT_FLOAT_EQ(spec.rope_freq_base_swa, 10000.0f);
      EXPECT_EQ(m->file.get<uint32_t>("gemma3.attention.key_length"), 64u);
    }
    if (arch == "phi3") {
      EXPECT_EQ(spec.sliding_window, 2047u);
      EXPECT_EQ(spec.layer_is_swa, std::vector<bool>(7, true));
    }
    if (arch == "llama" || arch == "qwen2" || arch == "qwen3") {
      EXPECT_EQ(spec.sliding_window, 0u);
      EXPECT_FALSE(m->file.has(arch + ".attention.sliding_window"));
    }
    if (arch == "qwen2" || arch == "qwen3") {
      EXPECT_FLOAT_EQ(spec.rope_freq_base, 1000000.0f);
      EXPECT_FLOAT_EQ(spec.norm_eps, 1e-6f);
    }
  }
}

TEST(MakeModel, QuantMixFollowsLlamaCpp) {
  const ModelShape shape = parse_model_shape("256x8x4x2");
  // llama.cpp's use_more_bits for 8 layers: the first and last eighth plus every third layer.
  const std::set<uint32_t> more_bits{0, 3, 6, 7};
  struct Case {
    FileType file;
    TensorType base, more, output;
  };
  for (const Case& c :
       {Case{FileType::Q4_K_M, TensorType::Q4_K, TensorType::Q6_K, TensorType::Q6_K},
        Case{FileType::Q5_K_M, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q6_K},
        Case{FileType::Q6_K, TensorType::Q6_K, TensorType::Q6_K, TensorType::Q6_K},
        Case{FileType::Q8_0, TensorType::Q8_0, TensorType::Q8_0, TensorType::Q8_0},
        Case{FileType::Q4_0, TensorType::Q4_0, TensorType::Q4_0, TensorType::Q6_K},
        Case{FileType::F16, TensorType::F16, TensorType::F16, TensorType::F16},
        Case{FileType::BF16, TensorType::BF16, TensorType::BF16, TensorType::BF16}}) {
    SCOPED_TRACE(std::string(file_type_name(c.file)));
    const auto m = make("llama", shape, c.file);
    EXPECT_EQ(m->file.get<uint32_t>("general.file_type"), static_cast<uint32_t>(c.file));
    EXPECT_EQ(m->file.has("general.quantization_version"), is_quantized(c.file));
    EXPECT_EQ(m->type_of("output.weight"), c.output);
    EXPECT_EQ(m->type_of("token_embd.weight"), c.base);
    EXPECT_EQ(m->type_of("output_norm.weight"), TensorType::F32);
    for (uint32_t l = 0; l < 8; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      const TensorType v = more_bits.count(l) ? c.more : c.base;
      EXPECT_EQ(m->type_of(b + "attn_v.weight"), v) << l;
      EXPECT_EQ(m->type_of(b + "ffn_down.weight"), v) << l;
      for (const char* s : {"attn_q.weight", "attn_k.weight", "attn_output.weight",
                            "ffn_gate.weight", "ffn_up.weight"}) {
        EXPECT_EQ(m->type_of(b + s), c.base) << b + s;
      }
      EXPECT_EQ(m->type_of(b + "attn_norm.weight"), TensorType::F32);
      EXPECT_EQ(m->type_of(b + "ffn_norm.weight"), TensorType::F32);
    }
  }
}

TEST(MakeModel, QuantMixQ4KSFollowsLlamaCpp) {
  // llama.cpp's imatrix-free Q4_K_S: Q5_K for attn_v of the first 4 layers and ffn_down of the
  // first eighth (16 layers: 2), Q6_K output, Q4_K elsewhere.
  const auto m = make("llama", parse_model_shape("256x16x4x2"), FileType::Q4_K_S);
  EXPECT_EQ(m->file.get<uint32_t>("general.file_type"), 14u);
  EXPECT_EQ(m->type_of("output.weight"), TensorType::Q6_K);
  EXPECT_EQ(m->type_of("token_embd.weight"), TensorType::Q4_K);
  for (uint32_t l = 0; l < 16; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(m->type_of(b + "attn_v.weight"), l < 4 ? TensorType::Q5_K : TensorType::Q4_K) << l;
    EXPECT_EQ(m->type_of(b + "ffn_down.weight"), l < 2 ? TensorType::Q5_K : TensorType::Q4_K) << l;
    EXPECT_EQ(m->type_of(b + "attn_q.weight"), TensorType::Q4_K) << l;
  }
  EXPECT_EQ(file_type_from_name("q4_k_s"), FileType::Q4_K_S);
}

TEST(MakeModel, FusedTiedAndOddRowSizesFollowLlamaCpp) {
  // phi3's fused QKV gets one step more than the base type.
  const auto phi_m = make("phi3", parse_model_shape("256x2x4x2"), FileType::Q4_K_M);
  EXPECT_EQ(phi_m->type_of("blk.0.attn_qkv.weight"), TensorType::Q5_K);
  const auto phi_5 = make("phi3", parse_model_shape("256x2x4x2"), FileType::Q5_K_M);
  EXPECT_EQ(phi_5->type_of("blk.0.attn_qkv.weight"), TensorType::Q6_K);
  // Tied embeddings are quantized like the output projection.
  const auto gemma = make("gemma2", parse_model_shape("256x2x4x2"), FileType::Q4_K_M);
  EXPECT_EQ(gemma->type_of("token_embd.weight"), TensorType::Q6_K);
  EXPECT_EQ(gemma->by_name.count("output.weight"), 0u);
  // Rows of 96 do not fill 256-element super-blocks: Q4_K -> Q5_0, Q6_K -> Q8_0, and the output
  // goes straight to Q8_0. ffn_down's rows (n_ff = 256) still fit.
  const auto odd = make("llama", parse_model_shape("96x2x2x1"), FileType::Q4_K_M);
  EXPECT_EQ(odd->type_of("token_embd.weight"), TensorType::Q5_0);
  EXPECT_EQ(odd->type_of("blk.0.attn_q.weight"), TensorType::Q5_0);
  EXPECT_EQ(odd->type_of("blk.1.attn_v.weight"), TensorType::Q8_0);
  EXPECT_EQ(odd->type_of("blk.0.ffn_down.weight"), TensorType::Q4_K);
  EXPECT_EQ(odd->type_of("blk.1.ffn_down.weight"), TensorType::Q6_K);
  EXPECT_EQ(odd->type_of("output.weight"), TensorType::Q8_0);
  const auto odd5 = make("llama", parse_model_shape("96x2x2x1"), FileType::Q5_K_M);
  EXPECT_EQ(odd5->type_of("blk.0.attn_q.weight"), TensorType::Q5_1);
  // Rows that fit no block at all stay F16.
  const auto tiny_rows = make("llama", parse_model_shape("40x1x2x1"), FileType::Q8_0);
  EXPECT_EQ(tiny_rows->type_of("blk.0.attn_q.weight"), TensorType::F16);
}

TEST(MakeModel, TinyQ4KMMatchesLlamaCppsOwnQuantizationOfTheSameShape) {
  // ref-llama-q4_k_m.gguf is llama.cpp's Q4_K_M of a model with the "tiny" shape and this vocab.
  const auto vocab = gguf::GgufFile::open(kShared / "vocab/ggml-vocab-llama-spm.gguf");
  const auto ref = gguf::GgufFile::open(kShared / "models/ref-llama-q4_k_m.gguf");
  const auto m = make("llama", parse_model_shape("tiny"), FileType::Q4_K_M, 1, 2, &vocab);
  ASSERT_EQ(m->file.tensors().size(), ref.tensors().size());
  for (const auto& t : ref.tensors()) {
    ASSERT_TRUE(m->by_name.count(t.name)) << t.name;
    EXPECT_EQ(m->by_name.at(t.name)->shape, t.shape) << t.name;
    EXPECT_EQ(m->by_name.at(t.name)->type, t.type) << t.name;
  }
  for (const char* key :
       {"llama.block_count", "llama.embedding_length", "llama.feed_forward_length",
        "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count",
        "general.file_type"}) {
    EXPECT_EQ(m->file.get<uint32_t>(key), ref.get<uint32_t>(key)) << key;
  }
  EXPECT_EQ(m->file.get_array<std::string>("tokenizer.ggml.tokens"),
            vocab.get_array<std::string>("tokenizer.ggml.tokens"));
  const ModelSpec ours = ModelSpec::from_gguf(m->file), theirs = ModelSpec::from_gguf(ref);
  EXPECT_EQ(ours.n_vocab, theirs.n_vocab);
  EXPECT_EQ(ours.head_dim, theirs.head_dim);
  EXPECT_FLOAT_EQ(ours.rope_freq_base, theirs.rope_freq_base);
  EXPECT_FLOAT_EQ(ours.norm_eps, theirs.norm_eps);
}

TEST(MakeModel, SameSeedSameBytesWhateverTheThreads) {
  const ModelShape shape = parse_model_shape("256x2x4x2");
  const auto a = make("qwen2", shape, FileType::Q4_K_M, 42, 1);
  const auto b = make("qwen2", shape, FileType::Q4_K_M, 42, 3);
  const auto c = make("qwen2", shape, FileType::Q4_K_M, 43, 3);
  EXPECT_EQ(a->bytes, b->bytes);
  EXPECT_NE(a->bytes, c->bytes);
  EXPECT_EQ(a->bytes.size(), c->bytes.size());
}

TEST(MakeModel, WeightsKeepActivationsInRange) {
  const auto m = make("qwen2", parse_model_shape("256x2x4x2"), FileType::F32);
  for (const auto& [name, info] : m->by_name) {
    const auto v = values(*m, name);
    double sum = 0, sum2 = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x)) << name;
      sum += x;
      sum2 += double{x} * x;
    }
    const double mean = sum / v.size(), sd = std::sqrt(sum2 / v.size() - mean * mean);
    if (name.ends_with("norm.weight")) {
      EXPECT_NEAR(mean, 1.0, 0.02) << name;
      EXPECT_GT(sd, 0.01) << name;
      EXPECT_LT(sd, 0.1) << name;
    } else if (name.ends_with(".bias")) {
      EXPECT_LT(sd, 0.05) << name;
      EXPECT_GT(sd, 0.005) << name;
    } else {
      // Matrices: zero mean, standard deviation 1/sqrt(fan_in) (the row length).
      const double expected = 1.0 / std::sqrt(static_cast<double>(info->shape[0]));
      EXPECT_NEAR(sd, expected, 0.05 * expected) << name;
      EXPECT_NEAR(mean, 0.0, 0.05 * expected) << name;
    }
  }
  // Quantized files hold the same weights, up to the format's error.
  const auto q = make("qwen2", parse_model_shape("256x2x4x2"), FileType::Q8_0);
  const auto exact = values(*m, "blk.1.ffn_up.weight"), rounded = values(*q, "blk.1.ffn_up.weight");
  double err = 0, ref = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    err += (exact[i] - rounded[i]) * (exact[i] - rounded[i]);
    ref += exact[i] * exact[i];
  }
  EXPECT_LT(std::sqrt(err / ref), 0.01);
}

TEST(MakeModel, Llama3RopeFactorsScaleOnlyLowFrequencies) {
  ModelShape shape = parse_model_shape("256x1x2x1");  // head_dim 128, as in Llama 3.1
  shape.rope_freq_base = 500000.0f;
  shape.llama3_rope_factor = 8.0f;
  const auto m = make("llama", shape, FileType::Q4_K_M);
  EXPECT_EQ(m->type_of("rope_freqs.weight"), TensorType::F32);
  const auto f = values(*m, "rope_freqs.weight");
  ASSERT_EQ(f.size(), 64u);
  EXPECT_FLOAT_EQ(f.front(), 1.0f);  // high frequencies are untouched
  EXPECT_FLOAT_EQ(f.back(), 8.0f);   // the lowest are slowed by the full factor
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
  EXPECT_TRUE(ModelSpec::from_gguf(m->file).has_rope_freqs);
}

TEST(MakeModel, ShapesParseAndBadInputIsAClearError) {
  const ModelShape big = parse_model_shape("llama3.1-8b");
  EXPECT_EQ(big.n_embd, 4096u);
  EXPECT_EQ(big.n_layer, 32u);
  EXPECT_EQ(big.n_head_kv, 8u);
  EXPECT_EQ(big.n_ff, 14336u);
  EXPECT_FALSE(big.tied_embeddings);
  EXPECT_TRUE(parse_model_shape("llama3.2-1b").tied_embeddings);
  EXPECT_EQ(parse_model_shape("qwen2.5-0.5b").n_head, 14u);
  const ModelShape custom = parse_model_shape("4096x32x32x8");
  EXPECT_EQ(custom.head_dim, 128u);
  EXPECT_EQ(custom.n_ff, 11008u);  // Llama 2 7B's width
  // A named shape with its layer count replaced: the widths stay.
  const ModelShape moe4 = parse_model_shape("qwen3-30b-a3b:4");
  EXPECT_EQ(moe4.n_layer, 4u);
  EXPECT_EQ(moe4.n_embd, parse_model_shape("qwen3-30b-a3b").n_embd);
  EXPECT_EQ(moe4.n_expert, 128u);
  for (const char* bad : {"12x2", "0x1x1x1", "100x2x3x1", "64x2x4x3", "64x2x4xz", "huge",
                          "llama3.1-8b:0", "llama3.1-8b:x", "64x2x4x2:3", "huge:2"}) {
    EXPECT_THROW(parse_model_shape(bad), std::invalid_argument) << bad;
  }
  try {
    parse_model_shape("64x2x4x3");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("n_head_kv"), std::string::npos) << e.what();
  }
  try {
    make("mamba", parse_model_shape("tiny"), FileType::F16);
    ADD_FAILURE() << "unsupported architecture accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mamba"), std::string::npos) << e.what();
  }
  EXPECT_EQ(file_type_from_name("q4_k_m"), FileType::Q4_K_M);
  EXPECT_FALSE(file_type_from_name("Q3_K_S").has_value());
}

}  // namespace
}  // namespace vkllm::model

namespace vkllm::model {
namespace {

// qwen3moe's test shape as llama.cpp lays it out: an F32 router and stacked [cols, rows, 8]
// experts instead of the dense FFN, the expert keys, and the 8-expert quantization rules (attn_k
// and attn_v Q8_0, attn_output Q5_K at Q4_K_M); ModelSpec reads it back.
TEST(MakeModel, Qwen3MoeHasRouterStackedExpertsAndExpertKeys) {
  const ModelShape shape = parse_model_shape("test");
  const auto m = make("qwen3moe", shape, FileType::Q4_K_M);
  for (uint32_t l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(m->by_name.count(b + "ffn_gate.weight"), 0u);
    EXPECT_EQ(m->by_name.count(b + "ffn_down.weight"), 0u);
    EXPECT_EQ(m->by_name.at(b + "ffn_gate_inp.weight")->shape, (std::vector<uint64_t>{256, 8}));
    EXPECT_EQ(m->type_of(b + "ffn_gate_inp.weight"), TensorType::F32);
    EXPECT_EQ(m->by_name.at(b + "ffn_gate_exps.weight")->shape,
              (std::vector<uint64_t>{256, 256, 8}));
    EXPECT_EQ(m->by_name.at(b + "ffn_up_exps.weight")->shape, (std::vector<uint64_t>{256, 256, 8}));
    EXPECT_EQ(m->by_name.at(b + "ffn_down_exps.weight")->shape,
              (std::vector<uint64_t>{256, 256, 8}));
    EXPECT_EQ(m->type_of(b + "ffn_gate_exps.weight"), TensorType::Q4_K);
    // use_more_bits of 2 layers: the last one.
    EXPECT_EQ(m->type_of(b + "ffn_down_exps.weight"), l == 1 ? TensorType::Q6_K : TensorType::Q4_K);
    EXPECT_EQ(m->type_of(b + "attn_k.weight"), TensorType::Q8_0);
    EXPECT_EQ(m->type_of(b + "attn_v.weight"), TensorType::Q8_0);
    EXPECT_EQ(m->type_of(b + "attn_output.weight"), TensorType::Q5_K);
    EXPECT_EQ(m->type_of(b + "attn_q_norm.weight"), TensorType::F32);
  }
  EXPECT_EQ(m->file.get<uint32_t>("qwen3moe.expert_count"), 8u);
  EXPECT_EQ(m->file.get<uint32_t>("qwen3moe.expert_used_count"), 2u);
  EXPECT_EQ(m->file.get<uint32_t>("qwen3moe.expert_feed_forward_length"), 256u);
  const ModelSpec spec = ModelSpec::from_gguf(m->file);
  EXPECT_EQ(spec.arch, Arch::Qwen3Moe);
  EXPECT_TRUE(spec.is_moe());
  EXPECT_EQ(spec.n_expert, 8u);
  EXPECT_EQ(spec.n_expert_used, 2u);
  EXPECT_EQ(spec.n_ff_exp, 256u);
  EXPECT_TRUE(spec.moe_norm_weights);
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_FALSE(spec.fused_gate_up);
  EXPECT_EQ(spec.rope_ordering, RopeOrdering::NeoX);
}

// gpt-oss's test shape as llama.cpp's openai-moe loader wants it, and what ModelSpec makes of it:
// the window on even layers, biases and sinks F32, post_attention_norm before the experts, the
// top-k softmax router, the clamped SwiGLU and YaRN.
TEST(MakeModel, GptOssHasSinksBiasesAlternatingWindowAndYarn) {
  const auto m = make("gpt-oss", parse_model_shape("test"), FileType::MXFP4_MOE);
  for (uint32_t l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(m->by_name.at(b + "attn_sinks.weight")->shape, (std::vector<uint64_t>{4}));
    EXPECT_EQ(m->by_name.at(b + "ffn_gate_exps.bias")->shape, (std::vector<uint64_t>{256, 8}));
    EXPECT_EQ(m->by_name.at(b + "ffn_down_exps.bias")->shape, (std::vector<uint64_t>{256, 8}));
    for (const char* f : {"attn_sinks.weight", "attn_output.bias", "attn_q.bias",
                          "ffn_gate_inp.bias", "ffn_up_exps.bias", "post_attention_norm.weight"})
      EXPECT_EQ(m->type_of(b + f), TensorType::F32) << b + f;
    EXPECT_EQ(m->type_of(b + "ffn_up_exps.weight"), TensorType::MXFP4);
    EXPECT_EQ(m->by_name.count(b + "ffn_norm.weight"), 0u);
  }
  EXPECT_EQ(m->file.get<std::string>("gpt-oss.rope.scaling.type"), "yarn");
  const ModelSpec spec = ModelSpec::from_gguf(m->file);
  EXPECT_EQ(spec.arch, Arch::GptOss);
  EXPECT_EQ(spec.sliding_window, 16u);
  EXPECT_EQ(spec.layer_is_swa, (std::vector<bool>{true, false}));
  EXPECT_TRUE(spec.attn_sinks && spec.attn_out_bias && spec.qkv_bias && spec.moe_biases);
  EXPECT_TRUE(spec.ffn_norm_is_post_attn);
  EXPECT_EQ(spec.moe_gating, MoeGating::SoftmaxTopK);
  EXPECT_FALSE(spec.moe_norm_weights);
  EXPECT_EQ(spec.activation, Activation::SwigluOai);
  EXPECT_EQ(spec.yarn_freq_factors.size(), 32u);
  EXPECT_GT(spec.yarn_mscale, 1.0f);
  EXPECT_FALSE(spec.tied_embeddings);
}

// llama-quantize's MXFP4_MOE (what gpt-oss publishes): the stacked experts MXFP4, every other
// matrix Q8_0 (the output and the embeddings too), norms and the router F32.
TEST(MakeModel, Mxfp4MoeGivesExpertsMxfp4AndTheRestQ8_0) {
  const auto m = make("qwen3moe", parse_model_shape("test"), FileType::MXFP4_MOE);
  EXPECT_EQ(m->file.get<uint32_t>("general.file_type"), 38u);
  EXPECT_EQ(m->type_of("output.weight"), TensorType::Q8_0);
  EXPECT_EQ(m->type_of("token_embd.weight"), TensorType::Q8_0);
  for (uint32_t l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    for (const char* e : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"})
      EXPECT_EQ(m->type_of(b + e), TensorType::MXFP4) << b + e;
    for (const char* d : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"})
      EXPECT_EQ(m->type_of(b + d), TensorType::Q8_0) << b + d;
    EXPECT_EQ(m->type_of(b + "ffn_gate_inp.weight"), TensorType::F32);
    EXPECT_EQ(m->type_of(b + "attn_q_norm.weight"), TensorType::F32);
  }
  EXPECT_EQ(file_type_from_name("mxfp4_moe"), FileType::MXFP4_MOE);
  EXPECT_EQ(file_type_from_name("MXFP4"), FileType::MXFP4_MOE);
  EXPECT_EQ(file_type_name(FileType::MXFP4_MOE), "MXFP4_MOE");
  // A dense architecture has no experts: all Q8_0.
  const auto dense = make("llama", parse_model_shape("256x2x4x2"), FileType::MXFP4_MOE);
  EXPECT_EQ(dense->type_of("blk.0.ffn_down.weight"), TensorType::Q8_0);
}

TEST(ModelSpecMoe, MissingExpertKeysOrTensorsAreClearErrors) {
  const auto m = make("qwen3moe", parse_model_shape("test"), FileType::F32);
  gguf::GgufWriter w;
  w.copy_metadata(m->file, "");
  w.set_u32("qwen3moe.expert_used_count", 9);
  w.add_tensor("token_embd.weight", TensorType::F32, {256, 300},
               std::vector<uint8_t>(256 * 300 * 4));
  const auto bytes = w.serialize();
  try {
    ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
    FAIL() << "9 of 8 experts accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("expert_used_count"), std::string::npos) << e.what();
  }
  gguf::GgufWriter w2;
  w2.copy_metadata(m->file, "");
  w2.add_tensor("token_embd.weight", TensorType::F32, {256, 300},
                std::vector<uint8_t>(256 * 300 * 4));
  const auto bytes2 = w2.serialize();
  try {
    ModelSpec::from_gguf(gguf::GgufFile::parse(bytes2));
    FAIL() << "a qwen3moe model without experts loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ffn_gate_inp"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkllm::model
