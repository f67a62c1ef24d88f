// PNG through libpng's simplified API (png_image), which does its own error recovery and reports
// failures in png_image::message: palette, grey, 16-bit and alpha all come out as 8-bit RGBA.
#include <png.h>

#include <string>
#include <vector>

#include "engine/image/image_formats.h"

namespace vkllm::image::detail {

namespace {

struct PngImage {
  png_image image{};
  PngImage() { image.version = PNG_IMAGE_VERSION; }
  ~PngImage() { png_image_free(&image); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
};

}  // namespace

Image decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  PngImage png;
  if (!png_image_begin_read_from_memory(&png.image, bytes.data(), bytes.size())) {
    throw ImageError(std::string("invalid PNG: ") + png.image.message);
  }
  check_size("PNG", png.image.width, png.image.height, limits);
  png.image.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> rgba(PNG_IMAGE_SIZE(png.image));
  if (!png_image_finish_read(&png.image, nullptr, rgba.data(), 0, nullptr)) {
    throw ImageError(std::string("invalid PNG: ") + png.image.message);
  }
  Image img = white_image(png.image.width, png.image.height);
  composite_rgba(rgba, img);
  return img;
}

}  // namespace vkllm::image::detail
