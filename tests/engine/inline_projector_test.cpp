// Gemma 3 as Ollama publishes it: one GGUF with the SigLIP tower and projector inside
// (engine/gguf/inline_projector.h). `make-model --layout ollama` embeds the same tower, from the
// same random weights, that `--projector` writes beside the llama.cpp-layout twin; the projector
// read out of the Ollama file must be that mmproj, tensor for tensor and byte for byte, and encode
// an image to the same embeddings. (The mmproj itself is checked against llama.cpp's mtmd in
// vision_test.cpp.) Files without a tower, or whose tower keys disagree, say so.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/inline_projector.h"
#include "engine/gguf/ollama_layout.h"
#include "engine/image/image.h"
#include "engine/model/model_maker.h"
#include "engine/model/projector_maker.h"
#include "engine/vision/image_encoder.h"
#include "tests/support/fixture_model.h"

namespace vkllm::gguf {
namespace {

struct OllamaGemma3 {
  model::MakeModelOptions options;
  std::vector<uint8_t> file;    // Ollama's layout: text + tower
  std::vector<uint8_t> mmproj;  // what --projector writes for the llama.cpp twin
};

OllamaGemma3 make_files(const std::function<void(GgufWriter&)>& edit = {}) {
  OllamaGemma3 m;
  model::MakeModelOptions& o = m.options;
  o.arch = "gemma3";
  o.shape = model::parse_model_shape("128x2x4x2");
  o.file_type = model::FileType::F16;
  o.layout = model::FileLayout::Ollama;
  o.seed = 53;
  const std::vector<uint8_t> vocab = test::fixture_vocab_bytes();
  GgufWriter w;
  model::build_random_model(o, GgufFile::parse(vocab), w);
  if (edit) edit(w);
  m.file = w.serialize();
  model::MakeProjectorOptions po;
  po.shape = model::parse_projector_shape(o.projector_shape);
  po.text_embd = o.shape.n_embd;
  po.seed = o.seed;
  GgufWriter p;
  model::build_random_projector(po, p);
  m.mmproj = p.serialize();
  return m;
}

std::vector<uint8_t> extract(const std::vector<uint8_t>& file) {
  const GgufFile raw = GgufFile::parse(file, ReadLayout::Raw);
  return extract_inline_projector(raw, [&](uint64_t offset, std::span<uint8_t> out) {
    std::memcpy(out.data(), file.data() + raw.data_offset() + offset, out.size());
  });
}

std::string extract_error(const std::vector<uint8_t>& file) {
  try {
    extract(file);
  } catch (const LayoutError& e) {
    return e.what();
  }
  return "(extracted)";
}

TEST(InlineProjector, Gemma3TowerInOllamasFileIsItsTwinsMmprojAndEncodesTheSame) {
  const OllamaGemma3 m = make_files();
  EXPECT_EQ(inline_projector_arch(GgufFile::parse(m.file, ReadLayout::Raw)), "gemma3");
  // The text view hides the tower (ollama_layout.h); only the raw file shows it.
  EXPECT_EQ(inline_projector_arch(GgufFile::parse(m.file)), "");

  const std::vector<uint8_t> bytes = extract(m.file);
  const GgufFile got = GgufFile::parse(bytes, ReadLayout::Raw);
  const GgufFile want = GgufFile::parse(m.mmproj, ReadLayout::Raw);
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (const TensorInfo& t : want.tensors()) {
    SCOPED_TRACE(t.name);
    const TensorInfo* g = got.find_tensor(t.name);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->type, t.type);
    EXPECT_EQ(g->shape, t.shape);
    const auto a = got.tensor_data(*g), b = want.tensor_data(t);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
  for (const char* key : {"clip.projector_type", "clip.vision.image_size", "clip.vision.patch_size",
                          "clip.vision.block_count", "clip.vision.projector.scale_factor"}) {
    SCOPED_TRACE(key);
    ASSERT_NE(got.find(key), nullptr);
    EXPECT_TRUE(got.find(key)->v == want.find(key)->v);
  }

  std::ifstream in(
      std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/reference/vision/wide-300x200.png",
      std::ios::binary);
  const std::vector<uint8_t> png{std::istreambuf_iterator<char>(in), {}};
  const image::Image img = image::decode(png);
  vision::ImageEncoder from_file(GgufFile::parse(bytes), 1);
  vision::ImageEncoder from_mmproj(GgufFile::parse(m.mmproj), 1);
  const auto a = from_file.encode(img), b = from_mmproj.encode(img);
  ASSERT_FALSE(a.data.empty());
  EXPECT_EQ(a.data, b.data);
}

TEST(InlineProjector, FilesWithoutATowerOrWithDisagreeingKeysAreRefusedNamingWhy) {
  EXPECT_NE(
      extract_error(make_files([](GgufWriter& w) { w.erase("gemma3.vision.block_count"); }).file)
          .find("no gemma3.vision.* keys and v.* tensors"),
      std::string::npos);
  // 15 image tokens are no square number of pooled patches.
  const std::string odd = extract_error(
      make_files([](GgufWriter& w) { w.set_u32("gemma3.mm.tokens_per_image", 15); }).file);
  EXPECT_NE(odd.find("gemma3.mm.tokens_per_image 15 for 16 patches a side"), std::string::npos)
      << odd;
  const std::string no_width = extract_error(
      make_files([](GgufWriter& w) { w.erase("gemma3.vision.embedding_length"); }).file);
  EXPECT_NE(no_width.find("has no gemma3.vision.embedding_length"), std::string::npos) << no_width;
}

}  // namespace
}  // namespace vkllm::gguf
