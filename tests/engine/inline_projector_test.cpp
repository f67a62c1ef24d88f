// Vision towers inside Ollama's single-file GGUFs (engine/gguf/inline_projector.h): Gemma 3
// (SigLIP), Mistral 3 (Pixtral), Qwen2.5-VL, Qwen3-VL and Gemma 4. `make-model --layout ollama`
// embeds the same tower, from the same random weights, that `--projector` writes beside the
// llama.cpp-layout twin (under Ollama's names, with Pixtral's Q/K rows in Hugging Face's order and
// its [IMG_BREAK] row only in the text embeddings); the projector read out of the Ollama file must
// be that mmproj, tensor for tensor and byte for byte, and encode an image to the same embeddings.
// (The mmproj itself is checked against llama.cpp's mtmd in vision_test.cpp.) Files without a
// tower, or whose tower keys disagree, say so.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
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

struct OllamaModel {
  model::MakeModelOptions options;
  std::vector<uint8_t> file;    // Ollama's layout: text + tower
  std::vector<uint8_t> twin;    // the llama.cpp layout's text model
  std::vector<uint8_t> mmproj;  // what --projector writes for the twin
};

OllamaModel make_files(const std::string& arch, const std::function<void(GgufWriter&)>& edit = {}) {
  OllamaModel m;
  model::MakeModelOptions& o = m.options;
  o.arch = arch;
  o.shape = model::parse_model_shape(arch == "gemma3"   ? "128x2x4x2"
                                     : arch == "gemma4" ? "test-swa-narrow"
                                                        : "test");
  o.file_type = model::FileType::F16;
  o.layout = model::FileLayout::Ollama;
  o.seed = 53;
  const std::vector<uint8_t> vocab = test::fixture_vocab_bytes();
  GgufWriter w;
  model::build_random_model(o, GgufFile::parse(vocab), w);
  if (edit) edit(w);
  m.file = w.serialize();
  model::MakeModelOptions twin = o;
  twin.layout = model::FileLayout::LlamaCpp;
  GgufWriter t;
  model::build_random_model(twin, GgufFile::parse(vocab), t);
  m.twin = t.serialize();
  model::MakeProjectorOptions po;
  po.arch = arch;
  po.shape = model::parse_projector_shape(o.projector_shape, arch);
  po.text_embd = o.shape.n_embd;
  po.seed = o.seed;
  if (arch == "mistral3") po.img_break = model::img_break_embedding(t);
  if (arch == "qwen3vl") po.n_deepstack = model::qwen3vl_deepstack_layers(o.shape.n_layer);
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

// `file` again without the keys and tensors `drop` names.
std::vector<uint8_t> rebuilt_without(const std::vector<uint8_t>& file,
                                     const std::function<bool(std::string_view)>& drop) {
  const GgufFile raw = GgufFile::parse(file, ReadLayout::Raw);
  GgufWriter w;
  for (const auto& [key, value] : raw.metadata())
    if (!drop(key)) w.set(key, value);
  for (const TensorInfo& t : raw.tensors()) {
    if (drop(t.name)) continue;
    const auto d = raw.tensor_data(t);
    w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(d.begin(), d.end()));
  }
  return w.serialize();
}

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// The Ollama file's projector is its twin's mmproj, tensor for tensor, and encodes `image` the
// same; its text view holds the twin's text tensors, byte for byte (so the logits after the
// image rows are the twin's too).
void expect_twins(const OllamaModel& m, const std::vector<std::string>& keys,
                  const std::string& image) {
  const std::string& arch = m.options.arch;
  // Ollama publishes Qwen2.5-VL as qwen25vl.
  EXPECT_EQ(inline_projector_arch(GgufFile::parse(m.file, ReadLayout::Raw)),
            arch == "qwen2vl" ? "qwen25vl" : arch);
  // The text view hides the tower (ollama_layout.h); only the raw file shows it.
  const GgufFile text = GgufFile::parse(m.file);
  EXPECT_EQ(inline_projector_arch(text), "");
  const GgufFile twin_text = GgufFile::parse(m.twin);
  ASSERT_EQ(text.tensors().size(), twin_text.tensors().size());
  for (const TensorInfo& t : twin_text.tensors()) {
    const TensorInfo* g = text.find_tensor(t.name);
    ASSERT_NE(g, nullptr) << t.name;
    EXPECT_TRUE(same_bytes(text.tensor_data(*g), twin_text.tensor_data(t))) << t.name;
  }

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
    EXPECT_TRUE(same_bytes(got.tensor_data(*g), want.tensor_data(t)));
  }
  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    ASSERT_NE(got.find(key), nullptr);
    ASSERT_NE(want.find(key), nullptr);
    if (std::holds_alternative<std::shared_ptr<Array>>(want.find(key)->v)) {
      EXPECT_EQ(got.get_array<float>(key), want.get_array<float>(key));  // mean, std
    } else {
      EXPECT_TRUE(got.find(key)->v == want.find(key)->v);
    }
  }

  std::ifstream in(std::filesystem::path(VKLLM_SOURCE_DIR) / "tests/reference/vision" / image,
                   std::ios::binary);
  const std::vector<uint8_t> png{std::istreambuf_iterator<char>(in), {}};
  const image::Image img = image::decode(png);
  vision::ImageEncoder from_file(GgufFile::parse(bytes), 1);
  vision::ImageEncoder from_mmproj(GgufFile::parse(m.mmproj), 1);
  const auto a = from_file.encode(img), b = from_mmproj.encode(img);
  ASSERT_FALSE(a.data.empty());
  EXPECT_EQ(a.data, b.data);
}

TEST(InlineProjector, Gemma3TowerInOllamasFileIsItsTwinsMmprojAndEncodesTheSame) {
  expect_twins(make_files("gemma3"),
               {"clip.projector_type", "clip.vision.image_size", "clip.vision.patch_size",
                "clip.vision.block_count", "clip.vision.projector.scale_factor"},
               "wide-300x200.png");
}

// Pixtral: the Q/K rows Ollama's file keeps in Hugging Face's order come out in llama.cpp's, and
// the [IMG_BREAK] embedding (the rows between image rows) is the text model's token row.
TEST(InlineProjector, Mistral3TowerInOllamasFileIsItsTwinsMmprojAndEncodesTheSame) {
  const OllamaModel m = make_files("mistral3");
  const GgufFile raw = GgufFile::parse(m.file, ReadLayout::Raw);
  const GgufFile mmproj = GgufFile::parse(m.mmproj, ReadLayout::Raw);
  ASSERT_NE(raw.find_tensor("v.blk.0.attn_q.weight"), nullptr);
  EXPECT_FALSE(same_bytes(raw.tensor_data(*raw.find_tensor("v.blk.0.attn_q.weight")),
                          mmproj.tensor_data(*mmproj.find_tensor("v.blk.0.attn_q.weight"))));
  EXPECT_EQ(raw.find_tensor("v.token_embd.img_break"), nullptr);
  EXPECT_NE(raw.find_tensor("mm.patch_merger.merging_layer.weight"), nullptr);
  expect_twins(
      m,
      {"clip.projector_type", "clip.use_silu", "clip.vision.image_size", "clip.vision.patch_size",
       "clip.vision.block_count", "clip.vision.attention.head_count",
       "clip.vision.spatial_merge_size", "clip.vision.attention.layer_norm_epsilon",
       "clip.vision.image_mean", "clip.vision.image_std"},
      "tall-90x130.png");
}

// Qwen2.5-VL: the two frames' kernels and the merger under Ollama's names come out as llama.cpp's,
// and the window pattern from the full-attention layers.
TEST(InlineProjector, Qwen25VlTowerInOllamasFileIsItsTwinsMmprojAndEncodesTheSame) {
  const OllamaModel m = make_files("qwen2vl");
  const GgufFile raw = GgufFile::parse(m.file, ReadLayout::Raw);
  EXPECT_NE(raw.find_tensor("v.patch_embd_1.weight"), nullptr);
  EXPECT_NE(raw.find_tensor("v.merger.mlp.0.weight"), nullptr);
  // (clip.vision.image_size differs: Ollama's file has none, llama.cpp's converter's default 560
  // is written; neither encoder reads it for this dynamic-size tower.)
  expect_twins(m,
               {"clip.projector_type", "clip.use_silu", "clip.vision.patch_size",
                "clip.vision.block_count", "clip.vision.embedding_length",
                "clip.vision.feed_forward_length", "clip.vision.attention.head_count",
                "clip.vision.spatial_merge_size", "clip.vision.n_wa_pattern",
                "clip.vision.projection_dim", "clip.vision.attention.layer_norm_epsilon",
                "clip.vision.image_mean", "clip.vision.image_std"},
               "wide-300x200.png");
  const std::string base =
      extract_error(make_files("qwen2vl", [](GgufWriter& w) {
                      w.set_i32s("qwen25vl.vision.fullatt_block_indexes", {1, 2});
                    }).file);
  EXPECT_NE(base.find("full-attention layers at an uneven spacing"), std::string::npos) << base;
}

// Qwen3-VL: Hugging Face's names, the Conv3D kernel, Q/K/V apart and the deepstack mergers by
// index come out as llama.cpp's converter writes them (both frames' kernels, attn_qkv, by layer).
TEST(InlineProjector, Qwen3VlTowerInOllamasFileIsItsTwinsMmprojAndEncodesTheSame) {
  const OllamaModel m = make_files("qwen3vl");
  const GgufFile raw = GgufFile::parse(m.file, ReadLayout::Raw);
  EXPECT_NE(raw.find_tensor("v.patch_embed.weight"), nullptr);
  EXPECT_NE(raw.find_tensor("v.blk.0.attn_k.weight"), nullptr);
  EXPECT_NE(raw.find_tensor("v.deepstack_merger.0.linear_fc2.bias"), nullptr);
  expect_twins(
      m,
      {"clip.projector_type", "clip.use_gelu", "clip.vision.image_size", "clip.vision.patch_size",
       "clip.vision.block_count", "clip.vision.embedding_length", "clip.vision.feed_forward_length",
       "clip.vision.attention.head_count", "clip.vision.spatial_merge_size",
       "clip.vision.projection_dim", "clip.vision.attention.layer_norm_epsilon",
       "clip.vision.image_mean", "clip.vision.image_std"},
      "tall-90x130.png");
  const std::string stray =
      extract_error(make_files("qwen3vl", [](GgufWriter& w) {
                      w.set_i32s("qwen3vl.vision.deepstack_visual_indexes", {});
                    }).file);
  EXPECT_NE(stray.find("no layer for it in vision.deepstack_visual_indexes"), std::string::npos)
      << stray;
}

// Gemma 4: the tower keeps llama.cpp's names in Ollama's file and gemma4.vision.* become
// clip.vision.* (224, mean 0 and std 1, the pooling); the audio conformer (a.*, mm.a.*) stays out
// of the text view and of the mmproj. A file whose clamp bounds are only packed in v.clamp_data
// (older converters) gives the same mmproj; one with audio but no vision tower reads as text and
// has no tower; a v.clamp_data of the wrong size is refused.
TEST(InlineProjector, Gemma4TowerInOllamasFileIsItsTwinsMmprojAndEncodesTheSame) {
  const OllamaModel m = make_files("gemma4", [](GgufWriter& w) {
    w.set_u32("gemma4.audio.block_count", 1);
    w.set_u32("gemma4.audio.embedding_length", 8);
    for (const char* name :
         {"a.blk.0.per_dim_scale.weight", "a.conv1d.0.weight", "mm.a.input_projection.weight"})
      w.add_tensor(name, TensorType::F32, {8}, std::vector<uint8_t>(32, 0));
  });
  const GgufFile raw = GgufFile::parse(m.file, ReadLayout::Raw);
  EXPECT_NE(raw.find_tensor("v.clamp_data"), nullptr);
  EXPECT_NE(raw.find_tensor("v.blk.1.ffn_down.output_max"), nullptr);
  const std::vector<std::string> keys{"clip.projector_type",
                                      "clip.vision.image_size",
                                      "clip.vision.patch_size",
                                      "clip.vision.embedding_length",
                                      "clip.vision.feed_forward_length",
                                      "clip.vision.projection_dim",
                                      "clip.vision.block_count",
                                      "clip.vision.attention.head_count",
                                      "clip.vision.attention.layer_norm_epsilon",
                                      "clip.vision.image_mean",
                                      "clip.vision.image_std",
                                      "clip.vision.projector.scale_factor"};
  expect_twins(m, keys, "wide-300x200.png");

  OllamaModel packed = m;
  packed.file = rebuilt_without(m.file, [](std::string_view name) {
    return name.ends_with(".input_min") || name.ends_with(".input_max") ||
           name.ends_with(".output_min") || name.ends_with(".output_max");
  });
  ASSERT_EQ(GgufFile::parse(packed.file, ReadLayout::Raw).find_tensor("v.blk.0.attn_q.input_min"),
            nullptr);
  expect_twins(packed, keys, "tall-90x130.png");

  const std::vector<uint8_t> audio_only = rebuilt_without(m.file, [](std::string_view name) {
    return name.starts_with("v.") || name.starts_with("gemma4.vision.") ||
           (name.starts_with("mm.") && !name.starts_with("mm.a."));
  });
  EXPECT_EQ(inline_projector_arch(GgufFile::parse(audio_only, ReadLayout::Raw)), "");
  const GgufFile text = GgufFile::parse(audio_only);
  EXPECT_EQ(text.translation().name, "ollama-gemma4");
  EXPECT_EQ(text.tensors().size(), GgufFile::parse(m.twin).tensors().size());
  EXPECT_NE(extract_error(audio_only).find("no gemma4.vision.* keys and v.* tensors"),
            std::string::npos);

  const std::string short_clamps = extract_error(
      make_files("gemma4", [](GgufWriter& w) {
        w.rename_tensor("v.clamp_data", "v.clamp_data_unused");
        w.add_tensor("v.clamp_data", TensorType::F32, {4}, std::vector<uint8_t>(16, 0));
      }).file);
  EXPECT_NE(short_clamps.find("has a v.clamp_data of 4 values, not 60 F32 ones for 2 layers"),
            std::string::npos)
      << short_clamps;
}

// llama.cpp's converter's permutation (LlamaModel.permute: per head, [2, d/2] -> [d/2, 2]) on
// 2 heads of 4 one-byte rows, and back.
TEST(InlineProjector, RopeRowsInterleaveEachHeadsHalvesAsLlamaCppsConverter) {
  const std::vector<uint8_t> hf{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<uint8_t> llama(8), back(8);
  permute_rope_rows(hf, llama, 8, 2, false);
  EXPECT_EQ(llama, (std::vector<uint8_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  permute_rope_rows(llama, back, 8, 2, true);
  EXPECT_EQ(back, hf);
  EXPECT_THROW(permute_rope_rows(hf, llama, 8, 3, false), LayoutError);
}

TEST(InlineProjector, FilesWithoutATowerOrWithDisagreeingKeysAreRefusedNamingWhy) {
  EXPECT_NE(
      extract_error(
          make_files("gemma3", [](GgufWriter& w) { w.erase("gemma3.vision.block_count"); }).file)
          .find("no gemma3.vision.* keys and v.* tensors"),
      std::string::npos);
  // 15 image tokens are no square number of pooled patches.
  const std::string odd = extract_error(make_files("gemma3", [](GgufWriter& w) {
                                          w.set_u32("gemma3.mm.tokens_per_image", 15);
                                        }).file);
  EXPECT_NE(odd.find("gemma3.mm.tokens_per_image 15 for 16 patches a side"), std::string::npos)
      << odd;
  const std::string no_width = extract_error(
      make_files("gemma3", [](GgufWriter& w) { w.erase("gemma3.vision.embedding_length"); }).file);
  EXPECT_NE(no_width.find("has no gemma3.vision.embedding_length"), std::string::npos) << no_width;
  // Pixtral settings the encoder would not follow.
  const std::string base = extract_error(make_files("mistral3", [](GgufWriter& w) {
                                           w.set_f32("mistral3.vision.rope.freq_base", 1e6f);
                                         }).file);
  EXPECT_NE(base.find("mistral3 file (Ollama's converter's layout) has a RoPE base of 1000000"),
            std::string::npos)
      << base;
  const std::string heads = extract_error(make_files("mistral3", [](GgufWriter& w) {
                                            w.set_u32("mistral3.vision.attention.key_length", 64);
                                          }).file);
  EXPECT_NE(heads.find("has heads 64 wide in a tower 128 wide with 4 heads"), std::string::npos)
      << heads;
}

}  // namespace
}  // namespace vkllm::gguf
