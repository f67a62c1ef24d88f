// The pixels a vision tower reads, made from a decoded image exactly as llama.cpp's mtmd makes
// them (so embeddings match it on the same file): a Pillow-compatible resampling (separable,
// 22-bit fixed-point coefficients, horizontal pass first, each pass skipped when its side keeps
// its size), letterboxing onto black, then x / 255 normalised with the model's mean and std.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/image/image.h"
#include "engine/vision/vision_spec.h"

namespace vkllm::vision {

enum class ResizeFilter { Bilinear, Bicubic };

// Resamples to width x height (both > 0 and at most 65536, else std::invalid_argument) with
// Pillow's filter of that name (bicubic with a = -0.5, as Pillow).
image::Image resize_pillow(const image::Image& src, uint32_t width, uint32_t height,
                           ResizeFilter filter);

// Fits the image into a side x side square keeping its aspect ratio (the scaled size rounded
// up, as llama.cpp's PAD_CEIL), centred on black; an image already that size is copied.
image::Image letterbox(const image::Image& src, uint32_t side, ResizeFilter filter);

// Channel planes (R, G, B; rows top to bottom), each value (v / 255 - mean[c]) / std[c].
std::vector<float> normalized_planes(const image::Image& img, const std::array<float, 3>& mean,
                                     const std::array<float, 3>& std);

// What the tower of `spec` reads for `img` (3 planes of image_size^2), as llama.cpp prepares it
// for the projector type (Gemma 3: bilinear, letterboxed). std::invalid_argument for an empty
// image.
std::vector<float> tower_input(const VisionSpec& spec, const image::Image& img);

}  // namespace vkllm::vision
