// Gemma 3 answering a prompt with an image (issue 38) against llama.cpp's mtmd on the same files
// (tests/reference/vision/gemma3-prompt.json, recorded by tests/reference/tools/
// record_image_prompt.cpp): the prompt tokenized in the image layout (vision::tokenize_with_images)
// must equal mtmd's tokens; the image's rows from the CPU encoder replace the placeholders'
// embeddings (unscaled, unlike Gemma's text embeddings) and attend to each other both ways, as
// mtmd decodes them with causal attention off; the text before the image shares its chunk (the
// open span ends it, as the scheduler cuts chunks), the text after is the next step. Last logits
// by cosine >= 0.999 on both backends (measured 0.9999996 on the CPU and lavapipe) and the
// greedy continuation up to the first near-tie. The model is `test-swa` (7 layers, the sixth
// global) so the last token reaches the image's deeper layers: the same run with the image
// causal falls short of the bar, so the test sees the two-way attention.
#include <gtest/gtest.h>

#include <openssl/sha.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_writer.h"
#include "engine/image/image.h"
#include "engine/model/projector_maker.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_prompt.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/model_reference.h"

namespace vkllm::runtime {
namespace {

namespace fs = std::filesystem;

fs::path vision_refs() {
  return fs::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "vision";
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(bytes.data(), bytes.size(), digest);
  std::string hex;
  char buf[3];
  for (unsigned char b : digest) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

// The case's files and what the engine makes of them once (the encoder on the CPU).
struct ImagePromptCase {
  nlohmann::json j;
  std::vector<uint8_t> model_bytes;
  std::optional<gguf::GgufFile> file;
  vision::PromptWithImages prompt;
  vision::ImageEmbeddings rows;
  uint32_t image_end = 0;  // the token after the image
};

const ImagePromptCase& image_prompt_case() {
  static std::unique_ptr<ImagePromptCase> made;
  if (made) return *made;
  auto c = std::make_unique<ImagePromptCase>();
  std::ifstream in(vision_refs() / "gemma3-prompt.json");
  c->j = nlohmann::json::parse(in);
  const auto& m = c->j.at("model");
  fs::path vocab;
  const model::MakeModelOptions mo =
      reference::read_make_model_options(m, "gemma3-prompt", "model", &vocab);
  c->model_bytes = reference::make_model_bytes(mo, vocab);
  if (sha256_hex(c->model_bytes) != m.at("sha256").get<std::string>())
    throw std::runtime_error("make-model's gemma3 changed: re-record gemma3-prompt.json");
  c->file.emplace(gguf::GgufFile::parse(c->model_bytes));

  model::MakeProjectorOptions po;
  po.arch = mo.arch;
  po.shape = model::parse_projector_shape(m.at("projector_shape").get<std::string>());
  po.text_embd = mo.shape.n_embd;
  po.seed = mo.seed;
  gguf::GgufWriter w;
  model::build_random_projector(po, w);
  const std::vector<uint8_t> projector = w.serialize();
  if (sha256_hex(projector) != m.at("projector_sha256").get<std::string>())
    throw std::runtime_error("make-model's projector changed: re-record gemma3-prompt.json");
  vision::ImageEncoder encoder(gguf::GgufFile::parse(projector), 2);
  std::ifstream png(vision_refs() / c->j.at("image").get<std::string>(), std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(png), {}};
  c->rows = encoder.encode(image::decode(bytes));

  // mtmd's prompt holds "\n\n<__media__>\n\n": the layout adds those newlines itself.
  const std::string text = c->j.at("prompt").get<std::string>();
  const std::string marker = "\n\n<__media__>\n\n";
  const size_t at = text.find(marker);
  if (at == std::string::npos) throw std::runtime_error("gemma3-prompt: no image marker");
  const std::vector<vision::PromptPiece> pieces{
      {text.substr(0, at), std::nullopt}, {"", 0}, {text.substr(at + marker.size()), std::nullopt}};
  auto tok = tokenizer::Tokenizer::from_gguf(*c->file);
  c->prompt = vision::tokenize_with_images(*tok, vision::image_layout(encoder.spec()), pieces);
  if (c->prompt.images.size() == 1)
    c->image_end = c->prompt.images[0].offset + c->prompt.images[0].n_tokens;
  made = std::move(c);
  return *made;
}

enum class Backend { Cpu, Vulkan };

struct Answer {
  std::vector<float> last_logits;
  std::vector<int32_t> greedy;
};

Answer answer(Runner& runner, const ImagePromptCase& c, bool open, size_t n_greedy) {
  const auto& tokens = c.prompt.tokens;
  kv::BlockTable table(runner.pool(), runner.block_size());
  const vision::ImageSlot& img = c.prompt.images.at(0);
  const EmbeddingSpan span{img.offset, img.n_tokens, c.rows.data.data(), open};
  SequenceStep first{&table, std::span(tokens).first(c.image_end), LogitsWanted::None};
  first.embeddings = std::span(&span, 1);
  runner.step(std::span(&first, 1));
  SequenceStep rest{&table, std::span(tokens).subspan(c.image_end), LogitsWanted::Last};
  Answer a;
  StepResult r = runner.step(std::span(&rest, 1));
  a.last_logits = r.logits[0];
  for (size_t i = 0; i < n_greedy; ++i) {
    const int32_t t = r.greedy[0];
    a.greedy.push_back(t);
    SequenceStep next{&table, std::span(&t, 1), LogitsWanted::Last};
    r = runner.step(std::span(&next, 1));
  }
  return a;
}

class ImagePromptVsLlamaCpp : public ::testing::TestWithParam<Backend> {};

TEST_P(ImagePromptVsLlamaCpp, LogitsAfterTheImage) {
  const ImagePromptCase& c = image_prompt_case();
  // mtmd's tokens, its image one -1 of image_tokens rows.
  std::vector<int32_t> want_tokens;
  for (const int32_t t : c.j.at("prompt_tokens").get<std::vector<int32_t>>()) {
    if (t == -1)
      want_tokens.insert(want_tokens.end(), c.j.at("image_tokens").get<size_t>(),
                         vision::kImageToken);
    else
      want_tokens.push_back(t);
  }
  ASSERT_EQ(c.prompt.tokens, want_tokens) << "the image layout's tokens are not mtmd's";
  ASSERT_TRUE(c.j.at("non_causal").get<bool>());
  ASSERT_EQ(c.rows.n_tokens, c.prompt.images.at(0).n_tokens);

  RunnerOptions o;
  o.max_batch_tokens = 64;
  o.max_seqs = 1;
  o.max_context = 128;
  o.kv_budget_bytes = 4u << 20;
  o.warm_up = false;
  o.embedding_inputs = true;
  std::optional<HostModel> host;
  std::optional<Model> device;
  std::unique_ptr<Runner> runner;
  if (GetParam() == Backend::Cpu) {
    host.emplace(*c.file);
    runner = std::make_unique<Runner>(*host, o);
  } else {
    device.emplace(test::vk_context(), *c.file);
    runner = std::make_unique<Runner>(*device, o);
  }
  EXPECT_GT(c.image_end, runner->spec().sliding_window) << "the text before crosses the window";

  const auto want = c.j.at("last_logits").get<std::vector<float>>();
  const auto greedy = c.j.at("greedy_tokens").get<std::vector<int32_t>>();
  const auto margins = c.j.at("greedy_margins").get<std::vector<float>>();
  const Answer got = answer(*runner, c, /*open=*/true, greedy.size());
  const double cos = reference::cosine(got.last_logits, want);
  const Answer causal = answer(*runner, c, /*open=*/false, 0);
  const double cos_causal = reference::cosine(causal.last_logits, want);
  const double diff = reference::max_abs_diff(got.last_logits, want);
  const double diff_causal = reference::max_abs_diff(causal.last_logits, want);
  std::printf(
      "image prompt (%s): %zu tokens, cosine %.7f, max abs diff %.3g (image causal: %.7f, %.3g)\n",
      GetParam() == Backend::Cpu ? "cpu" : "vulkan", c.prompt.tokens.size(), cos, diff, cos_causal,
      diff_causal);
  EXPECT_GE(cos, 0.999);
  // Decoding the image causally falls short of the bar (measured 0.99325): the case sees it.
  EXPECT_LT(cos_causal, 0.999) << "the image's two-way attention made no difference";
  for (size_t i = 0; i < greedy.size(); ++i) {
    EXPECT_EQ(got.greedy[i], greedy[i]) << "greedy token " << i;
    if (margins[i] < reference::kNearTieMargin) break;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ImagePromptVsLlamaCpp,
                         ::testing::Values(Backend::Cpu, Backend::Vulkan), [](const auto& info) {
                           return std::string(info.param == Backend::Cpu ? "Cpu" : "Vulkan");
                         });

// The prompt builder's [img-N] tags become image pieces; tags past the images stay text.
TEST(ImagePrompt, SplitsImageTags) {
  const auto pieces = vision::split_image_tags("a [img-0] b[img-1][img-7] c", 2);
  ASSERT_EQ(pieces.size(), 5u);
  EXPECT_EQ(pieces[0].text, "a ");
  EXPECT_EQ(pieces[1].image, 0u);
  EXPECT_EQ(pieces[2].text, " b");
  EXPECT_EQ(pieces[3].image, 1u);
  EXPECT_EQ(pieces[4].text, "[img-7] c");
}

}  // namespace
}  // namespace vkllm::runtime
