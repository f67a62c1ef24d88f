// What the kernels before a tensor-core GEMM do for it: the GLU summing a split-K gate|up
// product's partials unsummed (MatmulKernels::SplitParts), and the f16 rows the GLU and the
// RMSNorm write as the GEMM's input. Against scalar references on fresh random inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/vulkan/ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

using vk::BufferSlice;
namespace ops = vk::ops;

vk::Arena make_arena() {
  return vk::Arena(vk_context().device(), "split consumers test", 64 << 20);
}

// Partials laid out as a split-K GEMM leaves them: `splits` blocks of rows x ld floats.
struct Partials {
  uint32_t splits, rows, ld, stride;
  std::vector<float> data;
  Partials(SeededRng& rng, uint32_t splits_, uint32_t rows_, uint32_t width, float range)
      : splits(splits_), rows(rows_), ld(width + 4 * (1 + rng.below(4))), stride(rows * ld + 8) {
    data = random_vector(rng, size_t(splits) * stride, -range, range);
  }
  // The reduction pass's sum of element i of row r.
  float sum(uint32_t r, uint32_t i) const {
    float s = 0.f;
    for (uint32_t k = 0; k < splits; ++k) s += data[size_t(k) * stride + size_t(r) * ld + i];
    return s;
  }
};

std::vector<float> f16_rows(BufferSlice s, size_t n) {
  const std::vector<uint16_t> bits = from_device<uint16_t>(s, n);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(f16_value(bits[i]));
  return v;
}

std::vector<float> rounded_f16(const std::vector<float>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = round_f16(v[i]);
  return r;
}

TEST(SplitConsumers, RmsNormWritesF16Rows) {
  if (!vk_context().device().caps().subgroup_arithmetic())
    GTEST_SKIP() << "the f16 output needs subgroup arithmetic";
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (uint32_t n : {64u, 2048u + 32u * rng.below(8), 4096u}) {
    for (bool residual : {false, true}) {
      vk::Arena arena = make_arena();
      const uint32_t rows = 1 + rng.below(5);
      auto x = random_vector(rng, size_t(n) * rows, -2.f, 2.f);
      auto r = random_vector(rng, size_t(n) * rows);
      auto w = random_vector(rng, n, 0.5f, 1.5f);
      const float eps = 1e-5f;
      BufferSlice dx = to_device(arena, x), dr = to_device(arena, r), dw = to_device(arena, w);
      BufferSlice dy = device_filled<float>(arena, size_t(n) * rows);
      BufferSlice dh = device_filled<uint16_t>(arena, size_t(n) * rows);
      run([&](vk::CommandRecorder& rec) {
        ops::rms_norm(rec, pc,
                      {.x = dx,
                       .residual = residual ? dr : BufferSlice{},
                       .weight = dw,
                       .y = dy,
                       .n = n,
                       .n_rows = rows,
                       .eps = eps,
                       .f16 = dh});
      });
      std::vector<float> want_x = x, want_y(x.size());
      for (uint32_t row = 0; row < rows; ++row) {
        double ss = 0;
        for (uint32_t i = 0; i < n; ++i) {
          float& v = want_x[size_t(row) * n + i];
          if (residual) v += r[size_t(row) * n + i];
          ss += double(v) * v;
        }
        const double inv = 1.0 / std::sqrt(ss / n + eps);
        for (uint32_t i = 0; i < n; ++i)
          want_y[size_t(row) * n + i] = float(want_x[size_t(row) * n + i] * inv * w[i]);
      }
      SCOPED_TRACE("n=" + std::to_string(n) + " rows=" + std::to_string(rows) +
                   " residual=" + std::to_string(residual));
      EXPECT_TRUE(near_all(from_device<float>(dx, x.size()), want_x, 0, 0));
      const std::vector<float> y = from_device<float>(dy, want_y.size());
      EXPECT_TRUE(near_all(y, want_y, 1e-5, 1e-4));
      // The f16 rows are the f32 output rounded (to within one f16 step: the GPU picks the
      // rounding).
      EXPECT_TRUE(near_all(f16_rows(dh, y.size()), rounded_f16(y), 1e-7, 1e-3));
    }
  }
}

TEST(SplitConsumers, GluSumsGateAndUpPartialsAndWritesF16Rows) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (uint32_t n : {2u, 256u, 1000u + 2u * rng.below(50)}) {
    for (uint32_t splits : {1u, 2u, 3u + rng.below(3)}) {
      for (bool f16 : {false, true}) {
        vk::Arena arena = make_arena();
        const uint32_t rows = 1 + rng.below(5);
        // Each partial row holds [gate (n) | up (n)], as a stacked gate|up product writes it.
        const Partials parts(rng, splits, rows, 2 * n, 3.f);
        BufferSlice dp = to_device(arena, parts.data);
        BufferSlice out = device_filled<float>(arena, size_t(n) * rows);
        BufferSlice dh = f16 ? device_filled<uint16_t>(arena, size_t(n) * rows) : BufferSlice{};
        run([&](vk::CommandRecorder& rec) {
          ops::glu(rec, pc,
                   {.gate = dp,
                    .up = dp,
                    .out = out,
                    .n = n,
                    .n_rows = rows,
                    .act = ops::GluActivation::Silu,
                    .gate_stride = parts.ld,
                    .up_stride = parts.ld,
                    .gate_off = 0,
                    .up_off = n,
                    .splits = splits,
                    .split_stride = parts.stride,
                    .f16 = dh});
        });
        std::vector<float> want(size_t(n) * rows);
        for (uint32_t r = 0; r < rows; ++r)
          for (uint32_t i = 0; i < n; ++i) {
            const double g = parts.sum(r, i), u = parts.sum(r, n + i);
            want[size_t(r) * n + i] = float(g / (1 + std::exp(-g)) * u);
          }
        SCOPED_TRACE("n=" + std::to_string(n) + " rows=" + std::to_string(rows) +
                     " splits=" + std::to_string(splits) + " f16=" + std::to_string(f16));
        const std::vector<float> got = from_device<float>(out, want.size());
        EXPECT_TRUE(near_all(got, want, 1e-5, 1e-5));
        if (f16) {
          EXPECT_TRUE(near_all(f16_rows(dh, got.size()), rounded_f16(got), 1e-7, 1e-3));
        }
      }
    }
  }
}

}  // namespace
}  // namespace vkllm::test
