// The families of issue 37 as ModelSpec reads make-model's fixtures of them: mistral3's YaRN
// (per-pair divisors from 1 for the fastest-turning pairs to the factor for the slowest, no
// magnitude change with Ministral's log multiplier of 1, one without it) and attention
// temperature (its floor the original context); gemma-embedding as a non-causal encoder of Gemma 3
// layers with its dense projections; llama4's NoPE, chunked and MoE layers. Unsupported
// combinations fail at load naming themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {
namespace {

ModelSpec spec_of(const std::string& arch,
                  const std::function<void(gguf::GgufWriter&)>& edit = {}) {
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/vocab/ggml-vocab-llama-spm.gguf")
          .string());
  MakeModelOptions o;
  o.arch = arch;
  o.shape = parse_model_shape("test");
  o.shape.n_layer = 7;
  o.threads = 1;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  if (edit) edit(w);
  // The metadata and tensor table are all a spec reads: no tensor data is generated.
  const std::vector<uint8_t> header = w.serialize_header();
  return ModelSpec::from_gguf(gguf::GgufFile::parse_header(header, w.file_size()));
}

TEST(FamilySpec, Mistral3ReadsYarnAndTheAttentionTemperature) {
  const ModelSpec s = spec_of("mistral3");
  EXPECT_EQ(s.arch, Arch::Mistral3);
  EXPECT_EQ(s.rope_ordering, RopeOrdering::Normal);
  ASSERT_EQ(s.yarn_freq_factors.size(), s.head_dim / 2);
  EXPECT_TRUE(s.has_rope_freqs);
  EXPECT_FLOAT_EQ(s.rope_freq_scale, 1.0f);  // in the divisors
  // Pair 0 keeps its frequency (ramp 1), the slow pairs are interpolated by the factor 16.
  EXPECT_FLOAT_EQ(s.yarn_freq_factors.front(), 1.0f);
  EXPECT_FLOAT_EQ(s.yarn_freq_factors.back(), 16.0f);
  for (size_t i = 1; i < s.yarn_freq_factors.size(); ++i)
    EXPECT_GE(s.yarn_freq_factors[i], s.yarn_freq_factors[i - 1]) << i;
  EXPECT_FLOAT_EQ(s.yarn_mscale, 1.0f);  // log multiplier 1: mscale(16, 1) / mscale(16, 1)
  EXPECT_FLOAT_EQ(s.attn_scale, 1.0f / std::sqrt(float(s.head_dim)));
  EXPECT_FLOAT_EQ(s.attn_temp_scale, 0.1f);
  EXPECT_EQ(s.attn_temp_floor, 2048u / 16);

  // Without the log multiplier the magnitude 1 + 0.1 ln 16 multiplies Q and K alike.
  const ModelSpec m = spec_of("mistral3", [](gguf::GgufWriter& w) {
    w.set_f32("mistral3.rope.scaling.yarn_log_multiplier", 0.0f);
  });
  const float mscale = 1.0f + 0.1f * std::log(16.0f);
  EXPECT_FLOAT_EQ(m.yarn_mscale, mscale);
  EXPECT_FLOAT_EQ(m.attn_scale, mscale * mscale / std::sqrt(float(m.head_dim)));
}

TEST(FamilySpec, YarnOnPartOfEachHeadFailsNamingIt) {
  try {
    spec_of("mistral3",
            [](gguf::GgufWriter& w) { w.set_u32("mistral3.rope.dimension_count", 32); });
    FAIL() << "partial YaRN accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("YaRN"), std::string::npos) << e.what();
  }
}

TEST(FamilySpec, GemmaEmbeddingIsANonCausalEncoderWithDenseProjections) {
  const ModelSpec s = spec_of("gemma-embedding");
  EXPECT_EQ(s.arch, Arch::GemmaEmbedding);
  EXPECT_TRUE(s.is_encoder());
  EXPECT_TRUE(s.decoder_layers());
  EXPECT_FALSE(s.causal_attn);
  EXPECT_TRUE(s.has_pooling_type);
  EXPECT_EQ(s.pooling, Pooling::Mean);
  EXPECT_TRUE(s.qk_norm && s.post_norms && s.tied_embeddings);
  EXPECT_EQ(s.sliding_window, 16u);
  // Five local layers per global one.
  const std::vector<bool> swa = {true, true, true, true, true, false, true};
  EXPECT_EQ(s.layer_is_swa, swa);
  EXPECT_EQ(s.n_dense, 4 * s.n_embd);
  EXPECT_EQ(s.n_embd_out(), s.n_embd);
  EXPECT_EQ(s.encoder_rows_width(), s.n_dense);  // not the vocabulary
  EXPECT_FLOAT_EQ(s.embed_scale, std::sqrt(float(s.n_embd)));
}

// Llama 4 (llama4_spec.h) on make-model's test shape of 7 layers: iRoPE's NoPE layer 3 (no
// chunks, the query temperature from position 8191 on) between chunked RoPE layers with Q/K norms,
// MoE on every 2nd layer (1, 3, 5: sigmoid top-k, weights before the experts, a shared expert as
// wide as a routed one), dense FFNs between. A sliding_window of 0 turns chunks off as llama.cpp
// does (only the last layer then skips RoPE).
TEST(FamilySpec, Llama4InterleavesNopeAndMoeLayers) {
  const ModelSpec s = spec_of("llama4");
  EXPECT_EQ(s.arch, Arch::Llama4);
  ASSERT_EQ(s.n_layer, 7u);
  const std::vector<bool> nope{false, false, false, true, false, false, false};
  EXPECT_EQ(s.layer_nope, nope);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    EXPECT_EQ(s.is_nope(l), nope[l]) << l;
    EXPECT_EQ(s.layer_is_swa[l], !nope[l]) << l;
    EXPECT_EQ(s.is_moe_layer(l), l % 2 == 1) << l;
  }
  EXPECT_EQ(s.attn_chunk, 8192u);
  EXPECT_TRUE(s.kq_plain_norm);  // every expert count but Maverick's 128
  EXPECT_FALSE(s.qk_norm);       // no norm weights
  EXPECT_FLOAT_EQ(s.attn_temp_scale, 0.1f);
  EXPECT_EQ(s.attn_temp_floor, 8192u);
  EXPECT_EQ(s.attn_temp_offset, 1u);
  EXPECT_EQ(s.moe_gating, MoeGating::Sigmoid);
  EXPECT_TRUE(s.moe_weight_before_ffn);
  EXPECT_FALSE(s.moe_norm_weights);
  EXPECT_EQ(s.n_expert, 8u);
  EXPECT_EQ(s.n_ff_shexp, s.n_ff_exp);
  EXPECT_FALSE(s.moe_shexp_gated);
  EXPECT_EQ(s.rope_ordering, RopeOrdering::Normal);
  EXPECT_FLOAT_EQ(s.rope_freq_base_swa, s.rope_freq_base);

  const ModelSpec plain = spec_of(
      "llama4", [](gguf::GgufWriter& w) { w.set_u32("llama4.attention.sliding_window", 0); });
  EXPECT_EQ(plain.attn_chunk, 0u);
  EXPECT_FLOAT_EQ(plain.attn_temp_scale, 0.0f);
  for (uint32_t l = 0; l < plain.n_layer; ++l) {
    EXPECT_EQ(plain.is_nope(l), l == 6) << l;
    EXPECT_FALSE(plain.layer_is_swa[l]) << l;
  }
}

// make-model's real Llama 4 shape (for GPU runs, written with :LAYERS): Scout's every-layer MoE of
// 16 experts, one per token, Llama 3-style rope_freqs. Only the header is made.
TEST(FamilySpec, Llama4ScoutShapeHasScoutsLayers) {
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/vocab/ggml-vocab-llama-spm.gguf")
          .string());
  MakeModelOptions o;
  o.arch = "llama4";
  o.shape = parse_model_shape("llama4-scout");
  o.file_type = FileType::Q4_K_M;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  const std::vector<uint8_t> header = w.serialize_header();
  const ModelSpec s = ModelSpec::from_gguf(gguf::GgufFile::parse_header(header, w.file_size()));
  EXPECT_EQ(s.n_layer, 48u);
  EXPECT_EQ(s.n_embd, 5120u);
  EXPECT_EQ(s.head_dim, 128u);
  EXPECT_EQ(s.n_expert, 16u);
  EXPECT_EQ(s.n_expert_used, 1u);
  EXPECT_EQ(s.n_ff_exp, 8192u);
  EXPECT_EQ(s.n_ff_shexp, 8192u);
  for (uint32_t l = 0; l < s.n_layer; ++l) EXPECT_TRUE(s.is_moe_layer(l)) << l;
  EXPECT_TRUE(s.kq_plain_norm);
  EXPECT_TRUE(s.has_rope_freqs);
  EXPECT_EQ(s.attn_chunk, 8192u);
}

}  // namespace
}  // namespace vkllm::model
