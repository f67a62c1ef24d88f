#include "engine/vision/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vkllm::vision {

namespace {

constexpr int kPrecisionBits = 22;  // 32 bits less 8 for the pixel and 2 of headroom, as Pillow

double filter_weight(ResizeFilter filter, double x) {
  x = std::fabs(x);
  if (filter == ResizeFilter::Bilinear) return x < 1.0 ? 1.0 - x : 0.0;
  constexpr double a = -0.5;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// For each output position along one axis: the first input index, how many inputs, and their
// fixed-point weights (ksize slots each).
struct AxisCoefficients {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

AxisCoefficients axis_coefficients(int in_size, int out_size, ResizeFilter filter) {
  const double support_1 = filter == ResizeFilter::Bilinear ? 1.0 : 2.0;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);  // widen the filter only when shrinking
  const double support = support_1 * filterscale;
  AxisCoefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    // Truncation toward zero, then clamping, as Pillow computes the window.
    const int lo = std::max(0, static_cast<int>(center - support + 0.5));
    const int hi = std::min(in_size, static_cast<int>(center + support + 0.5));
    const int n = hi - lo;
    double total = 0.0;
    for (int i = 0; i < n; ++i) {
      w[i] = filter_weight(filter, (i + lo - center + 0.5) / filterscale);
      total += w[i];
    }
    for (int i = 0; i < n; ++i) {
      const double normalized = total != 0.0 ? w[i] / total : w[i];
      // Pillow rounds half away from zero by adding +-0.5 and truncating.
      const double fixed = normalized * (1 << kPrecisionBits) + (normalized < 0 ? -0.5 : 0.5);
      c.weights[static_cast<size_t>(o) * c.ksize + i] = static_cast<int32_t>(fixed);
    }
    c.first[o] = lo;
    c.count[o] = n;
  }
  return c;
}

uint8_t clip8(int32_t v) {
  const int32_t shifted = v >> kPrecisionBits;
  return static_cast<uint8_t>(std::clamp(shifted, 0, 255));
}

// One pass along x (horizontal) or y: pixels at (x, y) of a w x h RGB image.
image::Image resample_axis(const image::Image& src, uint32_t out_size, bool horizontal,
                           ResizeFilter filter) {
  const int in_size = static_cast<int>(horizontal ? src.width : src.height);
  const AxisCoefficients c = axis_coefficients(in_size, static_cast<int>(out_size), filter);
  image::Image dst;
  dst.width = horizontal ? out_size : src.width;
  dst.height = horizontal ? src.height : out_size;
  dst.rgb.resize(size_t{dst.width} * dst.height * 3);
  for (uint32_t y = 0; y < dst.height; ++y) {
    for (uint32_t x = 0; x < dst.width; ++x) {
      const uint32_t o = horizontal ? x : y;
      const int32_t* k = &c.weights[size_t{o} * c.ksize];
      int32_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1),
                        1 << (kPrecisionBits - 1)};
      for (int i = 0; i < c.count[o]; ++i) {
        const uint32_t at = static_cast<uint32_t>(c.first[o] + i);
        const uint8_t* p = horizontal ? src.pixel(at, y) : src.pixel(x, at);
        for (int ch = 0; ch < 3; ++ch) acc[ch] += p[ch] * k[i];
      }
      uint8_t* out = &dst.rgb[(size_t{y} * dst.width + x) * 3];
      for (int ch = 0; ch < 3; ++ch) out[ch] = clip8(acc[ch]);
    }
  }
  return dst;
}

}  // namespace

image::Image resize_pillow(const image::Image& src, uint32_t width, uint32_t height,
                           ResizeFilter filter) {
  if (width == 0 || height == 0 || width > 65536 || height > 65536 || src.width == 0 ||
      src.height == 0) {
    throw std::invalid_argument("resize: bad size");
  }
  image::Image out = src;
  if (width != src.width) out = resample_axis(out, width, true, filter);
  if (height != src.height) out = resample_axis(out, height, false, filter);
  return out;
}

image::Image letterbox(const image::Image& src, uint32_t side, ResizeFilter filter) {
  if (src.width == side && src.height == side) return src;
  // Single-precision scale and ceil, as llama.cpp computes the fitted size.
  const float scale = std::min(static_cast<float>(side) / static_cast<float>(src.width),
                               static_cast<float>(side) / static_cast<float>(src.height));
  const auto fitted = [&](uint32_t n) {
    const float scaled = std::ceil(static_cast<float>(n) * scale);
    return std::clamp(static_cast<uint32_t>(scaled), 1u, side);
  };
  const uint32_t w = fitted(src.width), h = fitted(src.height);
  const image::Image resized = resize_pillow(src, w, h, filter);
  image::Image out;
  out.width = out.height = side;
  out.rgb.assign(size_t{side} * side * 3, 0);
  const uint32_t x0 = (side - w) / 2, y0 = (side - h) / 2;
  for (uint32_t y = 0; y < h; ++y) {
    std::copy_n(resized.pixel(0, y), size_t{w} * 3, &out.rgb[(size_t{y + y0} * side + x0) * 3]);
  }
  return out;
}

std::vector<float> normalized_planes(const image::Image& img, const std::array<float, 3>& mean,
                                     const std::array<float, 3>& std) {
  const size_t plane = size_t{img.width} * img.height;
  std::vector<float> out(plane * 3);
  for (size_t i = 0; i < plane; ++i) {
    for (int c = 0; c < 3; ++c) {
      const float v = static_cast<float>(img.rgb[i * 3 + c]) / 255.0f;
      out[c * plane + i] = (v - mean[c]) / std[c];
    }
  }
  return out;
}

std::vector<float> tower_input(const VisionSpec& spec, const image::Image& img) {
  if (img.width == 0 || img.height == 0) throw std::invalid_argument("image encoder: empty image");
  // Gemma 3 (the one projector read so far): llama.cpp's bilinear filter and letterboxing.
  const image::Image square = letterbox(img, spec.image_size, ResizeFilter::Bilinear);
  return normalized_planes(square, spec.mean, spec.std);
}

}  // namespace vkllm::vision
