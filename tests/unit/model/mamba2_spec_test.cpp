// The Mamba-2 hybrids as ModelSpec reads make-model's fixtures of them: Granite 4.0-H's mixers
// where head_count_kv is 0 and its multipliers, Nemotron-H's three layer kinds from the per-layer
// head_count_kv and feed_forward_length (FFN-only layers own no K/V), the mixer's state of conv
// inputs plus head_dim x d_state per head. Files that do not fit fail at load naming the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"

namespace vkllm::model {
namespace {

std::vector<uint8_t> mamba2_bytes(const std::string& arch, uint32_t n_layer,
                                  const std::function<void(gguf::GgufWriter&)>& edit = {},
                                  const std::string& shape = "test") {
  static const gguf::GgufFile vocab = gguf::GgufFile::open(
      (std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/reference/families/spm-1k-vocab.gguf")
          .string());
  MakeModelOptions o;
  o.arch = arch;
  o.shape = parse_model_shape(shape);
  o.shape.n_layer = n_layer;
  o.threads = 1;
  gguf::GgufWriter w;
  build_random_model(o, vocab, w);
  if (edit) edit(w);
  return w.serialize();
}

TEST(Mamba2Spec, GraniteMixersMultipliersAndState) {
  const ModelSpec s = ModelSpec::from_gguf(gguf::GgufFile::parse(mamba2_bytes("granitehybrid", 4)));
  EXPECT_EQ(s.arch, Arch::GraniteHybrid);
  for (uint32_t l = 0; l < 4; ++l) EXPECT_EQ(s.is_recurrent(l), l % 2 == 0) << l;
  EXPECT_EQ(s.n_kv_layers(), 2u);
  // test's 256 wide: d_inner 512 in 8 heads of 64, state 64, 2 groups, a conv of 4 taps.
  EXPECT_EQ(s.mamba_head_dim(), 64u);
  EXPECT_EQ(s.mamba_conv_channels(), 512u + 2 * 2 * 64);
  EXPECT_EQ(s.recurrent_state_floats()[0], 3u * 768 + 512u * 64);
  EXPECT_EQ(s.recurrent_state_floats()[1], 0u);
  EXPECT_FALSE(s.rope);  // Granite 4.0-H: rope.scaling.finetuned false
  EXPECT_FLOAT_EQ(s.embed_scale, 12.0f);
  EXPECT_FLOAT_EQ(s.residual_scale, 0.22f);
  EXPECT_FLOAT_EQ(s.logit_scale, 0.5f);
  EXPECT_FLOAT_EQ(s.attn_scale, 0.0078125f);
  const ModelSpec::Mamba2Row row = s.mamba2_row();
  EXPECT_EQ(row.xbc, 512u);
  EXPECT_EQ(row.dt, 512u + 768);
  EXPECT_EQ(row.conv, 1344u);  // in_proj 1288 rounded up to 64
  EXPECT_EQ(s.qkv_act_width(), 1344u + 768);
}

TEST(Mamba2Spec, NemotronLayerKinds) {
  const ModelSpec s = ModelSpec::from_gguf(gguf::GgufFile::parse(mamba2_bytes("nemotron_h", 2)));
  EXPECT_EQ(s.arch, Arch::NemotronH);
  ASSERT_EQ(s.n_layer, 3u);  // the test shape's mixer, attention and FFN layers
  EXPECT_TRUE(s.is_recurrent(0));
  EXPECT_FALSE(s.is_recurrent(1) || s.is_mlp_layer(1));
  EXPECT_TRUE(s.is_mlp_layer(2));
  EXPECT_EQ(s.n_kv_layers(), 1u);
  EXPECT_FALSE(s.owns_kv(2));
  EXPECT_FALSE(s.rope);
  EXPECT_FALSE(s.gated_ffn);
  EXPECT_EQ(s.n_ff, 768u);
}

// Nemotron-H MoE (make-model's nemotron_h_moe: Nemotron 3 Nano's pattern MEMEM*...): the FFN
// layers are MoE layers of up-only experts with sigmoid scores, the selection bias, renormalised
// weights times expert_weights_scale, and an up-only shared expert; they own no K/V.
TEST(Mamba2Spec, NemotronMoeLayersAndRouting) {
  const ModelSpec s =
      ModelSpec::from_gguf(gguf::GgufFile::parse(mamba2_bytes("nemotron_h_moe", 6)));
  EXPECT_EQ(s.arch, Arch::NemotronHMoe);
  const std::string kinds = "MEMEM*";
  for (uint32_t l = 0; l < 6; ++l) {
    EXPECT_EQ(s.is_recurrent(l), kinds[l] == 'M') << l;
    EXPECT_EQ(s.is_moe_layer(l), kinds[l] == 'E') << l;
    EXPECT_EQ(s.owns_kv(l), kinds[l] == '*') << l;
  }
  EXPECT_EQ(s.moe_gating, MoeGating::SigmoidScores);
  EXPECT_TRUE(s.moe_select_bias && s.moe_up_only && s.moe_norm_weights);
  EXPECT_FLOAT_EQ(s.moe_weights_scale, 2.5f);
  EXPECT_EQ(s.n_expert, 8u);
  EXPECT_EQ(s.n_expert_used, 2u);
  EXPECT_EQ(s.n_ff_exp, 256u);
  EXPECT_EQ(s.n_ff_shexp, 512u);
  EXPECT_FALSE(s.moe_shexp_gated);
  EXPECT_EQ(s.moe_latent, 0u);
  EXPECT_EQ(s.moe_expert_embd(), 256u);
  // Nemotron 3 Super's kind (test-latent): the experts read and write 128-wide latent rows.
  const ModelSpec lat = ModelSpec::from_gguf(
      gguf::GgufFile::parse(mamba2_bytes("nemotron_h_moe", 3, {}, "test-latent")));
  EXPECT_EQ(lat.moe_latent, 128u);
  EXPECT_EQ(lat.moe_expert_embd(), 128u);
  EXPECT_EQ(lat.n_embd, 256u);
}

// What Nemotron-H MoE files may carry that the engine does not run (or that does not fit) is
// refused by name.
TEST(Mamba2Spec, NemotronMoeVariantsWeDoNotRunAreRefused) {
  auto fails_with = [](const std::function<void(gguf::GgufWriter&)>& edit,
                       const std::string& what) {
    try {
      ModelSpec::from_gguf(gguf::GgufFile::parse(mamba2_bytes("nemotron_h_moe", 3, edit)));
      ADD_FAILURE() << "loaded; expected an error naming " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // A latent width without the latent projections (llama.cpp would not load it either).
  fails_with([](gguf::GgufWriter& w) { w.set_u32("nemotron_h_moe.moe_latent_size", 64); },
             "ffn_latent_down");
  fails_with([](gguf::GgufWriter& w) { w.set_u32("nemotron_h_moe.expert_group_count", 2); },
             "grouped");
  fails_with([](gguf::GgufWriter& w) { w.set_u32("nemotron_h_moe.nextn_predict_layers", 1); },
             "multi-token");
  fails_with(
      [](gguf::GgufWriter& w) {
        auto arr = std::make_shared<gguf::Array>();
        arr->element_type = gguf::ValueType::U32;
        for (int l = 0; l < 3; ++l) arr->items.push_back(gguf::Value{uint32_t{2}});
        w.set("nemotron_h_moe.expert_used_count", gguf::Value{std::move(arr)});
      },
      "per-layer expert_used_count");
  fails_with([](gguf::GgufWriter& w) { w.set_u32("nemotron_h_moe.expert_count", 0); },
             "expert_count");
}

TEST(Mamba2Spec, FilesThatDoNotFitFailNamingTheProblem) {
  auto fails_with = [](const std::vector<uint8_t>& bytes, const std::string& what) {
    try {
      ModelSpec::from_gguf(gguf::GgufFile::parse(bytes));
      ADD_FAILURE() << "loaded; expected an error naming " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // The MoE variants need their experts (the dense file has none).
  fails_with(mamba2_bytes("granitehybrid", 2,
                          [](gguf::GgufWriter& w) {
                            w.set_u32("granitehybrid.expert_count", 8);
                            w.set_u32("granitehybrid.expert_used_count", 2);
                          }),
             "blk.0.ffn_gate_inp.weight");
  fails_with(mamba2_bytes("nemotron_h", 2,
                          [](gguf::GgufWriter& w) { w.set_u32("nemotron_h.expert_count", 8); }),
             "expert_used_count");
  fails_with(mamba2_bytes("nemotron_h", 2,
                          [](gguf::GgufWriter& w) { w.set_u32("nemotron_h.ssm.group_count", 3); }),
             "groups");
  fails_with(
      mamba2_bytes("granitehybrid", 2,
                   [](gguf::GgufWriter& w) { w.set_u32("granitehybrid.ssm.state_size", 32); }),
      "blk.0.ssm_in.weight");
}

}  // namespace
}  // namespace vkllm::model
