// Encoders for the image tests: fresh pictures written by the same well-kept libraries the
// decoders read with (libpng, libjpeg-turbo, libwebp and its muxer, giflib), so every test input
// is generated, not a committed binary.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace vkllm::image::test {

// w x h RGBA pixels of random colour; alpha 255 unless `alpha`, then random.
std::vector<uint8_t> random_rgba(uint32_t w, uint32_t h, std::mt19937& rng, bool alpha = false);

std::vector<uint8_t> encode_png(const std::vector<uint8_t>& rgba, uint32_t w, uint32_t h);
std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgba, uint32_t w, uint32_t h,
                                 int quality);
std::vector<uint8_t> encode_webp_lossless(const std::vector<uint8_t>& rgba, uint32_t w, uint32_t h);
// An animation of the given RGBA frames (each w x h).
std::vector<uint8_t> encode_webp_animation(const std::vector<std::vector<uint8_t>>& frames,
                                           uint32_t w, uint32_t h);

// A GIF of indexed frames over one global palette (RGB triples), each frame w x h at (0, 0);
// `transparent` >= 0 marks that index transparent in every frame; `interlace` writes rows in
// GIF's four passes.
struct GifFrame {
  std::vector<uint8_t> indices;
  int transparent = -1;
};
std::vector<uint8_t> encode_gif(const std::vector<uint8_t>& palette, uint32_t w, uint32_t h,
                                const std::vector<GifFrame>& frames, bool interlace = false);

}  // namespace vkllm::image::test
