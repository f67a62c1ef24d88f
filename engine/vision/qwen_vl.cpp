#include "engine/vision/qwen_vl.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vkllm::vision {

QwenVlLayout qwen_vl_layout(uint32_t grid_w, uint32_t grid_h, uint32_t window) {
  if (grid_w == 0 || grid_h == 0 || grid_w % 2 || grid_h % 2 || window == 0) {
    throw std::invalid_argument("qwen_vl_layout: a " + std::to_string(grid_w) + " x " +
                                std::to_string(grid_h) + " patch grid is not 2x2 units");
  }
  QwenVlLayout l;
  l.grid_w = grid_w;
  l.grid_h = grid_h;
  const uint32_t uw = grid_w / 2, uh = grid_h / 2, n = grid_w * grid_h;
  l.order.reserve(n);
  l.pos.reserve(2 * size_t{n});
  l.unit_of.assign(size_t{uw} * uh, 0);
  l.windows.push_back(0);
  uint32_t unit = 0;
  for (uint32_t wy = 0; wy < uh; wy += window)
    for (uint32_t wx = 0; wx < uw; wx += window) {
      const uint32_t h = std::min(window, uh - wy), w = std::min(window, uw - wx);
      for (uint32_t dy = 0; dy < h; ++dy)
        for (uint32_t dx = 0; dx < w; ++dx, ++unit) {
          const uint32_t uy = wy + dy, ux = wx + dx;
          l.unit_of[size_t{uy} * uw + ux] = unit;
          for (uint32_t sy = 0; sy < 2; ++sy)
            for (uint32_t sx = 0; sx < 2; ++sx) {
              const uint32_t py = 2 * uy + sy, px = 2 * ux + sx;
              l.order.push_back(py * grid_w + px);
              l.pos.push_back(py);
              l.pos.push_back(px);
            }
        }
      l.windows.push_back(4 * unit);
    }
  return l;
}

QwenVlLayout qwen_vl_layout(const VisionSpec& s, uint32_t width, uint32_t height) {
  const uint32_t gw = width / s.patch_size, gh = height / s.patch_size;
  return qwen_vl_layout(gw, gh, s.window ? s.window : std::max(1u, std::max(gw, gh) / 2));
}

void rope_vision(const RopeVisionArgs& a, uint32_t begin, uint32_t end) {
  const uint32_t half = a.head_dim / 2, quarter = a.head_dim / 4;
  // Per-pair frequencies as ggml's rope cache builds them: a running single-precision product of
  // theta^(-2 / (head_dim / 2)), restarted at each section.
  std::vector<float> freq(quarter);
  const float step = std::pow(a.theta, -2.0f / static_cast<float>(half));
  float f = 1.0f;
  for (uint32_t p = 0; p < quarter; ++p, f *= step) freq[p] = f;
  for (uint32_t t = begin; t < end; ++t) {
    const auto row = static_cast<float>(a.pos[2 * size_t{t}]);
    const auto col = static_cast<float>(a.pos[2 * size_t{t} + 1]);
    for (uint32_t h = 0; h < a.n_head; ++h) {
      float* x = a.x + size_t{t} * a.stride + size_t{h} * a.head_dim;
      for (uint32_t p = 0; p < half; ++p) {
        const float angle = p < quarter ? row * freq[p] : col * freq[p - quarter];
        const float c = std::cos(angle), s = std::sin(angle);
        const float x0 = x[p], x1 = x[p + half];
        x[p] = x0 * c - x1 * s;
        x[p + half] = x0 * s + x1 * c;
      }
    }
  }
}

std::vector<float> qwen3vl_positions(const float* table, uint32_t side, uint32_t n_embd,
                                     const QwenVlLayout& layout) {
  const uint32_t W = layout.grid_w, H = layout.grid_h;
  // ggml's align-corners scale factors and source coordinates, in float as there.
  auto scale = [side](uint32_t out) {
    return out > 1 && side > 1 ? float(out - 1) / float(side - 1) : float(out) / float(side);
  };
  const float sx = scale(W), sy = scale(H);
  std::vector<float> out(layout.order.size() * size_t{n_embd});
  for (size_t r = 0; r < layout.order.size(); ++r) {
    const uint32_t py = layout.order[r] / W, px = layout.order[r] % W;
    const float y = float(py) / sy, x = float(px) / sx;
    const auto clamp = [side](int64_t v) { return std::clamp<int64_t>(v, 0, int64_t{side} - 1); };
    const int64_t y0 = clamp(int64_t(std::floor(y))), y1 = clamp(int64_t(std::floor(y)) + 1);
    const int64_t x0 = clamp(int64_t(std::floor(x))), x1 = clamp(int64_t(std::floor(x)) + 1);
    const float dy = std::clamp(y - float(y0), 0.0f, 1.0f),
                dx = std::clamp(x - float(x0), 0.0f, 1.0f);
    const float* a = table + size_t(y0 * side + x0) * n_embd;
    const float* b = table + size_t(y0 * side + x1) * n_embd;
    const float* c = table + size_t(y1 * side + x0) * n_embd;
    const float* d = table + size_t(y1 * side + x1) * n_embd;
    float* o = out.data() + r * n_embd;
    for (uint32_t i = 0; i < n_embd; ++i)
      o[i] =
          a[i] * (1 - dx) * (1 - dy) + b[i] * dx * (1 - dy) + c[i] * (1 - dx) * dy + d[i] * dx * dy;
  }
  return out;
}

}  // namespace vkllm::vision
