// Embedding models: make-model's bert, nomic-bert, bert-rerank and qwen3-embedding fixtures carry
// the tensor names, shapes and metadata llama.cpp's convert script writes, and ModelSpec reads
// them (pooling, causality, LayerNorm epsilon, token types, rank head); bad metadata fails at
// load naming what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <utility>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"
#include "engine/model/quant_mix.h"

namespace vkllm::model {
namespace {

using gguf::TensorType;

const gguf::GgufFile& bert_vocab() {
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/vocab/ggml-vocab-bert-bge.gguf")
          .string());
  return vocab;
}

std::vector<uint8_t> make(const std::string& arch, FileType type = FileType::F16,
                          void (*edit)(gguf::GgufWriter&) = nullptr) {
  MakeModelOptions o;
  o.arch = arch;
  o.shape = parse_model_shape("64x2x2x2");
  o.shape.n_ff = 256;
  o.file_type = type;
  o.threads = 1;
  gguf::GgufWriter w;
  build_random_model(o, bert_vocab(), w);
  if (edit) edit(w);
  return w.serialize();
}

std::set<std::string> names(const gguf::GgufFile& f) {
  std::set<std::string> out;
  for (const auto& t : f.tensors()) out.insert(t.name);
  return out;
}

TEST(EncoderFixtures, BertHasLlamaCppsNamesAndMetadata) {
  const auto bytes = make("bert");
  const auto f = gguf::GgufFile::parse(bytes);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "bert");
  EXPECT_EQ(f.get<bool>("bert.attention.causal"), false);
  EXPECT_EQ(f.get<uint32_t>("bert.pooling_type"), 1u);
  EXPECT_FLOAT_EQ(f.get<float>("bert.attention.layer_norm_epsilon"), 1e-12f);
  EXPECT_EQ(f.get<uint32_t>("bert.context_length"), 512u);
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.token_type_count"), 2u);
  EXPECT_EQ(f.get<std::string>("tokenizer.ggml.model"), "bert");
  EXPECT_FALSE(f.has("bert.attention.head_count_kv"));
  const std::set<std::string> want = {
      "token_embd.weight",      "token_types.weight",   "position_embd.weight",
      "token_embd_norm.weight", "token_embd_norm.bias",
  };
  const auto got = names(f);
  for (const auto& n : want) EXPECT_TRUE(got.count(n)) << n;
  for (const char* s :
       {"attn_q.weight", "attn_q.bias", "attn_k.weight", "attn_k.bias", "attn_v.weight",
        "attn_v.bias", "attn_output.weight", "attn_output.bias", "attn_output_norm.weight",
        "attn_output_norm.bias", "ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias",
        "layer_output_norm.weight", "layer_output_norm.bias"}) {
    EXPECT_TRUE(got.count(std::string("blk.1.") + s)) << s;
  }
  EXPECT_EQ(got.size(), 5u + 2 * 16);  // no gate, no output, no classification head
  const auto* types = f.find_tensor("token_types.weight");
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->shape, (std::vector<uint64_t>{64, 2}));
  EXPECT_EQ(f.find_tensor("position_embd.weight")->shape, (std::vector<uint64_t>{64, 512}));

  const ModelSpec s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.arch, Arch::Bert);
  EXPECT_TRUE(s.is_encoder());
  EXPECT_FALSE(s.causal_attn);
  EXPECT_EQ(s.pooling, Pooling::Mean);
  EXPECT_TRUE(s.has_pooling_type);
  EXPECT_FALSE(s.rope);
  EXPECT_TRUE(s.position_embd);
  EXPECT_FALSE(s.gated_ffn);
  EXPECT_EQ(s.n_token_types, 2u);
  EXPECT_EQ(s.n_head_kv, s.n_head);
  EXPECT_FLOAT_EQ(s.norm_eps, 1e-12f);
  EXPECT_EQ(s.n_vocab, 30522u);
  EXPECT_EQ(s.n_embd_out(), 64u);
}

TEST(EncoderFixtures, NomicBertIsRotaryAndGated) {
  const auto bytes = make("nomic-bert");
  const auto f = gguf::GgufFile::parse(bytes);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "nomic-bert");
  EXPECT_FLOAT_EQ(f.get<float>("nomic-bert.rope.freq_base"), 1000.0f);
  EXPECT_EQ(f.get<uint32_t>("nomic-bert.context_length"), 2048u);
  const auto got = names(f);
  EXPECT_TRUE(got.count("blk.0.attn_qkv.weight"));
  EXPECT_TRUE(got.count("blk.0.ffn_gate.weight"));
  EXPECT_FALSE(got.count("position_embd.weight"));
  EXPECT_FALSE(got.count("blk.0.attn_output.bias"));
  EXPECT_EQ(f.find_tensor("blk.0.attn_qkv.weight")->shape, (std::vector<uint64_t>{64, 192}));

  const ModelSpec s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.arch, Arch::NomicBert);
  EXPECT_TRUE(s.rope);
  EXPECT_EQ(s.rope_ordering, RopeOrdering::NeoX);
  EXPECT_FLOAT_EQ(s.rope_freq_base, 1000.0f);
  EXPECT_TRUE(s.fused_qkv);
  EXPECT_TRUE(s.gated_ffn);
  EXPECT_FALSE(s.position_embd);
  EXPECT_EQ(s.pooling, Pooling::Mean);
}

TEST(EncoderFixtures, RerankHasTheClassificationHead) {
  const auto bytes = make("bert-rerank");
  const auto f = gguf::GgufFile::parse(bytes);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "bert");
  EXPECT_EQ(f.get<uint32_t>("bert.pooling_type"), 4u);
  EXPECT_EQ(f.find_tensor("cls.weight")->shape, (std::vector<uint64_t>{64, 64}));
  EXPECT_EQ(f.find_tensor("cls.bias")->shape, (std::vector<uint64_t>{64}));
  EXPECT_EQ(f.find_tensor("cls.output.weight")->shape, (std::vector<uint64_t>{64, 1}));
  EXPECT_EQ(f.find_tensor("cls.output.bias")->shape, (std::vector<uint64_t>{1}));
  const ModelSpec s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.pooling, Pooling::Rank);
  EXPECT_TRUE(s.cls_dense);
  EXPECT_EQ(s.n_cls_out, 1u);
  EXPECT_EQ(s.n_embd_out(), 1u);
}

// F32 in every file type, as llama.cpp's converter writes them and llama-quantize keeps them
// (its CPU build rejects them in F16); the other weights follow the file type.
TEST(EncoderFixtures, PositionAndTypeEmbeddingsAreF32InEveryFileType) {
  for (const auto& [file, weights] :
       {std::pair{FileType::F16, TensorType::F16}, std::pair{FileType::Q8_0, TensorType::Q8_0}}) {
    SCOPED_TRACE(std::string(file_type_name(file)));
    const auto bytes = make("bert", file);
    const auto f = gguf::GgufFile::parse(bytes);
    EXPECT_EQ(f.find_tensor("position_embd.weight")->type, TensorType::F32);
    EXPECT_EQ(f.find_tensor("token_types.weight")->type, TensorType::F32);
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type, weights);
    EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, weights);
    EXPECT_EQ(f.find_tensor("blk.0.attn_q.bias")->type, TensorType::F32);
  }
}

TEST(EncoderFixtures, Qwen3EmbeddingIsCausalWithLastTokenPooling) {
  const auto bytes = make("qwen3-embedding");
  const auto f = gguf::GgufFile::parse(bytes);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "qwen3");
  const ModelSpec s = ModelSpec::from_gguf(f);
  EXPECT_EQ(s.pooling, Pooling::Last);
  EXPECT_TRUE(s.causal_attn);
  EXPECT_FALSE(s.is_encoder());
  // A generative model has no pooling type: Ollama's "completion" rather than "embedding".
  const auto plain = make("qwen3");
  EXPECT_FALSE(ModelSpec::from_gguf(gguf::GgufFile::parse(plain)).has_pooling_type);
}

void expect_load_error(const std::vector<uint8_t>& bytes, const std::string& what) {
  try {
    ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
    ADD_FAILURE() << "loaded; expected an error mentioning " << what;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(EncoderFixtures, BadMetadataFailsNamingIt) {
  expect_load_error(
      make("bert", FileType::F16, [](gguf::GgufWriter& w) { w.set_u32("bert.pooling_type", 9); }),
      "pooling_type 9");
  expect_load_error(
      make("bert", FileType::F16, [](gguf::GgufWriter& w) { w.set_u32("bert.pooling_type", 4); }),
      "rank pooling needs a classification head");
}

}  // namespace
}  // namespace vkllm::model
