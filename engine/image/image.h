// A decoded picture for the vision encoders (issue 38): 8-bit RGB, rows top to bottom, no padding.
// Images with transparency are composited onto white, as Ollama does before preprocessing, so a
// transparent PNG and the same picture flattened give the model the same pixels.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace vkllm::image {

struct Image {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3

  const uint8_t* pixel(uint32_t x, uint32_t y) const { return &rgb[(size_t{y} * width + x) * 3]; }
};

// A picture that cannot be used: not an image, a format we do not read, corrupt or truncated
// data, or past the limits. The message says which, for the client's 400.
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a request may make us allocate. A compressed file of a few kB can declare a canvas of
// gigapixels, so the sizes are checked from the header before any pixel buffer exists.
struct ImageLimits {
  uint64_t max_bytes = 32ull << 20;  // the encoded file
  uint32_t max_side = 16384;         // width or height
  uint64_t max_pixels = 50'000'000;  // width * height (a 48-megapixel phone photo fits)
};

enum class ImageFormat { Jpeg, Png, Webp, Gif };

// Which format the bytes are, from their signature; throws ImageError for anything else.
ImageFormat detect_format(std::span<const uint8_t> bytes);
const char* format_name(ImageFormat format);

// JPEG (libjpeg-turbo), PNG (libpng), WebP (libwebp) or GIF (giflib); of an animation, the first
// frame. Throws ImageError, never crashes, on any input.
Image decode(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

}  // namespace vkllm::image
