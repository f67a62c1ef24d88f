// The int8-dot tests' shared pieces: activations quantized to q8 blocks on the GPU
// (MatmulKernels::record_quantize_q8) and read back for the CPU references.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/engine/matmul_test_support.h"

namespace vkllm::matmul_test {

inline bool int8_dot_available() {
  return context().caps().integer_dot_product && context().caps().subgroup_arithmetic();
}

// GPU-quantized activations, decoded on the CPU: per vector and block of 32, the int8 values and
// (dx, sx).
struct Q8Vectors {
  std::vector<int8_t> q;  // batch x cols
  std::vector<float> dx;  // batch x cols / 32
  std::vector<float> sx;
  std::vector<float> dequantized() const {
    std::vector<float> x(q.size());
    for (size_t i = 0; i < q.size(); ++i) x[i] = float(q[i]) * dx[i / 32];
    return x;
  }
};

inline Q8Vectors download_q8(vk::Device& dev, const vk::Buffer& xq, uint32_t cols, uint32_t batch) {
  const auto bytes = vk::download<uint8_t>(dev, xq.slice(), vk::q8_activation_bytes(cols, batch));
  Q8Vectors v;
  const size_t n = size_t{batch} * cols;
  v.q.resize(n);
  std::memcpy(v.q.data(), bytes.data(), n);
  for (size_t b = 0; b < n / 32; ++b) {
    float pair[2];
    std::memcpy(pair, bytes.data() + n + 8 * b, 8);
    v.dx.push_back(pair[0]);
    v.sx.push_back(pair[1]);
  }
  return v;
}

inline Q8Vectors quantize_on_gpu(vk::MatmulKernels& kernels, const std::vector<float>& x,
                                 uint32_t cols, uint32_t batch, uint32_t x_stride, vk::Buffer& xb,
                                 vk::Buffer& xq) {
  vk::Device& dev = context().device();
  xb = vk::Buffer(dev, x.size() * 4, vk::MemoryKind::DeviceLocal, "test x");
  xq =
      vk::Buffer(dev, vk::q8_activation_bytes(cols, batch), vk::MemoryKind::DeviceLocal, "test xq");
  vk::upload(dev, xb.slice(), std::span<const float>(x));
  vk::CommandRecorder rec(dev);
  rec.begin();
  rec.fill(xq.slice(), 0xDEADBEEFu);  // poison: every byte must be written
  rec.barrier();
  kernels.record_quantize_q8(rec, xb.slice(), cols, batch, x_stride, xq.slice());
  rec.submit_and_wait();
  return download_q8(dev, xq, cols, batch);
}

// The int8-dot kernel tests' common ground, per weight type: skipped where the device has no
// integer dot product or subgroup arithmetic; a generator whose seed is traced with any failure;
// kernels with the int8 dot forced on.
class Int8KernelTest : public testing::TestWithParam<TensorType> {
 protected:
  void SetUp() override {
    if (!int8_dot_available()) GTEST_SKIP() << "no integer dot product / subgroup arithmetic";
  }
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  vk::MatmulKernels kernels{context().pipelines(), {.int8_dot = vk::Int8Dot::On}};
};

}  // namespace vkllm::matmul_test
