// The families of issue 37 as ModelSpec reads make-model's fixtures of them: mistral3's YaRN
// (per-pair divisors from 1 for the fastest-turning pairs to the factor for the slowest, no
// magnitude change with Ministral's log multiplier of 1, one without it) and attention
// temperature (its floor the original context); gemma-embedding as a non-causal encoder of Gemma 3
// layers with its dense projections. Unsupported combinations fail at load naming themselves.
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
  const auto bytes = w.serialize();
  return ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
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

}  // namespace
}  // namespace vkllm::model
