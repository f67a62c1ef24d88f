// Qwen3.5 as ModelSpec reads make-model's fixture of it: Gated DeltaNet layers with a full
// attention layer every full_attention_interval layers (or where attention.recurrent_layers
// says), the DeltaNet sizes from the ssm.* keys and a state of the conv's last inputs plus one
// delta-rule matrix per value head; gated attention with Q/K norms and partial NeoX RoPE. Files
// that do not fit fail at load naming what is wrong.
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

std::vector<uint8_t> qwen35_bytes(uint32_t n_layer,
                                  const std::function<void(gguf::GgufWriter&)>& edit = {},
                                  const std::string& arch = "qwen35") {
  // A 1024-token vocabulary keeps the embeddings (and the test) small.
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/reference/families/spm-1k-vocab.gguf")
          .string());
  MakeModelOptions o;
  o.arch = arch;
  o.shape = parse_model_shape("test");
  o.shape.n_layer = n_layer;
  o.threads = 1;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  if (edit) edit(w);
  return w.serialize();
}

TEST(Qwen35Spec, DeltaNetLayersStateAndGatedAttentionFromTheFile) {
  const auto bytes = qwen35_bytes(8);
  const ModelSpec s = ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(s.arch, Arch::Qwen35);
  // Every fourth layer attends; the others are DeltaNet layers.
  for (uint32_t l = 0; l < 8; ++l) EXPECT_EQ(s.is_recurrent(l), l != 3 && l != 7) << l;
  EXPECT_EQ(s.n_kv_layers(), 2u);
  // test's 4 heads of 64: 4 key and 8 value heads of 64, a conv of 4 over 2 x 256 + 512 channels.
  EXPECT_EQ(s.ssm_n_k_heads, 4u);
  EXPECT_EQ(s.ssm_n_v_heads, 8u);
  EXPECT_EQ(s.ssm_head_dim, 64u);
  EXPECT_EQ(s.ssm_conv_kernel, 4u);
  EXPECT_EQ(s.ssm_conv_channels(), 1024u);
  const std::vector<uint64_t> floats = s.recurrent_state_floats();
  EXPECT_EQ(floats[0], 3u * 1024 + 8u * 64 * 64);
  EXPECT_EQ(floats[3], 0u);
  // Gated attention: Q/K norms, a quarter of each head rotated NeoX-style, post_attention_norm
  // before the FFN, Q|K|V never fused.
  EXPECT_TRUE(s.attn_output_gate);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_FALSE(s.fused_qkv);
  EXPECT_TRUE(s.ffn_norm_is_post_attn);
  EXPECT_EQ(s.rope_ordering, RopeOrdering::NeoX);
  EXPECT_EQ(s.rope_dims, 16u);
  // A DeltaNet row's parts at 64-float boundaries inside the QKV activation.
  const ModelSpec::DeltaNetRow row = s.delta_net_row();
  EXPECT_EQ(row.z, 1024u);
  EXPECT_EQ(row.alpha, 1536u);
  EXPECT_EQ(row.beta, 1600u);
  EXPECT_EQ(row.conv, 1664u);
  EXPECT_EQ(s.qkv_act_width(), 2688u);

  // attention.recurrent_layers wins over the interval.
  const auto listed = qwen35_bytes(8, [](gguf::GgufWriter& w) {
    auto arr = std::make_shared<gguf::Array>();
    arr->element_type = gguf::ValueType::BOOL;
    for (bool r : {true, true, true, false, true, true, true, false})
      arr->items.push_back(gguf::Value{r});
    w.set("qwen35.attention.recurrent_layers", gguf::Value{arr});
    w.set_u32("qwen35.full_attention_interval", 2);
  });
  const ModelSpec t = ModelSpec::from_gguf(gguf::GgufFile::parse(listed));
  EXPECT_TRUE(t.is_recurrent(1));
  EXPECT_FALSE(t.is_recurrent(3));

  // A multi-token-prediction block at the end is not one of the decoder's layers (llama.cpp's
  // main pass skips it).
  const auto mtp =
      qwen35_bytes(8, [](gguf::GgufWriter& w) { w.set_u32("qwen35.nextn_predict_layers", 1); });
  const ModelSpec m = ModelSpec::from_gguf(gguf::GgufFile::parse(mtp));
  EXPECT_EQ(m.n_layer, 7u);
  EXPECT_EQ(m.n_kv_layers(), 1u);
}

TEST(Qwen35Spec, FilesThatDoNotFitFailNamingTheProblem) {
  auto fails_with = [](const std::vector<uint8_t>& bytes, const std::string& what) {
    try {
      ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
      ADD_FAILURE() << "loaded; expected an error naming " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails_with(qwen35_bytes(2, [](gguf::GgufWriter& w) { w.set_u32("qwen35.ssm.conv_kernel", 9); }),
             "ssm.conv_kernel 9");
  fails_with(qwen35_bytes(2, [](gguf::GgufWriter& w) { w.set_u32("qwen35.ssm.inner_size", 500); }),
             "ssm.inner_size 500");
  // Sizes that agree with each other but not with the tensors.
  fails_with(qwen35_bytes(2,
                          [](gguf::GgufWriter& w) {
                            w.set_u32("qwen35.ssm.state_size", 32);
                            w.set_u32("qwen35.ssm.inner_size", 256);
                          }),
             "blk.0.attn_qkv.weight of shape [256, 512]");
  // Rotated pairs in the fourth (non-text) RoPE section.
  fails_with(qwen35_bytes(2,
                          [](gguf::GgufWriter& w) {
                            w.set_i32s("qwen35.rope.dimension_sections", {2, 2, 2, 2});
                          }),
             "fourth");
  // Every layer a DeltaNet layer but the tensors say otherwise.
  fails_with(
      qwen35_bytes(2, [](gguf::GgufWriter& w) { w.set_u32("qwen35.full_attention_interval", 3); }),
      "blk.1.attn_qkv.weight");
}

// The MoE variants: experts and a gated shared expert on every layer (their widths from the
// expert_* keys, feed_forward_length optional as the converter writes it only for a dense
// width); Qwen3-Next's grouped heads with one ssm_ba, and its older fused ssm_in refused.
TEST(Qwen35Spec, MoeVariantsReadTheirExpertsAndQwen3NextItsHeadLayout) {
  const auto moe = qwen35_bytes(
      2, [](gguf::GgufWriter& w) { w.erase("qwen35moe.feed_forward_length"); }, "qwen35moe");
  const ModelSpec s = ModelSpec::from_gguf(gguf::GgufFile::parse(moe));
  EXPECT_EQ(s.arch, Arch::Qwen35Moe);
  EXPECT_EQ(s.n_expert, 8u);
  EXPECT_EQ(s.n_expert_used, 2u);
  EXPECT_EQ(s.n_ff_exp, 256u);
  EXPECT_EQ(s.n_ff_shexp, 256u);
  EXPECT_TRUE(s.moe_shexp_gated);
  EXPECT_TRUE(s.moe_norm_weights);
  EXPECT_FALSE(s.ssm_grouped_heads);
  EXPECT_TRUE(s.is_recurrent(0));
  EXPECT_FALSE(s.is_recurrent(1));

  const ModelSpec n = ModelSpec::from_gguf(gguf::GgufFile::parse(qwen35_bytes(2, {}, "qwen3next")));
  EXPECT_EQ(n.arch, Arch::Qwen3Next);
  EXPECT_TRUE(n.ssm_grouped_heads);
  EXPECT_EQ(n.ssm_n_v_heads, 2 * n.ssm_n_k_heads);
  EXPECT_TRUE(n.moe_shexp_gated);
  try {
    ModelSpec::from_gguf(gguf::GgufFile::parse(qwen35_bytes(
        2,
        [](gguf::GgufWriter& w) {
          w.add_tensor("blk.0.ssm_in.weight", gguf::TensorType::F32, {256, 4},
                       std::vector<uint8_t>(256 * 4 * 4));
        },
        "qwen3next")));
    ADD_FAILURE() << "a qwen3next file with ssm_in loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ssm_in"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkllm::model
