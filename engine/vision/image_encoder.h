// An image encoder: a vision tower and its projector loaded from a projector GGUF (llama.cpp's
// mmproj layout, engine/vision/vision_spec.h), turning a decoded image into the rows of floats
// the text model takes in place of the image's placeholder tokens. Separate from the text runner:
// it owns its weights (the mapped file) and runs on the CPU backend's kernels.
//
// Gemma 3: the image is letterboxed to the tower's square and normalised (image_preprocess.h),
// cut into patches (a convolution of stride patch_size), given learned positions, run through the
// SigLIP ViT (pre-LN, full attention, GELU MLP) and its post-LN, average-pooled n_merge x n_merge,
// RMS-normed and projected to the text width: 256 rows of the text width for the published
// models.
//
// Pixtral (Mistral 3): the image is resized to its own size in multiples of patch_size x n_merge,
// cut into patches, RMS-normed, run through a ViT with RMS norms, 2D RoPE (rope_2d.h) in full
// attention and SiLU-gated FFNs, RMS-normed again, its n_merge x n_merge neighbours concatenated
// and merged by a linear layer, then a GELU MLP to the text width; an [IMG_BREAK] row (the
// projector's embedding of that token) follows each row of merged patches but the last, as
// llama.cpp's graph lays the image's rows out.
//
// Gemma 4: engine/vision/gemma4_vision.h.
//
// Qwen2.5-VL: resized as Pixtral (its own budget), cut into patches by the sum of the two frames'
// kernels, laid out by merge unit and window (qwen_vl.h), run through a ViT with RMS norms, 2D
// RoPE, window attention (full in every n_wa_pattern-th layer) and SiLU-gated FFNs with biases,
// RMS-normed, each 2x2 unit merged by a GELU MLP to the text width: one row per unit, row-major.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/image/image.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/vision_spec.h"

namespace vkllm::cpu {
class ThreadPool;
}

namespace vkllm::vision {

class Gemma4vCpuTower;

struct ImageEmbeddings {
  uint32_t n_tokens = 0;
  uint32_t n_embd = 0;
  std::vector<float> data;  // n_tokens rows of n_embd
  std::span<const float> row(uint32_t t) const {
    return {data.data() + size_t{t} * n_embd, n_embd};
  }
};

// Pixtral's image rows: the merged patches (`out_h` rows of `out_w`, row-major, text width each)
// with an [IMG_BREAK] row (`img_break`) after every row but the last, as llama.cpp lays them out.
// Both encoders end with it.
ImageEmbeddings pixtral_rows_with_breaks(std::span<const float> merged, uint32_t out_w,
                                         uint32_t out_h, std::span<const float> img_break);

class ImageEncoder {
 public:
  // Maps and checks the projector file (std::runtime_error naming what is wrong). `threads`: the
  // encoder's own CPU thread pool size (0: ThreadPool::default_threads()).
  explicit ImageEncoder(const std::filesystem::path& projector, unsigned threads = 0);
  // The same from a file already open (a parsed in-memory image must outlive the encoder).
  explicit ImageEncoder(gguf::GgufFile projector, unsigned threads = 0);
  ~ImageEncoder();
  ImageEncoder(const ImageEncoder&) = delete;
  ImageEncoder& operator=(const ImageEncoder&) = delete;

  const VisionSpec& spec() const { return spec_; }

  // The normalised channel planes the tower reads (tower_input()).
  TowerPixels preprocess(const image::Image& img) const;
  // preprocess() then encode_pixels().
  ImageEmbeddings encode(const image::Image& img);
  // From planes as preprocess() makes them (std::invalid_argument for a size the tower does not
  // take). One image at a time (the thread pool and matmul scratch are the encoder's own).
  ImageEmbeddings encode_pixels(const TowerPixels& pixels);

 private:
  struct Impl;
  void load_pixtral(const VisionWeights& w);
  ImageEmbeddings encode_pixtral(const TowerPixels& pixels);
  void load_qwen25vl(const VisionWeights& w);
  ImageEmbeddings encode_qwen25vl(const TowerPixels& pixels);
  gguf::GgufFile file_;
  VisionSpec spec_;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Gemma4vCpuTower> gemma4v_;  // Gemma 4's tower (gemma4_vision.h), on impl_'s pool
};

}  // namespace vkllm::vision
