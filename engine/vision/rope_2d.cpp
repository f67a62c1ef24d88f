#include "engine/vision/rope_2d.h"

#include <cmath>
#include <vector>

namespace vkllm::vision {

void rope_2d(const Rope2dArgs& a, uint32_t begin, uint32_t end) {
  const uint32_t half = a.head_dim / 2, pairs = half / 2;
  // The per-pair frequencies, in single precision as ggml's rope cache computes them.
  std::vector<float> freq(pairs);
  const float step = std::pow(a.theta, -2.0f / static_cast<float>(half));
  const float col_scale = std::pow(a.theta, -2.0f / static_cast<float>(a.head_dim));
  float f = 1.0f;
  for (uint32_t j = 0; j < pairs; ++j, f *= step) freq[j] = f;
  for (uint32_t t = begin; t < end; ++t) {
    const auto row = static_cast<float>(t / a.grid_width);
    const auto col = static_cast<float>(t % a.grid_width);
    for (uint32_t h = 0; h < a.n_head; ++h) {
      float* x = a.x + size_t{t} * a.stride + size_t{h} * a.head_dim;
      for (uint32_t part = 0; part < 2; ++part) {
        float* v = x + part * half;
        for (uint32_t j = 0; j < pairs; ++j) {
          const float angle = part == 0 ? row * freq[j] : col * col_scale * freq[j];
          const float c = std::cos(angle), s = std::sin(angle);
          const float x0 = v[2 * j], x1 = v[2 * j + 1];
          v[2 * j] = x0 * c - x1 * s;
          v[2 * j + 1] = x0 * s + x1 * c;
        }
      }
    }
  }
}

}  // namespace vkllm::vision
