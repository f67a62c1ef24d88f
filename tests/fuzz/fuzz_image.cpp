// libFuzzer target for engine/image: any bytes decode to a well-formed picture or throw
// ImageError; the limits are small so the fuzzer explores headers instead of allocating.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/image/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const vkllm::image::ImageLimits limits{
      .max_bytes = 1 << 20, .max_side = 2048, .max_pixels = 1 << 20};
  try {
    const auto img = vkllm::image::decode(std::span(data, size), limits);
    if (img.rgb.size() != size_t{img.width} * img.height * 3) __builtin_trap();
  } catch (const vkllm::image::ImageError&) {
  }
  return 0;
}
