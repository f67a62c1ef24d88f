// The pixels a vision tower reads, made from a decoded image exactly as llama.cpp's mtmd makes
// them (so embeddings match it on the same file): a Pillow-compatible resampling (separable,
// 22-bit fixed-point coefficients, horizontal pass first, each pass skipped when its side keeps
// its size), letterboxing onto black, then x / 255 normalised with the model's mean and std.
// Gemma 3: bilinear into its square; Pixtral: bicubic into the image's own aligned size
// (vision_spec.h tower_size), letterboxed the same way when the aspect ratio moved.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/image/image.h"
#include "engine/vision/vision_spec.h"

namespace vkllm::vision {

enum class ResizeFilter { Bilinear, Bicubic };

// Resamples to width x height (both > 0 and at most 65536, else std::invalid_argument) with
// Pillow's filter of that name (bicubic with a = -0.5, as Pillow).
image::Image resize_pillow(const image::Image& src, uint32_t width, uint32_t height,
                           ResizeFilter filter);

// Fits the image into width x height keeping its aspect ratio (the scaled size rounded up, as
// llama.cpp's PAD_CEIL), centred on black; an image already that size is copied.
image::Image letterbox(const image::Image& src, uint32_t width, uint32_t height,
                       ResizeFilter filter);
inline image::Image letterbox(const image::Image& src, uint32_t side, ResizeFilter filter) {
  return letterbox(src, side, side, filter);
}

// Channel planes (R, G, B; rows top to bottom), each value (v / 255 - mean[c]) / std[c].
std::vector<float> normalized_planes(const image::Image& img, const std::array<float, 3>& mean,
                                     const std::array<float, 3>& std);

// What a tower reads: 3 channel planes of width x height.
struct TowerPixels {
  uint32_t width = 0, height = 0;
  std::vector<float> planes;
};

// What the tower of `spec` reads for `img`, as llama.cpp prepares it for the projector type
// (Gemma 3: bilinear, letterboxed into image_size^2; Pixtral: bicubic, at tower_size()).
// std::invalid_argument for an empty image.
TowerPixels tower_input(const VisionSpec& spec, const image::Image& img);

// std::invalid_argument unless `pixels` is a size the tower of `spec` reads: Gemma 3's square,
// or (Pixtral) sides that are nonzero multiples of patch_size x n_merge; 3 planes of it.
void check_tower_pixels(const VisionSpec& spec, const TowerPixels& pixels);

// The patches of `pixels` as rows of 3 x patch x patch values in the patch kernel's order
// (channel, row, column), so the stride-patch convolution is one matmul; patch order[i] of the
// row-major grid is row i (all of them in grid order when `order` is empty).
std::vector<float> patch_rows(const TowerPixels& pixels, uint32_t patch,
                              std::span<const uint32_t> order = {});

}  // namespace vkllm::vision
