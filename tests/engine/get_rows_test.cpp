// Embedding lookup for every weight type against the CPU dequantization of the same rows
// (engine/gguf/quants.h), on freshly quantized random weights.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/gguf/quants.h"
#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/ops.h"
#include "tests/engine/kernel_test_support.h"

namespace vkllm::test {
namespace {

using gguf::TensorType;

TEST(GetRows, EveryWeightTypeMatchesCpuDequantization) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  for (TensorType type :
       {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1,
        TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K, TensorType::Q3_K,
        TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::MXFP4}) {
    const auto& traits = gguf::traits(type);
    const std::string name(traits.name);
    SCOPED_TRACE(name);
    ASSERT_TRUE(vk::ops::get_rows_supports(name));
    // Rows of 3 blocks (K-quants: 768 elements; legacy: 96, not a multiple of 64), or 52 floats.
    const uint32_t k = traits.block_elements == 1 ? 52 : 3 * traits.block_elements;
    const uint32_t n_rows = 9 + rng.below(5);
    const size_t row_bytes = gguf::row_bytes(type, k);
    auto w = random_vector(rng, size_t(k) * n_rows, -2.f, 2.f);
    std::vector<uint8_t> q(row_bytes * n_rows);
    gguf::quantize(type, w.data(), q.data(), w.size());
    std::vector<float> deq(w.size());
    gguf::dequantize(type, q.data(), deq.data(), w.size());

    const uint32_t n_tokens = 1 + rng.below(12);
    std::vector<uint32_t> ids(n_tokens);
    for (auto& id : ids) id = rng.below(n_rows);
    ids[0] = n_rows - 1;  // the last row: reads must stay inside the tensor's padded end
    const float scale = rng.below(2) ? 1.f : std::sqrt(float(k));
    vk::Arena arena(vk_context().device(), "get_rows test", 8 << 20);
    vk::BufferSlice dw = weights_to_device(arena, type, q), dids = to_device(arena, ids);
    vk::BufferSlice out = device_filled<float>(arena, size_t(n_tokens) * k);
    run([&](vk::CommandRecorder& rec) {
      vk::ops::get_rows(rec, pc,
                        {.type = name,
                         .weights = dw,
                         .row_elems = k,
                         .row_bytes = uint32_t(row_bytes),
                         .n_rows = n_rows,
                         .ids = dids,
                         .n_tokens = n_tokens,
                         .out = out,
                         .out_stride = 0,
                         .scale = scale});
    });
    std::vector<float> want(size_t(n_tokens) * k);
    for (uint32_t t = 0; t < n_tokens; ++t)
      for (uint32_t i = 0; i < k; ++i)
        want[size_t(t) * k + i] = deq[size_t(ids[t]) * k + i] * scale;
    EXPECT_TRUE(near_all(from_device<float>(out, want.size()), want, 1e-6, 1e-6));
  }
}

TEST(GetRows, OutOfRangeIdsGiveNaNRowsNotCrashes) {
  SeededRng rng;
  auto& pc = vk_context().pipelines();
  const uint32_t k = 64, n_rows = 4;
  auto w = random_vector(rng, k * n_rows);
  std::vector<uint32_t> ids = {1, 4, 0xFFFFFFFFu, 3};
  vk::Arena arena(vk_context().device(), "get_rows ids", 1 << 20);
  vk::BufferSlice dw = to_device(arena, w), dids = to_device(arena, ids);
  vk::BufferSlice out = device_filled<float>(arena, ids.size() * k, 0);
  run([&](vk::CommandRecorder& rec) {
    vk::ops::get_rows(rec, pc,
                      {.type = "f32",
                       .weights = dw,
                       .row_elems = k,
                       .row_bytes = k * 4,
                       .n_rows = n_rows,
                       .ids = dids,
                       .n_tokens = uint32_t(ids.size()),
                       .out = out,
                       .out_stride = 0,
                       .scale = 1.f});
  });
  auto got = from_device<float>(out, ids.size() * k);
  for (uint32_t i = 0; i < k; ++i) {
    EXPECT_EQ(got[i], w[k + i]);
    EXPECT_TRUE(std::isnan(got[k + i]));
    EXPECT_TRUE(std::isnan(got[2 * k + i]));
    EXPECT_EQ(got[3 * k + i], w[3 * k + i]);
  }
  vk::CommandRecorder rec(vk_context().device());
  rec.begin();
  EXPECT_THROW(vk::ops::get_rows(rec, pc,
                                 {.type = "q9_9",
                                  .weights = dw,
                                  .row_elems = k,
                                  .row_bytes = k,
                                  .n_rows = 1,
                                  .ids = dids,
                                  .n_tokens = 1,
                                  .out = out,
                                  .out_stride = 0,
                                  .scale = 1.f}),
               std::invalid_argument);
  rec.submit_and_wait();
}

}  // namespace
}  // namespace vkllm::test
