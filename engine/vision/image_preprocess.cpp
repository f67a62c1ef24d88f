#include "engine/vision/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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

image::Image letterbox(const image::Image& src, uint32_t width, uint32_t height,
                       ResizeFilter filter) {
  if (src.width == width && src.height == height) return src;
  // Single-precision scale and ceil, as llama.cpp computes the fitted size.
  const float scale = std::min(static_cast<float>(width) / static_cast<float>(src.width),
                               static_cast<float>(height) / static_cast<float>(src.height));
  const auto fitted = [&](uint32_t n, uint32_t limit) {
    const float scaled = std::ceil(static_cast<float>(n) * scale);
    return std::clamp(static_cast<uint32_t>(scaled), 1u, limit);
  };
  const uint32_t w = fitted(src.width, width), h = fitted(src.height, height);
  const image::Image resized = resize_pillow(src, w, h, filter);
  image::Image out;
  out.width = width;
  out.height = height;
  out.rgb.assign(size_t{width} * height * 3, 0);
  const uint32_t x0 = (width - w) / 2, y0 = (height - h) / 2;
  for (uint32_t y = 0; y < h; ++y) {
    std::copy_n(resized.pixel(0, y), size_t{w} * 3, &out.rgb[(size_t{y + y0} * width + x0) * 3]);
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

TowerPixels tower_input(const VisionSpec& spec, const image::Image& img) {
  if (img.width == 0 || img.height == 0) throw std::invalid_argument("image encoder: empty image");
  // llama.cpp's filters: bilinear for Gemma 3, bicubic for Pixtral.
  const TowerSize size = tower_size(spec, img.width, img.height);
  const ResizeFilter filter = spec.dynamic() ? ResizeFilter::Bicubic : ResizeFilter::Bilinear;
  const image::Image fitted = letterbox(img, size.width, size.height, filter);
  return {size.width, size.height, normalized_planes(fitted, spec.mean, spec.std)};
}

void check_tower_pixels(const VisionSpec& spec, const TowerPixels& px) {
  const uint32_t align = spec.patch_size * (spec.dynamic() ? spec.n_merge : 1);
  const bool size_ok = spec.dynamic() ? px.width > 0 && px.height > 0 && px.width % align == 0 &&
                                            px.height % align == 0
                                      : px.width == spec.image_size && px.height == spec.image_size;
  if (!size_ok || px.planes.size() != size_t{3} * px.width * px.height) {
    throw std::invalid_argument(
        "image encoder: " + std::to_string(px.width) + " x " + std::to_string(px.height) +
        " pixels (" + std::to_string(px.planes.size()) + " values) is not a size this tower reads");
  }
}

std::vector<float> patch_rows(const TowerPixels& px, uint32_t P, std::span<const uint32_t> order) {
  const uint32_t W = px.width, H = px.height, grid_w = W / P;
  const uint32_t n = order.empty() ? grid_w * (H / P) : static_cast<uint32_t>(order.size());
  const uint32_t taps = 3 * P * P;
  std::vector<float> rows(size_t{n} * taps);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t p = order.empty() ? i : order[i];
    const uint32_t py = p / grid_w, px_ = p % grid_w;
    float* row = &rows[size_t{i} * taps];
    for (uint32_t c = 0; c < 3; ++c)
      for (uint32_t ky = 0; ky < P; ++ky)
        std::copy_n(&px.planes[(size_t{c} * H + py * P + ky) * W + px_ * P], P,
                    row + (size_t{c} * P + ky) * P);
  }
  return rows;
}

}  // namespace vkllm::vision
