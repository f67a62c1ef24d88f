// Ollama-converter layouts (engine/gguf/ollama_layout.h) against their llama.cpp-layout twins made
// from the same random weights (`make-model --layout ollama`): the translated view has every key,
// value and tensor of the twin, the same tokenizer and the same logits on the CPU backend and on
// Vulkan; the file as stored differs where the translation matters; a llama.cpp-layout file is
// left untouched; a file that half-matches is refused naming what is missing.
// snowflake-arctic-embed2 uses the committed XLM-R-style vocabulary of tests/reference/unigram.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/ollama_layout.h"
#include "engine/model/model_maker.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/embedder.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/gemma4_vocab.h"
#include "engine/tokenizer/llama3_vocab.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/ollama_layout_twins.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

using gguf::GgufFile;
using gguf::ReadLayout;
using model::FileLayout;
using ::testing::HasSubstr;
using namespace ollama_twins;

// gemma3 as published at 4B and up: 128k context (linear rope scaling 8 in llama.cpp's layout),
// no rope keys or RMS epsilon, an embedded vision tower, multimodal tokens past the embeddings.
TEST(OllamaLayout, Gemma3ViewTokenizerAndLogitsMatchTheLlamaCppTwin) {
  model::MakeModelOptions o;
  o.arch = "gemma3";
  o.shape = model::parse_model_shape("128x7x4x2");
  o.shape.n_ctx = 131072;
  o.file_type = model::FileType::F16;
  o.seed = 47;
  const std::vector<uint8_t> vocab_bytes = test::fixture_vocab_bytes();
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied()) << "a llama.cpp-layout file is left as it is";
  EXPECT_EQ(twin.metadata().size(),
            GgufFile::parse(files.llama_cpp, ReadLayout::Raw).metadata().size());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-gemma3");
  EXPECT_TRUE(raw.find_tensor("v.patch_embedding.weight"));
  EXPECT_FALSE(view.find_tensor("v.patch_embedding.weight"));
  EXPECT_EQ(compare_views(twin, view), (std::set<std::string>{"tokenizer.ggml.add_padding_token",
                                                              "tokenizer.ggml.add_unknown_token"}));

  const auto spec = model::ModelSpec::from_gguf(view);
  EXPECT_EQ(spec.rope_freq_base, 1000000.0f);
  EXPECT_EQ(spec.rope_freq_scale, 1.0f / 8);
  EXPECT_EQ(spec.rope_freq_base_swa, 10000.0f);
  // As stored, the loaders would read gemma3's global rope base as 10000, unscaled.
  EXPECT_NE(model::ModelSpec::from_gguf(raw).rope_freq_base, spec.rope_freq_base);

  const std::vector<int32_t> prompt{2, 17, 250, 99, 4, 123, 7, 280, 31};
  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "vulkan");
    const auto want = last_logits(twin, prompt, cpu);
    EXPECT_EQ(last_logits(view, prompt, cpu), want);
    EXPECT_NE(last_logits(raw, prompt, cpu), want);
  }
}

// Llama 3 as published before llama.cpp's pre-tokenizer key: without the translation the text
// is split by the default pre-tokenizer, without BOS, and turns end on <|end_of_text|> only.
TEST(OllamaLayout, Llama3TokenizerMetadataMatchesTheLlamaCppTwin) {
  const auto dir = reference::shared_testdata_dir() / "vocab/llama3.2";
  const std::vector<uint8_t> vocab_bytes =
      tokenizer::build_llama3_vocab_gguf(dir / "encoder.json", dir / "vocab.bpe");
  model::MakeModelOptions o;
  o.arch = "llama";
  o.shape = model::parse_model_shape("32x2x2x1");
  o.shape.tied_embeddings = true;
  o.file_type = model::FileType::F16;
  o.seed = 3;
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-llama3");
  EXPECT_FALSE(raw.has("tokenizer.ggml.pre") || raw.has("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{"tokenizer.chat_template"});

  const std::string text = "Hello  world: x.append(12345) apples!";
  const auto view_tok = tokenizer::Tokenizer::from_gguf(view);
  const auto want = tokenizer::Tokenizer::from_gguf(twin)->encode(text, true, true);
  const auto got = view_tok->encode(text, true, true);
  EXPECT_EQ(got, want);
  EXPECT_EQ(view_tok->vocab().eos, 128009);
  const auto raw_tokens = tokenizer::Tokenizer::from_gguf(raw)->encode(text, true, true);
  EXPECT_NE(raw_tokens, want);

  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "vulkan");
    const auto expected = last_logits(twin, want, cpu);
    EXPECT_EQ(last_logits(view, got, cpu), expected);
    if (cpu) {  // the tokens differ, whatever the backend
      EXPECT_NE(last_logits(raw, raw_tokens, cpu), expected);
    }
  }
}

// The pooled, projected embedding of `tokens`, on the CPU backend or Vulkan.
std::vector<float> embedding(const GgufFile& file, const std::vector<int32_t>& tokens, bool cpu) {
  EmbedderOptions eo;
  eo.max_batch_tokens = 32;
  eo.max_inputs = 1;
  eo.warm_up = false;
  const std::vector<std::vector<int32_t>> inputs{tokens};
  if (cpu) {
    const HostModel host(file);
    return Embedder(host, eo).embed(inputs).at(0);
  }
  Model device(test::vk_context(), file);
  return Embedder(device, eo).embed(inputs).at(0);
}

// EmbeddingGemma as published: gemma3 keys, dense.0 / dense.1, the window pattern per layer.
TEST(OllamaLayout, EmbeddingGemmaViewAndEmbeddingsMatchTheLlamaCppTwin) {
  model::MakeModelOptions o;
  o.arch = "gemma-embedding";
  o.shape = model::parse_model_shape("64x6x2x1");  // layers 0-4 local, 5 global
  o.file_type = model::FileType::F16;
  o.seed = 48;
  const std::vector<uint8_t> vocab_bytes = test::fixture_vocab_bytes();
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-embeddinggemma");
  EXPECT_EQ(raw.get_optional<std::string>("general.architecture"), "gemma3");
  EXPECT_TRUE(raw.find_tensor("dense.0.weight") && !raw.find_tensor("dense_2.weight"));
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{"gemma-embedding.rope.freq_base_swa"});
  const auto spec = model::ModelSpec::from_gguf(view);
  EXPECT_EQ(spec.n_dense, 4u * 64);
  EXPECT_FALSE(spec.causal_attn);

  const std::vector<int32_t> prompt{1, 17, 250, 99, 4, 123, 7, 280, 31, 2};
  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "vulkan");
    const auto want = embedding(twin, prompt, cpu);
    ASSERT_EQ(want.size(), 64u);
    EXPECT_EQ(embedding(view, prompt, cpu), want);
  }
}

// Ministral 3 with Ollama's older YaRN / temperature key names and its vision tower embedded.
TEST(OllamaLayout, Mistral3ViewAndLogitsMatchTheLlamaCppTwin) {
  model::MakeModelOptions o;
  o.arch = "mistral3";
  o.shape = model::parse_model_shape("64x2x2x1");
  o.shape.n_ctx = 64;  // YaRN's original context 4: the prompt reaches the temperature's range
  o.file_type = model::FileType::F16;
  o.seed = 49;
  const std::vector<uint8_t> vocab_bytes = test::fixture_vocab_bytes();
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-mistral3");
  EXPECT_TRUE(raw.has("mistral3.rope.scaling_beta") && raw.find_tensor("v.patch_conv.weight"));
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{});

  const std::vector<int32_t> prompt{1, 17, 250, 99, 4, 123, 7, 280, 31};
  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "vulkan");
    const auto want = last_logits(twin, prompt, cpu);
    EXPECT_EQ(last_logits(view, prompt, cpu), want);
    if (cpu) {  // as stored: no attention temperature, no YaRN magnitude
      EXPECT_NE(last_logits(raw, prompt, cpu), want);
    }
  }
}

// Qwen3 MoE without the expert width key: here the width (64) is not n_ff / experts used (128),
// so as stored the file cannot load at all.
TEST(OllamaLayout, Qwen3MoeViewAndLogitsMatchTheLlamaCppTwin) {
  model::MakeModelOptions o;
  o.arch = "qwen3moe";
  o.shape = model::parse_model_shape("64x2x2x1");
  o.shape.n_ff_exp = 64;
  o.file_type = model::FileType::F16;
  o.seed = 50;
  const std::vector<uint8_t> vocab_bytes = test::fixture_vocab_bytes();
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-qwen3moe");
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{});
  EXPECT_THAT([&] { model::ModelSpec::from_gguf(raw); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("expert tensor")));

  const std::vector<int32_t> prompt{1, 17, 250, 99, 4, 123, 7, 280, 31};
  expect_same_logits(view, twin, prompt);
}

// gpt-oss as Ollama's library publishes it (architecture `gptoss`, its own names for the output
// projection, sinks and FFN norm, no expert width): CPU backend only, as gpt-oss so far.
TEST(OllamaLayout, GptOssViewAndLogitsMatchTheLlamaCppTwin) {
  model::MakeModelOptions o;
  o.arch = "gpt-oss";
  o.shape = model::parse_model_shape("64x2x4x2");
  o.shape.n_expert = 4;
  o.shape.n_expert_used = 2;
  o.shape.n_ff_exp = 64;
  o.shape.sliding_window = 4;
  o.file_type = model::FileType::F16;
  o.seed = 51;
  const std::vector<uint8_t> vocab_bytes = test::fixture_vocab_bytes();
  const Twins files = make_twins(o, GgufFile::parse(vocab_bytes));

  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-gptoss");
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{});
  EXPECT_TRUE(raw.find_tensor("blk.1.attn_sinks"));
  EXPECT_TRUE(raw.find_tensor("blk.1.attn_out.bias"));
  EXPECT_FALSE(raw.has("gptoss.expert_feed_forward_length"));
  EXPECT_THAT([&] { model::ModelSpec::from_gguf(raw); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("gptoss")));

  const std::vector<int32_t> prompt{1, 17, 250, 99, 4, 123, 7, 280, 31};
  EXPECT_EQ(last_logits(view, prompt, true), last_logits(twin, prompt, true));
}

// bert with the XLM-R-style unigram vocabulary of tests/reference/unigram.
model::MakeModelOptions snowflake_options() {
  model::MakeModelOptions o;
  o.arch = "bert";
  o.shape = model::parse_model_shape("64x2x2x2");
  o.file_type = model::FileType::F16;
  o.seed = 51;
  return o;
}

GgufFile xlmr_vocab() {
  return GgufFile::open(std::filesystem::path(VKLLM_SOURCE_DIR) /
                        "tests/reference/unigram/xlmr-unigram-vocab.gguf");
}

// snowflake-arctic-embed2 as published: the charsmap as base64 text, one character per string,
// which neither llama.cpp nor the tokenizer reads as stored.
TEST(OllamaLayout, SnowflakeArcticEmbed2TokensAndEmbeddingsMatchTheLlamaCppTwin) {
  const Twins files = make_twins(snowflake_options(), xlmr_vocab());
  const GgufFile twin = GgufFile::parse(files.llama_cpp);
  EXPECT_FALSE(twin.translation().applied());
  const GgufFile view = GgufFile::parse(files.ollama);
  const GgufFile raw = GgufFile::parse(files.ollama, ReadLayout::Raw);
  ASSERT_EQ(view.translation().name, "ollama-snowflake-arctic-embed2");
  EXPECT_EQ(compare_views(twin, view), std::set<std::string>{});
  EXPECT_EQ(model::ModelSpec::from_gguf(view).pooling, model::Pooling::Cls);

  const std::string text = "Pierre said «Ｈｅｌｌｏ»   to Наташа, 战争 <mask> ﬁne.";
  const auto want = tokenizer::Tokenizer::from_gguf(twin)->encode(text, true, true);
  EXPECT_EQ(tokenizer::Tokenizer::from_gguf(view)->encode(text, true, true), want);
  EXPECT_THAT([&] { tokenizer::Tokenizer::from_gguf(raw); },
              ::testing::ThrowsMessage<tokenizer::TokenizerError>(
                  HasSubstr("precompiled_charsmap is an array of string, not an array of bytes")));
  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "vulkan");
    const auto expected = embedding(twin, want, cpu);
    ASSERT_EQ(expected.size(), 64u);
    EXPECT_EQ(embedding(view, want, cpu), expected);
  }
}

// Files with an Ollama marker but not what the translation needs are refused, naming it.
TEST(OllamaLayout, HalfMatchingFilesAreRefusedNamingWhatIsMissing) {
  model::MakeModelOptions o;
  o.arch = "gemma3";
  o.shape = model::parse_model_shape("64x1x2x1");
  o.layout = FileLayout::Ollama;
  const std::vector<uint8_t> short_vocab = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
    w.set_strings("tokenizer.ggml.tokens", tokens);
    w.erase("tokenizer.ggml.scores");
  });
  EXPECT_THAT(layout_error(short_vocab),
              HasSubstr("tokenizer.ggml.tokens has 3 entries, fewer than the 300 rows of "
                        "token_embd.weight"));
  EXPECT_THAT(layout_error(short_vocab), HasSubstr("Ollama's gemma3 layout (gemma3.mm."));

  // The 1B's nested rope keys move to llama.cpp's names (and are what the loaders read).
  const auto nested_1b = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.set_f32("gemma3.rope.global.freq_base", 500000.0f);
    w.set_f32("gemma3.rope.local.freq_base", 20000.0f);
  });
  const GgufFile moved = GgufFile::parse(nested_1b);
  EXPECT_FALSE(moved.has("gemma3.rope.global.freq_base"));
  EXPECT_THAT(moved.translation().changes,
              ::testing::Contains("gemma3.rope.freq_base = 500000 (from "
                                  "gemma3.rope.global.freq_base)"));
  const auto moved_spec = model::ModelSpec::from_gguf(moved);
  EXPECT_EQ(moved_spec.rope_freq_base, 500000.0f);
  EXPECT_EQ(moved_spec.rope_freq_base_swa, 20000.0f);

  const auto nested = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.set_f32("gemma3.rope.global.freq_base", 500000.0f);
    w.set_f32("gemma3.rope.freq_base", 1000000.0f);
  });
  EXPECT_THAT(layout_error(nested),
              HasSubstr("gemma3.rope.global.freq_base (500000) and gemma3.rope.freq_base "
                        "(1000000) disagree"));

  const auto embedding_gemma = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.add_tensor("dense.0.weight", gguf::TensorType::F32, {4}, std::vector<uint8_t>(16));
  });
  EXPECT_THAT(layout_error(embedding_gemma),
              HasSubstr("Ollama's embeddinggemma layout (dense.0.weight) but cannot be translated "
                        "to llama.cpp's: it has no dense.1.weight"));

  // A Llama 3 chat template without a pre-tokenizer over a vocabulary that is not Llama 3's.
  o.arch = "llama";
  o.layout = FileLayout::LlamaCpp;
  const auto not_llama3 = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.chat_template", "<|start_header_id|>{{ m }}<|eot_id|>");
  });
  EXPECT_THAT(
      layout_error(not_llama3),
      HasSubstr("Ollama's llama3 layout (no tokenizer.ggml.pre, Llama 3 chat template) "
                "but cannot be translated to llama.cpp's: the vocabulary has 300 tokens, no "
                "<|eot_id|> at 128009"));

  // Adapters are never translated; a missing RMS epsilon alone is no marker.
  o.arch = "gemma3";
  o.layout = FileLayout::Ollama;
  const auto adapter = test::random_model_bytes(
      o, [](gguf::GgufWriter& w) { w.set_string("general.type", "adapter"); });
  EXPECT_FALSE(GgufFile::parse(adapter).translation().applied());
  o.layout = FileLayout::LlamaCpp;
  const auto no_eps = test::random_model_bytes(
      o, [](gguf::GgufWriter& w) { w.erase("gemma3.attention.layer_norm_rms_epsilon"); });
  EXPECT_FALSE(GgufFile::parse(no_eps).translation().applied());
}

// The same for EmbeddingGemma, Ministral 3 and Qwen3 MoE: each half match names what is missing or
// wrong.
TEST(OllamaLayout, HalfMatchingEmbeddingGemmaMistral3Qwen3MoeAndGptOssAreRefused) {
  model::MakeModelOptions o;
  o.arch = "gemma-embedding";
  o.shape = model::parse_model_shape("64x2x2x1");
  o.layout = FileLayout::Ollama;
  EXPECT_EQ(GgufFile::parse(test::random_model_bytes(o)).translation().name,
            "ollama-embeddinggemma");
  const auto no_pooling =
      test::random_model_bytes(o, [](gguf::GgufWriter& w) { w.erase("gemma3.pooling_type"); });
  EXPECT_THAT(layout_error(no_pooling), HasSubstr("gemma3.pooling_type is missing"));
  const auto every_layer_local = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    auto all = std::make_shared<gguf::Array>();
    all->element_type = gguf::ValueType::BOOL;
    all->items.assign(2, gguf::Value{true});
    w.set("gemma3.attention.sliding_window_pattern", gguf::Value{std::move(all)});
  });
  EXPECT_EQ(layout_error(every_layer_local), "(accepted)") << "layers 0-1 are local either way";
  const auto global_first = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    auto pattern = std::make_shared<gguf::Array>();
    pattern->element_type = gguf::ValueType::BOOL;
    pattern->items = {gguf::Value{false}, gguf::Value{true}};
    w.set("gemma3.attention.sliding_window_pattern", gguf::Value{std::move(pattern)});
  });
  EXPECT_THAT(layout_error(global_first),
              HasSubstr("sliding_window_pattern marks layer 0 global, gemma-embedding has five "
                        "local layers per global one"));
  const auto wrong_width = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.rename_tensor("dense.1.weight", "unused.weight");
    w.add_tensor("dense.1.weight", gguf::TensorType::F32, {8, 64}, std::vector<uint8_t>(2048));
  });
  EXPECT_THAT(layout_error(wrong_width),
              HasSubstr("dense.0.weight (64x256) and dense.1.weight (8x64) do not project 64 -> "
                        "N -> 64"));

  o.arch = "mistral3";
  const auto mscale = test::random_model_bytes(
      o, [](gguf::GgufWriter& w) { w.set_f32("mistral3.rope.scaling.mscale", 0.5f); });
  EXPECT_THAT(layout_error(mscale),
              HasSubstr("Ollama's mistral3 layout (v.* tensors, mm.* tensors, "
                        "mistral3.rope.scaling.beta_fast"));
  EXPECT_THAT(layout_error(mscale), HasSubstr("mistral3.rope.scaling.mscale (0.5) without an equal "
                                              "mistral3.rope.scaling.mscale_all_dim"));
  const auto betas = test::random_model_bytes(
      o, [](gguf::GgufWriter& w) { w.set_f32("mistral3.rope.scaling.yarn_beta_fast", 16.0f); });
  EXPECT_THAT(layout_error(betas), HasSubstr("mistral3.rope.scaling.beta_fast (32) and "
                                             "mistral3.rope.scaling.yarn_beta_fast (16) disagree"));

  o.arch = "qwen3moe";
  const auto no_renormalising = test::random_model_bytes(
      o, [](gguf::GgufWriter& w) { w.set_bool("qwen3moe.norm_top_k_prob", false); });
  EXPECT_THAT(layout_error(no_renormalising),
              HasSubstr("Ollama's qwen3moe layout (qwen3moe.norm_top_k_prob, no "
                        "qwen3moe.expert_feed_forward_length) but cannot be translated to "
                        "llama.cpp's: qwen3moe.norm_top_k_prob is false"));

  o.arch = "gpt-oss";
  const auto fused_qkv = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.rename_tensor("blk.0.attn_out.weight", "blk.0.attn_qkv.weight");
  });
  EXPECT_THAT(layout_error(fused_qkv),
              HasSubstr("Ollama's gptoss layout (general.architecture 'gptoss') but cannot be "
                        "translated to llama.cpp's: it has no blk.0.attn_output.weight after the "
                        "renames (a fused attn_qkv is not translated)"));
  const auto both_norms = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.add_tensor("blk.1.post_attention_norm.weight", gguf::TensorType::F32, {64},
                 std::vector<uint8_t>(256));
  });
  EXPECT_THAT(layout_error(both_norms), HasSubstr("it has both blk.1.ffn_norm.weight and "
                                                  "blk.1.post_attention_norm.weight"));
}

// A t5 tokenizer's charsmap as strings that are not one base64 character each, not base64, or
// not a compiled charsmap is refused; a WordPiece bert is no snowflake-arctic-embed2.
TEST(OllamaLayout, HalfMatchingSnowflakeArcticEmbed2IsRefused) {
  const GgufFile vocab = xlmr_vocab();
  model::MakeModelOptions o = snowflake_options();
  o.layout = FileLayout::Ollama;
  const auto with_charsmap = [&](const std::vector<std::string>& chars) {
    gguf::GgufWriter w;
    model::build_random_model(o, vocab, w);
    w.set_strings("tokenizer.ggml.precompiled_charsmap", chars);
    return w.serialize();
  };
  const std::string marker =
      "Ollama's snowflake-arctic-embed2 layout (bert with a t5 tokenizer, "
      "tokenizer.ggml.precompiled_charsmap as 3 strings) but cannot be translated to llama.cpp's: ";
  EXPECT_THAT(layout_error(with_charsmap({"A", "LQ", "C"})),
              HasSubstr(marker + "tokenizer.ggml.precompiled_charsmap entry 1 is 'LQ', not one "
                                 "base64 character"));
  EXPECT_THAT(layout_error(with_charsmap({"A", "*", "C"})),
              HasSubstr(marker + "tokenizer.ggml.precompiled_charsmap is not base64 text"));
  EXPECT_THAT(layout_error(with_charsmap({"A", "A", "C"})),
              HasSubstr(marker + "tokenizer.ggml.precompiled_charsmap decodes to 2 bytes, not a "
                                 "compiled charsmap"));

  o.layout = FileLayout::LlamaCpp;
  const auto wordpiece = test::random_model_bytes(o, [](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "bert");
    w.set_strings("tokenizer.ggml.precompiled_charsmap", {"A", "A", "A", "A"});
  });
  EXPECT_FALSE(GgufFile::parse(wordpiece).translation().applied());
}

}  // namespace
}  // namespace vkllm::runtime
