#include "server/scheduler/image_inputs.h"

#include <stdexcept>

namespace vkllm::sched {

ImageInputs::ImageInputs(std::vector<uint8_t> projector, vk::Context* context, uint32_t text_embd,
                         unsigned threads)
    : bytes_(std::move(projector)) {
  gguf::GgufFile file = gguf::GgufFile::parse(bytes_);
  if (context) {
    gpu_ = std::make_unique<vision::VulkanImageEncoder>(*context, std::move(file));
  } else {
    cpu_ = std::make_unique<vision::ImageEncoder>(std::move(file), threads);
  }
  const vision::VisionSpec& spec = gpu_ ? gpu_->spec() : cpu_->spec();
  if (spec.out_embd() != text_embd)
    throw std::runtime_error("the projector's output is " + std::to_string(spec.out_embd()) +
                             " wide, the text model's image inputs " + std::to_string(text_embd));
  layout_ = vision::image_layout(spec);
}

ImageInputs::~ImageInputs() = default;

std::shared_ptr<const std::vector<float>> ImageInputs::encode(const image::Image& picture,
                                                              const std::string& hash) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->first != hash) continue;
    cache_.splice(cache_.begin(), cache_, it);
    return cache_.front().second;
  }
  vision::ImageEmbeddings e = gpu_ ? gpu_->encode(picture) : cpu_->encode(picture);
  ++encoded_;
  auto rows = std::make_shared<const std::vector<float>>(std::move(e.data));
  cache_.emplace_front(hash, rows);
  if (cache_.size() > kCachedImages) cache_.pop_back();
  return rows;
}

int32_t image_token_id(std::string_view hash, uint32_t i) {
  // FNV-1a over the hash text, then a splitmix64 finaliser with the row index mixed in.
  uint64_t h = 1469598103934665603ull;
  for (const char c : hash) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  h ^= (uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  // [-2^31, -2]: negative and never -1 (vision::kImageToken, the unfilled placeholder).
  return static_cast<int32_t>(-2 - static_cast<int64_t>(h % 0x7FFFFFFFull));
}

}  // namespace vkllm::sched
