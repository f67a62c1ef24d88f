#include "engine/image/image.h"

#include <algorithm>
#include <string>

#include "engine/image/image_formats.h"

namespace vkllm::image {

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic, size_t at = 0) {
  return bytes.size() >= at + magic.size() &&
         std::equal(magic.begin(), magic.end(), bytes.begin() + static_cast<ptrdiff_t>(at),
                    [](char a, uint8_t b) { return static_cast<uint8_t>(a) == b; });
}

}  // namespace

ImageFormat detect_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\xFF\xD8\xFF")) return ImageFormat::Jpeg;
  if (starts_with(bytes, "\x89PNG\r\n\x1A\n")) return ImageFormat::Png;
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return ImageFormat::Webp;
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return ImageFormat::Gif;
  throw ImageError(bytes.empty() ? "the image is empty"
                                 : "unsupported image format (JPEG, PNG, WebP and GIF are read)");
}

const char* format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::Jpeg:
      return "JPEG";
    case ImageFormat::Png:
      return "PNG";
    case ImageFormat::Webp:
      return "WebP";
    case ImageFormat::Gif:
      return "GIF";
  }
  return "?";
}

Image decode(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  if (bytes.size() > limits.max_bytes) {
    throw ImageError("the image is " + std::to_string(bytes.size()) + " bytes, more than the " +
                     std::to_string(limits.max_bytes) + " allowed");
  }
  switch (detect_format(bytes)) {
    case ImageFormat::Jpeg:
      return detail::decode_jpeg(bytes, limits);
    case ImageFormat::Png:
      return detail::decode_png(bytes, limits);
    case ImageFormat::Webp:
      return detail::decode_webp(bytes, limits);
    case ImageFormat::Gif:
      return detail::decode_gif(bytes, limits);
  }
  throw ImageError("unsupported image format");
}

namespace detail {

void check_size(const char* format, uint64_t width, uint64_t height, const ImageLimits& limits) {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  if (width == 0 || height == 0) throw ImageError(std::string(format) + " image of size " + size);
  if (width > limits.max_side || height > limits.max_side) {
    throw ImageError(std::string(format) + " image of " + size + " pixels: a side may be " +
                     std::to_string(limits.max_side) + " at most");
  }
  if (width * height > limits.max_pixels) {
    throw ImageError(std::string(format) + " image of " + size + " pixels: more than the " +
                     std::to_string(limits.max_pixels) + " allowed");
  }
}

Image white_image(uint32_t width, uint32_t height) {
  Image img;
  img.width = width;
  img.height = height;
  img.rgb.assign(size_t{width} * height * 3, 255);
  return img;
}

void composite_rgba(std::span<const uint8_t> rgba, Image& out) {
  const size_t n = size_t{out.width} * out.height;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t a = rgba[i * 4 + 3];
    for (int c = 0; c < 3; ++c) {
      // Rounded a*c + (1-a)*white in 8 bits.
      out.rgb[i * 3 + c] =
          static_cast<uint8_t>((rgba[i * 4 + c] * a + 255 * (255 - a) + 127) / 255);
    }
  }
}

}  // namespace detail
}  // namespace vkllm::image
