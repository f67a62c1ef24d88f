// A vision model's images on their way into its scheduler (issue 38): the projector's image
// encoder, on the model's Vulkan device (vision::VulkanImageEncoder) or the CPU backend's kernels
// (vision::ImageEncoder), run on the model's engine thread when a prefill chunk first reaches an
// image, so it never races the text runner for the device. The rows of the last few images are
// kept by content hash: a conversation's next turn about the same picture, or another request
// sending it, encodes nothing (and its prefill finds the image's tokens in the prefix cache).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/image/image.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_prompt.h"
#include "engine/vision/vulkan_image_encoder.h"

namespace vkllm::vk {
class Context;
}

namespace vkllm::sched {

class ImageInputs {
 public:
  // `projector`: the projector GGUF's bytes. On `context`'s device, or the CPU with `threads`
  // threads (0: the default) when it is null. Throws std::runtime_error naming what the encoder
  // cannot use, or when its output is not `text_embd` wide (the text model's n_embd_inp():
  // Qwen3-VL's deepstack slices follow each row's embedding).
  ImageInputs(std::vector<uint8_t> projector, vk::Context* context, uint32_t text_embd,
              unsigned threads = 0);
  ~ImageInputs();
  ImageInputs(const ImageInputs&) = delete;
  ImageInputs& operator=(const ImageInputs&) = delete;

  const vision::ImageLayout& layout() const { return layout_; }
  // The image's rows (layout().n_tokens x text width), from the cache or the encoder. Engine
  // thread only.
  std::shared_ptr<const std::vector<float>> encode(const image::Image& picture,
                                                   const std::string& hash);
  uint64_t images_encoded() const { return encoded_; }  // encoder runs (cache misses)

 private:
  static constexpr size_t kCachedImages = 16;
  std::vector<uint8_t> bytes_;  // the parsed projector's storage
  std::unique_ptr<vision::ImageEncoder> cpu_;
  std::unique_ptr<vision::VulkanImageEncoder> gpu_;
  vision::ImageLayout layout_;
  std::list<std::pair<std::string, std::shared_ptr<const std::vector<float>>>> cache_;  // MRU first
  uint64_t encoded_ = 0;
};

// The token id row i of an image takes in a sequence: negative, so never a vocabulary id,
// and from the image's content hash, so blocks holding different pictures hash apart.
int32_t image_token_id(std::string_view hash, uint32_t i);

}  // namespace vkllm::sched
