// Which layers own K/V in the paged cache (ModelSpec::owns_kv, the rule both backends allocate by
// and the scheduler's KV estimate counts with) for a Gemma 3n as ModelSpec reads make-model's
// model of it: the first 20 layers own a cache, the later ones read the last local (18) or
// global (19) layer's. LFM2's recurrent layers are hybrid_spec_test.cpp's.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {
namespace {

TEST(Gemma3nKvLayers, SharedLayersOwnNoCacheAndReadTheLastOfTheirKind) {
  // The families fixture's 1024-token vocabulary: the per-layer table is n_layer x 256 a token.
  const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/reference/families/spm-1k-vocab.gguf")
          .string());
  MakeModelOptions o;
  o.arch = "gemma3n";
  o.shape = parse_model_shape("test-deep");
  o.threads = 1;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  const std::vector<uint8_t> bytes = w.serialize();
  const ModelSpec s = ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));

  ASSERT_TRUE(s.is_gemma3n());
  ASSERT_EQ(s.n_layer, 25u);
  EXPECT_FALSE(s.has_recurrent_state());
  EXPECT_EQ(s.n_layer_kv, 20u);
  EXPECT_EQ(s.n_kv_layers(), 20u);
  // Layer 18 is local and 19 global, the two caches the shared layers read.
  EXPECT_TRUE(s.layer_is_swa[18]);
  EXPECT_FALSE(s.layer_is_swa[19]);
  bool local = false, global = false;
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    SCOPED_TRACE(l);
    if (l < 20) {
      EXPECT_TRUE(s.owns_kv(l));
      EXPECT_EQ(s.kv_layer(l), l);
    } else {
      EXPECT_FALSE(s.owns_kv(l));
      EXPECT_EQ(s.kv_layer(l), s.layer_is_swa[l] ? 18u : 19u);
      (s.layer_is_swa[l] ? local : global) = true;
    }
  }
  EXPECT_TRUE(local && global) << "the shared layers are of both kinds";
}

TEST(Gemma3nKvLayers, WithoutSharingOrRecurrenceEveryLayerOwnsItsCache) {
  ModelSpec s;
  s.n_layer = 3;
  s.layer_is_swa.assign(3, false);
  EXPECT_EQ(s.n_kv_layers(), 3u);
  for (uint32_t l = 0; l < 3; ++l) {
    EXPECT_TRUE(s.owns_kv(l));
    EXPECT_EQ(s.kv_layer(l), l);
  }
}

}  // namespace
}  // namespace vkllm::model
