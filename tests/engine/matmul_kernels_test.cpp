// Prefill matmul kernels (shaders/matmul.comp) for every weight type against a double-precision
// scalar reference built on the CPU dequantizer, on fresh random weights and activations.
#include <gtest/gtest.h>

#include "tests/engine/matmul_test_support.h"

namespace vkllm::matmul_test {
namespace {

class MatmulKernels : public testing::TestWithParam<TensorType> {};

// K values that are multiples of the block size, some not of the 32-wide K tile.
std::vector<uint32_t> test_cols(TensorType type) {
  switch (block_elements(type)) {
    case 256:
      return {256, 768};
    case 32:
      return {96, 544};
    default:
      return {36, 260};  // partial last K tile
  }
}

TEST_P(MatmulKernels, MatchesReferenceForTokenCounts) {
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  // The portable kernel (GPUs with cooperative matrices would otherwise take the tensor-core
  // one, tested in matmul_coopmat_test.cpp).
  vk::MatmulKernels kernels(context().pipelines(), {.coopmat = vk::CoopMat::Off});
  const std::vector<uint32_t> cols = test_cols(type);
  // Default tiles are 128 (GPUs) or 64 (CPU devices) tokens x 64 rows: rows 96 and 200 leave
  // partial row tiles, tokens 1..64 a partial token tile, 130 two or three token tiles.
  const Shape shapes[] = {{96, cols[0], 1},
                          {200, cols[1], 7},
                          {96, cols[1], 33},
                          {200, cols[0], 64},
                          {96, cols[1], 130}};
  for (const Shape& s : shapes)
    run_and_check(type, s, rng, [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) {
      kernels.record_matmul(r, a);
    });
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatmulKernels, testing::ValuesIn(all_weight_types()),
                         type_param_name);

// Tile geometry does not depend on the weight type beyond the decode unit: checked on one type
// per layout family.
class MatmulTiles : public testing::TestWithParam<TensorType> {};

TEST_P(MatmulTiles, OtherTileShapesStridesAndAccumulation) {
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  const uint32_t k = test_cols(type)[1];
  // The GPU default (128 x 64, 8 x 4 per thread) and a narrow one (32 x 64, 2 x 8).
  const vk::MatmulTuning tiles[] = {{.tile_tokens = 128,
                                     .tile_rows = 64,
                                     .thread_tokens = 8,
                                     .thread_rows = 4,
                                     .coopmat = vk::CoopMat::Off},
                                    {.tile_tokens = 32,
                                     .tile_rows = 64,
                                     .thread_tokens = 2,
                                     .thread_rows = 8,
                                     .coopmat = vk::CoopMat::Off}};
  for (const vk::MatmulTuning& tile : tiles) {
    vk::MatmulKernels kernels(context().pipelines(), tile);
    run_and_check(
        type, {130, k, 45, k + 4, 133, true}, rng,
        [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) { kernels.record_matmul(r, a); });
  }
}

INSTANTIATE_TEST_SUITE_P(SomeWeightTypes, MatmulTiles, testing::ValuesIn(layout_sample_types()),
                         type_param_name);

}  // namespace
}  // namespace vkllm::matmul_test
