// LFM2 as ModelSpec reads make-model's fixture of it: the layers whose per-layer head_count_kv is
// 0 are short convolutions with a state of (L-1) x n_embd floats, the others attention layers with
// Q/K norms and NeoX RoPE; files whose short-convolution tensors or metadata are wrong fail at
// load naming what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {
namespace {

std::vector<uint8_t> lfm2_bytes(uint32_t n_layer,
                                const std::function<void(gguf::GgufWriter&)>& edit = {}) {
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/vocab/ggml-vocab-llama-spm.gguf")
          .string());
  MakeModelOptions o;
  o.arch = "lfm2";
  o.shape = parse_model_shape("test");
  o.shape.n_layer = n_layer;
  o.threads = 1;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  if (edit) edit(w);
  return w.serialize();
}

TEST(HybridSpec, Lfm2ShortConvolutionLayersFromThePerLayerKvHeads) {
  const auto bytes = lfm2_bytes(4);
  const ModelSpec s = ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(s.arch, Arch::Lfm2);
  EXPECT_EQ(s.layer_is_recurrent, (std::vector<bool>{true, false, true, false}));
  EXPECT_TRUE(s.has_recurrent_state());
  EXPECT_EQ(s.n_kv_layers(), 2u);  // only attention layers own K/V in the paged cache
  EXPECT_FALSE(s.owns_kv(0));
  EXPECT_TRUE(s.owns_kv(1));
  EXPECT_EQ(s.n_head_kv, 2u);
  EXPECT_EQ(s.shortconv_l_cache, 3u);
  EXPECT_EQ(s.recurrent_state_floats(), (std::vector<uint64_t>{2 * 256, 0, 2 * 256, 0}));
  EXPECT_TRUE(s.qk_norm);
  EXPECT_EQ(s.rope_ordering, RopeOrdering::NeoX);
  EXPECT_TRUE(s.tied_embeddings);
  EXPECT_EQ(s.qkv_act_width(), 3u * 256u);  // in_proj's B|C|X is wider than Q|K|V

  // The published 16-layer pattern: attention at 2, 5, 8, 10, 12 and 14.
  const auto b16 = lfm2_bytes(16);
  const ModelSpec s16 = ModelSpec::from_gguf(gguf::GgufFile::parse(b16));
  std::vector<bool> want(16, true);
  for (uint32_t l : {2, 5, 8, 10, 12, 14}) want[l] = false;
  EXPECT_EQ(s16.layer_is_recurrent, want);
  EXPECT_EQ(s16.n_kv_layers(), 6u);

  // A transformer has no recurrent state.
  EXPECT_FALSE(ModelSpec{}.has_recurrent_state());
}

TEST(HybridSpec, Lfm2FilesThatDoNotFitFailNamingTheProblem) {
  auto fails_with = [](const std::vector<uint8_t>& bytes, const std::string& what) {
    try {
      ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
      ADD_FAILURE() << "loaded; expected an error naming " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails_with(lfm2_bytes(2, [](gguf::GgufWriter& w) { w.set_u32("lfm2.shortconv.l_cache", 9); }),
             "shortconv.l_cache 9");
  fails_with(lfm2_bytes(2,
                        [](gguf::GgufWriter& w) {
                          w.set_i32s("lfm2.attention.head_count_kv", {0, 2, 2});
                        }),
             "3 entries for 2 layers");
  // A kernel length the conv tensors do not have.
  fails_with(lfm2_bytes(2, [](gguf::GgufWriter& w) { w.set_u32("lfm2.shortconv.l_cache", 4); }),
             "F32 [4, 256] tensor blk.0.shortconv.conv.weight");
  // No attention layer at all.
  fails_with(lfm2_bytes(2,
                        [](gguf::GgufWriter& w) {
                          w.set_i32s("lfm2.attention.head_count_kv", {0, 0});
                        }),
             "kv heads 0");
}

}  // namespace
}  // namespace vkllm::model
