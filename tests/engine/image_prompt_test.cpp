// Gemma 3 and Mistral 3 answering a prompt with an image (issue 38) against llama.cpp's mtmd on
// the same files (tests/reference/vision/{gemma3,mistral3}-prompt.json, recorded by
// tests/reference/tools/record_image_prompt.cpp): the prompt tokenized in the model's image
// layout (vision::tokenize_with_images) must equal mtmd's tokens; the image's rows from the CPU
// encoder replace the placeholders' embeddings (unscaled, unlike Gemma's text embeddings); the
// text before the image shares its chunk (an image ends it, as the scheduler cuts chunks), the
// text after is the next step. Last logits by cosine >= 0.999 on both backends and the greedy
// continuation up to the first near-tie.
//
// Gemma 3's image tokens attend to each other both ways, as mtmd decodes them with causal
// attention off (measured 0.9999996 on the CPU and lavapipe); its model is `test-swa` (7 layers,
// the sixth global) so the last token reaches the image's deeper layers: the same run with the
// image causal falls short of the bar, so the test sees the two-way attention. Mistral 3's are
// causal (its rows include the [IMG_BREAK] rows, "[IMG_END]" follows), and opening them falls
// short of the bar too. Qwen2.5-VL's are causal between "<|vision_start|>" and "<|vision_end|>",
// at M-RoPE positions (vision::mrope_positions): the same at plain positions falls short.
// Qwen3-VL's likewise (interleaved M-RoPE), its rows carrying the deepstack slices the first
// layers add: the same with them zeroed falls short.
#include <gtest/gtest.h>

#include <openssl/sha.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_writer.h"
#include "engine/image/image.h"
#include "engine/model/model_maker.h"
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
  vision::ImageLayout layout;
  vision::PromptWithImages prompt;
  vision::ImageEmbeddings rows;
  uint32_t image_end = 0;  // the token after the image
  // M-RoPE models (Qwen2.5-VL): the image's place for vision::mrope_positions.
  std::vector<vision::MropeImage> mrope;
};

const ImagePromptCase& image_prompt_case(const std::string& name) {
  static std::map<std::string, std::unique_ptr<ImagePromptCase>> made;
  if (made[name]) return *made[name];
  auto c = std::make_unique<ImagePromptCase>();
  std::ifstream in(vision_refs() / (name + ".json"));
  c->j = nlohmann::json::parse(in);
  const auto& m = c->j.at("model");
  fs::path vocab;
  const model::MakeModelOptions mo = reference::read_make_model_options(m, name, "model", &vocab);
  c->model_bytes = reference::make_model_bytes(mo, vocab);
  if (sha256_hex(c->model_bytes) != m.at("sha256").get<std::string>())
    throw std::runtime_error("make-model's " + mo.arch + " changed: re-record " + name);
  c->file.emplace(gguf::GgufFile::parse(c->model_bytes));

  std::vector<uint8_t> projector;
  if (mo.arch == "mistral3") {
    projector = reference::make_pixtral_projector_bytes(mo, vocab,
                                                        m.at("projector_shape").get<std::string>());
  } else {
    model::MakeProjectorOptions po;
    po.arch = mo.arch;
    po.shape = model::parse_projector_shape(m.at("projector_shape").get<std::string>(), mo.arch);
    po.text_embd = mo.shape.n_embd;
    po.seed = mo.seed;
    if (mo.arch == "qwen3vl") po.n_deepstack = model::qwen3vl_deepstack_layers(mo.shape.n_layer);
    gguf::GgufWriter w;
    model::build_random_projector(po, w);
    projector = w.serialize();
  }
  if (sha256_hex(projector) != m.at("projector_sha256").get<std::string>())
    throw std::runtime_error("make-model's projector changed: re-record " + name);
  vision::ImageEncoder encoder(gguf::GgufFile::parse(projector), 2);
  std::ifstream png(vision_refs() / c->j.at("image").get<std::string>(), std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(png), {}};
  c->rows = encoder.encode(image::decode(bytes));

  // mtmd's prompt holds the layout's lead and trail around its marker (Gemma 3's "\n\n"): the
  // layout adds them itself.
  c->layout = vision::image_layout(encoder.spec());
  const std::string text = c->j.at("prompt").get<std::string>();
  const std::string marker = c->layout.lead + "<__media__>" + c->layout.trail;
  const size_t at = text.find(marker);
  if (at == std::string::npos) throw std::runtime_error(name + ": no image marker");
  const std::vector<vision::PromptPiece> pieces{
      {text.substr(0, at), std::nullopt}, {"", 0}, {text.substr(at + marker.size()), std::nullopt}};
  auto tok = tokenizer::Tokenizer::from_gguf(*c->file);
  const image::Image picture = image::decode(bytes);
  const uint32_t rows[] = {c->layout.tokens_for(picture.width, picture.height)};
  c->prompt = vision::tokenize_with_images(*tok, c->layout, pieces, rows);
  if (c->prompt.images.size() == 1)
    c->image_end = c->prompt.images[0].offset + c->prompt.images[0].n_tokens;
  if (c->layout.mrope) {
    const vision::ImageSlot& s = c->prompt.images.at(0);
    c->mrope.push_back({s.offset, s.n_tokens, c->layout.grid_width(picture.width, picture.height)});
  }
  made[name] = std::move(c);
  return *made[name];
}

enum class Backend { Cpu, Vulkan };

struct Answer {
  std::vector<float> last_logits;
  std::vector<int32_t> greedy;
};

// `mrope`: the case's M-RoPE positions where it has them (else every token at its index);
// `rows`: the image's rows (default: the case's).
Answer answer(Runner& runner, const ImagePromptCase& c, bool open, size_t n_greedy,
              bool mrope = true, const std::vector<float>* rows = nullptr) {
  const auto& tokens = c.prompt.tokens;
  kv::BlockTable table(runner.pool(), runner.block_size());
  const vision::ImageSlot& img = c.prompt.images.at(0);
  const EmbeddingSpan span{img.offset, img.n_tokens, (rows ? *rows : c.rows.data).data(), open};
  const bool m = mrope && !c.mrope.empty();
  const auto n = static_cast<uint32_t>(tokens.size());
  const std::vector<uint32_t> pos_first =
      m ? vision::mrope_positions(c.mrope, 0, c.image_end) : std::vector<uint32_t>();
  const std::vector<uint32_t> pos_rest =
      m ? vision::mrope_positions(c.mrope, c.image_end, n) : std::vector<uint32_t>();
  SequenceStep first{&table, std::span(tokens).first(c.image_end), LogitsWanted::None};
  first.embeddings = std::span(&span, 1);
  first.rope_positions = pos_first;
  runner.step(std::span(&first, 1));
  SequenceStep rest{&table, std::span(tokens).subspan(c.image_end), LogitsWanted::Last};
  rest.rope_positions = pos_rest;
  Answer a;
  StepResult r = runner.step(std::span(&rest, 1));
  a.last_logits = r.logits[0];
  for (size_t i = 0; i < n_greedy; ++i) {
    const int32_t t = r.greedy[0];
    a.greedy.push_back(t);
    const auto at = static_cast<uint32_t>(n + i);
    const std::vector<uint32_t> next_pos =
        m ? vision::mrope_positions(c.mrope, at, at + 1) : std::vector<uint32_t>();
    SequenceStep next{&table, std::span(&t, 1), LogitsWanted::Last};
    next.rope_positions = next_pos;
    r = runner.step(std::span(&next, 1));
  }
  return a;
}

class ImagePromptVsLlamaCpp : public ::testing::TestWithParam<std::tuple<Backend, std::string>> {};

TEST_P(ImagePromptVsLlamaCpp, LogitsAfterTheImage) {
  const auto [backend, name] = GetParam();
  const ImagePromptCase& c = image_prompt_case(name);
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
  ASSERT_EQ(c.j.at("non_causal").get<bool>(), c.layout.open);
  ASSERT_EQ(c.rows.n_tokens, c.prompt.images.at(0).n_tokens);

  RunnerOptions o;
  o.max_batch_tokens = 128;
  o.max_seqs = 1;
  o.max_context = 256;
  o.kv_budget_bytes = 4u << 20;
  o.warm_up = false;
  o.embedding_inputs = true;
  std::optional<HostModel> host;
  std::optional<Model> device;
  std::unique_ptr<Runner> runner;
  if (backend == Backend::Cpu) {
    host.emplace(*c.file);
    runner = std::make_unique<Runner>(*host, o);
  } else {
    device.emplace(test::vk_context(), *c.file);
    runner = std::make_unique<Runner>(*device, o);
  }
  if (runner->spec().sliding_window && c.j.value("crosses_window", true)) {
    EXPECT_GT(c.image_end, runner->spec().sliding_window) << "the text before crosses the window";
  }

  const auto want = c.j.at("last_logits").get<std::vector<float>>();
  const auto greedy = c.j.at("greedy_tokens").get<std::vector<int32_t>>();
  const auto margins = c.j.at("greedy_margins").get<std::vector<float>>();
  const Answer got = answer(*runner, c, c.layout.open, greedy.size());
  const double cos = reference::cosine(got.last_logits, want);
  const Answer other = answer(*runner, c, !c.layout.open, 0);
  const double cos_other = reference::cosine(other.last_logits, want);
  const double diff = reference::max_abs_diff(got.last_logits, want);
  const double diff_other = reference::max_abs_diff(other.last_logits, want);
  std::printf("%s (%s): %zu tokens, cosine %.7f, max abs diff %.3g (image %s: %.7f, %.3g)\n",
              name.c_str(), backend == Backend::Cpu ? "cpu" : "vulkan", c.prompt.tokens.size(), cos,
              diff, c.layout.open ? "causal" : "open", cos_other, diff_other);
  EXPECT_GE(cos, 0.999);
  // Decoding the image the other way falls short of the bar (measured: Gemma 3 causal 0.99325):
  // the case sees the attention mask.
  EXPECT_LT(cos_other, 0.999) << "the image's attention mask made no difference";
  if (!c.mrope.empty()) {
    // Qwen2.5-VL: the same at plain positions falls short too, so the case sees M-RoPE.
    const double cos_plain =
        reference::cosine(answer(*runner, c, c.layout.open, 0, false).last_logits, want);
    std::printf("%s: at plain positions %.7f\n", name.c_str(), cos_plain);
    EXPECT_LT(cos_plain, 0.999) << "the M-RoPE positions made no difference";
  }
  if (const uint32_t ds = runner->spec().n_deepstack; ds > 0) {
    // Qwen3-VL: the same with the deepstack slices zeroed falls short, so the case sees them.
    const uint32_t E = runner->spec().n_embd;
    std::vector<float> plain = c.rows.data;
    for (size_t r = 0; r < plain.size() / (E * (1 + ds)); ++r)
      std::fill_n(plain.begin() + r * E * (1 + ds) + E, E * ds, 0.0f);
    const double cos_flat =
        reference::cosine(answer(*runner, c, c.layout.open, 0, true, &plain).last_logits, want);
    std::printf("%s: without the deepstack slices %.7f\n", name.c_str(), cos_flat);
    EXPECT_LT(cos_flat, 0.999) << "the deepstack slices made no difference";
  }
  size_t equal = 0;
  while (equal < greedy.size() && got.greedy[equal] == greedy[equal]) ++equal;
  std::printf("%s (%s): %zu of %zu greedy tokens equal\n", name.c_str(),
              backend == Backend::Cpu ? "cpu" : "vulkan", equal, greedy.size());
  for (size_t i = 0; i < greedy.size(); ++i) {
    EXPECT_EQ(got.greedy[i], greedy[i]) << "greedy token " << i;
    if (margins[i] < reference::kNearTieMargin) break;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ImagePromptVsLlamaCpp,
                         ::testing::Combine(::testing::Values(Backend::Cpu, Backend::Vulkan),
                                            ::testing::Values("gemma3-prompt", "mistral3-prompt",
                                                              "qwen2vl-prompt", "gemma4-prompt",
                                                              "qwen3vl-prompt")),
                         [](const auto& info) {
                           std::string s = std::get<1>(info.param);
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return (std::get<0>(info.param) == Backend::Cpu ? "Cpu_" : "Vulkan_") +
                                  s;
                         });

// By hand (GPU): Gemma 4 at E2B's widths (gemma4-e2b-prompt: a 1536-wide text model, so the
// image is causal, with global heads of 512 that lavapipe's shared memory cannot hold, and the
// E2B tower's widths); its window (512) is longer than the prompt. tests/reference/vision/README.md
INSTANTIATE_TEST_SUITE_P(DISABLED_ByHand, ImagePromptVsLlamaCpp,
                         ::testing::Combine(::testing::Values(Backend::Cpu, Backend::Vulkan),
                                            ::testing::Values("gemma4-e2b-prompt")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == Backend::Cpu ? "Cpu"
                                                                                      : "Vulkan") +
                                  "_gemma4_e2b_prompt";
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
