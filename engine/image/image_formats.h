// The per-format decoders behind image::decode (image.h), each over a well-kept library, and the
// checks they share. Internal to engine/image.
#pragma once

#include <cstdint>
#include <span>

#include "engine/image/image.h"

namespace vkllm::image::detail {

// Throws ImageError unless a width x height picture is within the limits.
void check_size(const char* format, uint64_t width, uint64_t height, const ImageLimits& limits);

// An image of the given size, every pixel white (what transparency is composited onto).
Image white_image(uint32_t width, uint32_t height);

// RGBA rows (width * 4 bytes each) onto `out`'s white, by each pixel's alpha.
void composite_rgba(std::span<const uint8_t> rgba, Image& out);

Image decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits);
Image decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits);
Image decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits);
Image decode_gif(std::span<const uint8_t> bytes, const ImageLimits& limits);

}  // namespace vkllm::image::detail
