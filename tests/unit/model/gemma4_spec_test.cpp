// Gemma 4 as ModelSpec reads make-model's fixtures of it (gemma4_maker.h): per-layer head sizes,
// K/V head counts, rotated dimensions and FFN widths of its local and global layers, V = K where
// a layer has no attn_v, KV sharing, per-layer inputs and output scales, and its MoE variant;
// a window pattern that leaves no local and global layer to share KV from fails naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {
namespace {

ModelSpec gemma4_spec(bool moe, const std::function<void(gguf::GgufWriter&)>& edit = {}) {
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/vocab/ggml-vocab-llama-spm.gguf")
          .string());
  MakeModelOptions o;
  o.arch = "gemma4";
  o.shape = parse_model_shape(moe ? "test-moe" : "test-swa");
  o.threads = 1;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  if (edit) edit(w);
  // The metadata and tensor table are all a spec reads: no tensor data is generated.
  const std::vector<uint8_t> header = w.serialize_header();
  return ModelSpec::from_gguf(gguf::GgufFile::parse_header(header, w.file_size()));
}

TEST(Gemma4Spec, LocalAndGlobalLayersHaveTheirOwnGeometry) {
  const ModelSpec s = gemma4_spec(false);
  EXPECT_EQ(s.arch, Arch::Gemma4);
  EXPECT_TRUE(s.is_gemma4());
  EXPECT_FALSE(s.is_gemma3n());
  ASSERT_EQ(s.n_layer, 7u);
  const std::vector<bool> swa{true, true, false, true, true, false, false};
  EXPECT_EQ(s.layer_is_swa, swa);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    EXPECT_EQ(s.head_dim_of(l), swa[l] ? 64u : 128u) << l;
    EXPECT_EQ(s.n_head_kv_of(l), swa[l] ? 2u : 1u) << l;
    EXPECT_EQ(s.rope_dims_of(l), swa[l] ? 64u : 128u) << l;
    EXPECT_EQ(s.n_ff_of(l), l < 3 ? 768u : 1536u) << l;  // shared layers: double-wide FFNs
    EXPECT_TRUE(s.layer_out_scaled[l]) << l;
  }
  // The scalars size the activations: the largest of each.
  EXPECT_EQ(s.head_dim, 128u);
  EXPECT_EQ(s.n_head_kv, 2u);
  EXPECT_EQ(s.n_ff, 1536u);
  // Global layers without attn_v take V from K; layers 3-6 share layers 1's and 2's caches.
  EXPECT_FALSE(s.layer_v_is_k[1]);
  EXPECT_TRUE(s.layer_v_is_k[2]);
  EXPECT_EQ(s.n_layer_kv, 3u);
  EXPECT_EQ(s.n_kv_layers(), 3u);
  EXPECT_EQ(s.kv_layer(4), 1u);
  EXPECT_EQ(s.kv_layer(6), 2u);
  EXPECT_TRUE(s.has_rope_freqs);
  EXPECT_FLOAT_EQ(s.attn_scale, 1.0f);
  EXPECT_FLOAT_EQ(s.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(s.rope_freq_base, 1000000.0f);
  EXPECT_FLOAT_EQ(s.rope_freq_base_swa, 10000.0f);
  EXPECT_EQ(s.n_embd_altup, 64u);
  EXPECT_TRUE(s.has_per_layer_inputs());
  EXPECT_FALSE(s.is_moe());
}

TEST(Gemma4Spec, TheMoeVariantReadsItsExperts) {
  const ModelSpec s = gemma4_spec(true);
  EXPECT_TRUE(s.is_moe());
  EXPECT_EQ(s.n_expert, 8u);
  EXPECT_EQ(s.n_expert_used, 2u);
  EXPECT_EQ(s.n_ff_exp, 256u);
  EXPECT_TRUE(s.moe_norm_weights);
  EXPECT_TRUE(s.moe_down_scales);
  EXPECT_EQ(s.moe_gating, MoeGating::Softmax);
}

TEST(Gemma4Spec, SharingWithoutALocalAndAGlobalLenderFailsNamingIt) {
  try {
    // Four layers with caches: layer 3 (local) would lend to the global ones.
    gemma4_spec(false,
                [](gguf::GgufWriter& w) { w.set_u32("gemma4.attention.shared_kv_layers", 3); });
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("shares the caches"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkllm::model
