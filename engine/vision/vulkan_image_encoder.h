// The image encoder of image_encoder.h on a Vulkan device: the same tower and projector from the
// same projector GGUF, recorded as one submission of the engine's kernels (engine/vulkan: the
// matmuls, layer/RMS norms, GELU, and the paged attention kernel with its causal mask off, over a
// scratch f16 K/V region that one image's tokens fill, as the bert encoder does).
//
// Gemma 3's average pooling is pool_rows' mean over "sequences": the patches are laid out in
// pooling-window order (each window's n_merge^2 patches contiguous, windows row-major), with the
// learned positions permuted alike. The ViT is indifferent to token order (full attention, no
// position in the attention itself), so this is the same computation.
//
// Pixtral: the same window order for its 2x2 patch merger (each merged token's four patches
// consecutive, so the merger is one product over rows of 4 x n_embd, its weight's columns
// permuted to match at load), with each patch's grid position given to the 2D RoPE kernel
// (shaders/rope_2d.comp). Its buffers grow to the largest image seen.
//
// Qwen2.5-VL: the tower's rows in its merge-unit and window order (qwen_vl.h), the 2D RoPE
// kernel in its halves mode, full-attention layers over the image as one sequence and windowed
// ones over a batch whose sequences are the windows (each its own blocks of the K/V region), the
// merger's MLP one product over rows of 4 x n_embd; the output rows put back in grid order.
//
// Gemma 4: gemma4_vision.h's Gemma4vVulkanTower.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/image/image.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/vision_spec.h"

namespace vkllm::vk {
class Context;
}

namespace vkllm::vision {

class Gemma4vVulkanTower;

class VulkanImageEncoder {
 public:
  // Reads and checks the projector (std::runtime_error naming what is wrong) and uploads its
  // weights to `context`'s device, which must outlive the encoder. A parsed in-memory file must
  // outlive it too.
  VulkanImageEncoder(vk::Context& context, gguf::GgufFile projector);
  ~VulkanImageEncoder();
  VulkanImageEncoder(const VulkanImageEncoder&) = delete;
  VulkanImageEncoder& operator=(const VulkanImageEncoder&) = delete;

  const VisionSpec& spec() const { return spec_; }
  // Planes as ImageEncoder::preprocess makes them (std::invalid_argument for another size). One
  // image at a time: the activations and K/V region are the encoder's own.
  ImageEmbeddings encode_pixels(const TowerPixels& pixels);
  ImageEmbeddings encode(const image::Image& img);

 private:
  struct Impl;
  void load_pixtral(const VisionWeights& w);
  ImageEmbeddings encode_pixtral(const TowerPixels& pixels);
  // Qwen2.5-VL and Qwen3-VL (vulkan_qwen_encoder.cpp).
  void load_qwen25vl(const VisionWeights& w);
  ImageEmbeddings encode_qwen25vl(const TowerPixels& pixels);
  gguf::GgufFile file_;
  VisionSpec spec_;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Gemma4vVulkanTower> gemma4v_;  // Gemma 4's tower (gemma4_vision.h)
};

}  // namespace vkllm::vision
