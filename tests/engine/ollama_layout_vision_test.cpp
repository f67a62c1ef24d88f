// Ollama's single-file vision models (Qwen2.5-VL, Qwen3-VL, Gemma 4) against their llama.cpp-layout
// twins, as ollama_layout_test.cpp does for the text families: the translated view has every key,
// value and tensor of the twin, the same tokenizer and the same logits on the CPU backend and on
// Vulkan; what the translation needs and a file lacks is refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/ollama_layout.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"
#include "engine/tokenizer/gemma4_vocab.h"
#include "engine/tokenizer/llama3_vocab.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/ollama_layout_twins.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

using ::testing::HasSubstr;
using namespace ollama_twins;

// Qwen2.5-VL as Ollama's library publishes it (architecture `qwen25vl`, the three RoPE sections
// as rope.mrope_section, the vision tower inside): its text view is the qwen2vl twin; without
// the sections it is refused by name.
TEST(OllamaLayout, Qwen25VlViewAndLogitsMatchTheLlamaCppTwin) {
  model::MakeModelOptions o;
  o.arch = "qwen2vl";
  o.shape = model::parse_model_shape("64x2x2x1");
  o.file_type = model::FileType::F16;
  o.seed = 52;
  const std::vector<uint8_t> vocab_bytes = test::fixture_vocab_bytes();
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-qwen25vl");
  EXPECT_TRUE(raw.has("qwen25vl.rope.mrope_section") && raw.find_tensor("v.patch_embd_0.weight"));
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{});
  EXPECT_EQ(model::ModelSpec::from_gguf(view).mrope_sections,
            (std::array<uint32_t, 4>{4, 6, 6, 0}));  // heads 32 wide: 16 pairs

  const std::vector<int32_t> prompt{1, 17, 250, 99, 4, 123, 7, 280, 31};
  expect_same_logits(view, twin, prompt);
  o.layout = FileLayout::Ollama;
  const auto no_sections = test::random_model_bytes(
      o, [](gguf::GgufWriter& w) { w.erase("qwen25vl.rope.mrope_section"); });
  EXPECT_THAT(layout_error(no_sections),
              HasSubstr("it has no qwen25vl.rope.mrope_section of 3 int32 sections"));
}

// Qwen3-VL as Ollama's library publishes it (the three RoPE sections as rope.mrope_section, no
// n_deepstack_layers, the tower inside under Hugging Face's names): its text view is the llama.cpp
// twin (sections padded, the deepstack count from vision.deepstack_visual_indexes); without the
// sections it is refused by name.
TEST(OllamaLayout, Qwen3VlViewAndLogitsMatchTheLlamaCppTwin) {
  model::MakeModelOptions o;
  o.arch = "qwen3vl";
  o.shape = model::parse_model_shape("64x2x2x1");
  o.file_type = model::FileType::F16;
  o.seed = 53;
  const std::vector<uint8_t> vocab_bytes = test::fixture_vocab_bytes();
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-qwen3vl");
  EXPECT_TRUE(raw.has("qwen3vl.rope.mrope_section") && raw.find_tensor("v.patch_embed.weight") &&
              raw.find_tensor("v.deepstack_merger.0.linear_fc1.weight") &&
              !raw.has("qwen3vl.n_deepstack_layers"));
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{});
  const model::ModelSpec spec = model::ModelSpec::from_gguf(view);
  EXPECT_EQ(spec.mrope_sections, (std::array<uint32_t, 4>{6, 5, 5, 0}));  // heads 32 wide
  EXPECT_EQ(spec.n_deepstack, 1u);

  const std::vector<int32_t> prompt{1, 17, 250, 99, 4, 123, 7, 280, 31};
  expect_same_logits(view, twin, prompt);
  o.layout = FileLayout::Ollama;
  const auto bad_sections = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.set_i32s("qwen3vl.rope.mrope_section", {24, 20});
  });
  EXPECT_THAT(layout_error(bad_sections),
              HasSubstr("it has no qwen3vl.rope.mrope_section of 3 int32 sections"));
}

// Gemma 4 as Ollama's converter writes it (convert_gemma4.go: one file with the gemma4v tower,
// its clamp bounds also packed; the Gemma 4 BPE as "llama" with control chat markers and normal
// byte tokens; per-layer widths and K/V heads as int32s): its text view is the llama.cpp twin
// (token types and the arrays' integer type aside, read the same: the same layers, tokens and
// text), with the same logits on both backends. Its MoE variant likewise, with the routers'
// per-expert scales under the older files' name. A "llama" vocabulary with pre-tokenizer gemma4
// but no merges is refused.
TEST(OllamaLayout, Gemma4ViewTokenizerAndLogitsMatchTheLlamaCppTwin) {
  const std::vector<uint8_t> vocab_bytes = tokenizer::build_gemma4_test_vocab_gguf();
  const GgufFile vocab = GgufFile::parse(vocab_bytes);
  const std::vector<int32_t> prompt{2, 17, 250, 99, 4, 123, 7, 280, 31};
  for (const char* shape : {"test-swa-narrow", "test-moe-narrow"}) {
    SCOPED_TRACE(shape);
    model::MakeModelOptions o;
    o.arch = "gemma4";
    o.shape = model::parse_model_shape(shape);
    o.file_type = model::FileType::F16;
    o.seed = 59;
    const bool moe = o.shape.moe_variant;
    Twins files = make_twins(o, vocab);
    if (moe) {  // the older files' name of the per-expert scales
      o.layout = FileLayout::Ollama;
      gguf::GgufWriter w;
      model::build_random_model(o, vocab, w);
      for (uint32_t l = 0; l < o.shape.n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        w.rename_tensor(b + "ffn_down_exps.scale", b + "ffn_gate_inp.per_expert_scale");
      }
      files.ollama = w.serialize();
    }
    const GgufFile twin = GgufFile::parse(files.llama_cpp);
    EXPECT_FALSE(twin.translation().applied());
    const GgufFile view = GgufFile::parse(files.ollama);
    const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
    ASSERT_EQ(view.translation().name, "ollama-gemma4");
    EXPECT_EQ(raw.get<std::string>("tokenizer.ggml.model"), "llama");
    EXPECT_TRUE(raw.find_tensor("v.clamp_data") && raw.find_tensor("mm.input_projection.weight") &&
                raw.has("gemma4.vision.block_count") && !raw.has("gemma4.vocab_size"));
    EXPECT_EQ(raw.find_tensor("blk.0.ffn_gate_inp.per_expert_scale") != nullptr, moe);
    const std::set<std::string> differing{"tokenizer.ggml.token_type", "gemma4.feed_forward_length",
                                          "gemma4.attention.head_count_kv"};
    EXPECT_EQ(compare_views(twin, view, differing), (std::set<std::string>{"tokenizer.ggml.pre"}));
    const model::ModelSpec a = model::ModelSpec::from_gguf(twin),
                           b = model::ModelSpec::from_gguf(view);
    EXPECT_EQ(b.layer_n_ff, a.layer_n_ff);
    EXPECT_EQ(b.layer_n_head_kv, a.layer_n_head_kv);
    EXPECT_EQ(b.n_expert, a.n_expert);
    EXPECT_EQ(b.moe_down_scales, a.moe_down_scales);
    const auto twin_tok = tokenizer::Tokenizer::from_gguf(twin);
    const auto view_tok = tokenizer::Tokenizer::from_gguf(view);
    const std::string chat =
        "<|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n<|channel>thought\nsum<channel|>4 "
        "<|tool_call>call:f{}<tool_call|>\xe2\x82\xac";
    const std::vector<int32_t> tokens = twin_tok->encode(chat, true, true);
    EXPECT_EQ(view_tok->encode(chat, true, true), tokens);
    EXPECT_EQ(view_tok->decode(tokens), twin_tok->decode(tokens));
    expect_same_logits(view, twin, prompt);
  }
  model::MakeModelOptions o;
  o.arch = "gemma4";
  o.shape = model::parse_model_shape("test-swa-narrow");
  o.layout = FileLayout::Ollama;
  gguf::GgufWriter w;
  model::build_random_model(o, vocab, w);
  w.erase("tokenizer.ggml.merges");
  EXPECT_THAT(layout_error(w.serialize()), HasSubstr("has no merges"));
}

}  // namespace
}  // namespace vkllm::runtime
