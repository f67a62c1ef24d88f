// Pixtral's 2D rotary position embedding (llama.cpp's build_rope_2d with interleaved
// frequencies): a patch at (row, col) of a grid `grid_width` patches wide rotates each head's
// first half by its row and its second half by its column. Within a half of h = head_dim / 2
// values, pair (2j, 2j+1) turns by
//   row half:    row * theta^(-2j / h)
//   column half: col * theta^(-2 / head_dim) * theta^(-2j / h)
// which is HF Pixtral's frequencies theta^(-2k / head_dim), the even k for rows and the odd for
// columns. The Vulkan kernel (shaders/rope_2d.comp) computes the same angles.
#pragma once

#include <cstdint>

namespace vkllm::vision {

struct Rope2dArgs {
  float* x = nullptr;  // token t, head h at x + t * stride + h * head_dim, rotated in place
  uint32_t stride = 0;
  uint32_t n_tokens = 0;  // row-major patches: token t is at (t / grid_width, t % grid_width)
  uint32_t n_head = 0;
  uint32_t head_dim = 0;  // a multiple of 4
  uint32_t grid_width = 0;
  float theta = 10000.0f;
};

// Rotates tokens [begin, end).
void rope_2d(const Rope2dArgs& a, uint32_t begin, uint32_t end);

}  // namespace vkllm::vision
