// Decode matvec kernels (shaders/matvec.comp) for every weight type against a double-precision
// scalar reference built on the CPU dequantizer, on fresh random weights and activations.
#include <gtest/gtest.h>

#include "tests/engine/matmul_test_support.h"

namespace vkllm::matmul_test {
namespace {

using Recorder = vk::CommandRecorder;
using Args = vk::MatmulArgs;

// K values that leave a partial round of the workgroup's threads (by default 128 threads taking
// 8 weights each for quants, 64 taking 4 for float types) yet stay multiples of the block size.
std::vector<uint32_t> test_cols(TensorType type) {
  switch (block_elements(type)) {
    case 256:
      return {256, 1280};
    case 32:
      return {288, 1056};
    default:
      return {100, 516};
  }
}

class MatvecKernels : public testing::TestWithParam<TensorType> {};

TEST_P(MatvecKernels, MatchesReferenceForBatchesOneToEight) {
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  vk::MatmulKernels kernels(context().pipelines());
  const std::vector<uint32_t> cols = test_cols(type);
  // rows 97: the last workgroup of 2 or 4 rows is partly empty.
  for (uint32_t batch = 1; batch <= 8; ++batch)
    run_and_check(type, {97, cols[batch % 2], batch}, rng,
                  [&](Recorder& r, const Args& a) { kernels.record_matvec(r, a); });
}

TEST_P(MatvecKernels, StridesAccumulationAndMoreThanEightColumns) {
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  vk::MatmulKernels kernels(context().pipelines());
  const uint32_t k = test_cols(type)[0];
  // 11 vectors: one pass of 8 columns and one of 3; padded strides; y += W x.
  run_and_check(type, {96, k, 11, k + 8, 101, true}, rng,
                [&](Recorder& r, const Args& a) { kernels.record_matvec(r, a); });
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatvecKernels, testing::ValuesIn(all_weight_types()),
                         type_param_name);

// The reduction and row-group logic does not depend on the weight type: it is exercised on a few
// types of each alignment class, which keeps the number of pipelines lavapipe compiles down.
class MatvecReductions : public testing::TestWithParam<TensorType> {};

TEST_P(MatvecReductions, SharedMemoryReductionAndOtherRowCounts) {
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  const std::vector<uint32_t> cols = test_cols(type);
  // 64 threads, 3 rows per workgroup (151 leaves a partial row group).
  vk::MatmulKernels shared(context().pipelines(),
                           {.matvec_threads = 64, .matvec_rows = 3, .shared_reduction = true});
  for (uint32_t batch : {1u, 5u})
    run_and_check(type, {151, cols[1], batch}, rng,
                  [&](Recorder& r, const Args& a) { shared.record_matvec(r, a); });
  // Workgroups of one subgroup take the subgroupAdd path without the shared-memory step.
  vk::MatmulKernels narrow(
      context().pipelines(),
      {.matvec_threads = std::max(4u, context().caps().subgroup_size), .matvec_rows = 1});
  run_and_check(type, {150, cols[0], 2}, rng,
                [&](Recorder& r, const Args& a) { narrow.record_matvec(r, a); });
}

INSTANTIATE_TEST_SUITE_P(SomeWeightTypes, MatvecReductions,
                         testing::ValuesIn(layout_sample_types()), type_param_name);

// Float weights reading x through its RMSNorm (MatmulArgs::norm_weight): against the product of
// the normalized rows computed in double on the CPU, for 1-8 vectors, strides and y += W x.
class MatvecNormIn : public testing::TestWithParam<TensorType> {};

TEST_P(MatvecNormIn, ReadsXThroughItsRmsNorm) {
  const TensorType type = GetParam();
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  vk::MatmulKernels kernels(context().pipelines());
  if (!kernels.can_read_normalized(type, 1)) GTEST_SKIP() << "no subgroup arithmetic";
  for (const Shape s : {Shape{97, 516, 1}, Shape{64, 100, 3, 104, 70, true}, Shape{33, 516, 8}})
    run_and_check(
        type, s, rng, [&](Recorder& r, const Args& a) { kernels.record_matvec(r, a); }, 0,
        NormIn{});
}

INSTANTIATE_TEST_SUITE_P(FloatWeightTypes, MatvecNormIn,
                         testing::Values(TensorType::F32, TensorType::F16, TensorType::BF16),
                         type_param_name);

// F16 rows of a multiple of 8 take 16-byte loads (matvec_f16w) unless told not to; both against
// the reference, plain and through the RMSNorm, for 1-8 vectors.
TEST(MatvecF16Wide, RowsOfWholeEightsMatchTheReferenceWideAndNarrow) {
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  for (int32_t wide : {1, 0}) {
    SCOPED_TRACE(wide ? "16-byte loads" : "8-byte loads");
    vk::MatmulKernels kernels(context().pipelines(), {.matvec_f16_wide = wide});
    // 520 and 1032: a partial round of the workgroup's threads at 8 halves each.
    for (uint32_t batch = 1; batch <= 8; ++batch)
      run_and_check(TensorType::F16, {97, batch % 2 ? 520u : 1032u, batch}, rng,
                    [&](Recorder& r, const Args& a) { kernels.record_matvec(r, a); });
    run_and_check(TensorType::F16, {64, 520, 3, 528, 70, true}, rng,
                  [&](Recorder& r, const Args& a) { kernels.record_matvec(r, a); });
    if (!kernels.can_read_normalized(TensorType::F16, 1)) continue;
    for (const Shape s : {Shape{97, 520, 1}, Shape{33, 1032, 8}})
      run_and_check(
          TensorType::F16, s, rng, [&](Recorder& r, const Args& a) { kernels.record_matvec(r, a); },
          0, NormIn{});
  }
}

TEST(MatvecKernelsArgs, RejectsShapesTheKernelsCannotRun) {
  vk::MatmulKernels kernels(context().pipelines());
  vk::Device& dev = context().device();
  vk::Buffer b(dev, 1 << 16, vk::MemoryKind::DeviceLocal, "args");
  Args a{.type = TensorType::Q4_K,
         .weights = b.slice(),
         .x = b.slice(),
         .y = b.slice(),
         .rows = 4,
         .cols = 300,
         .batch = 1};
  Recorder rec(dev);
  rec.begin();
  EXPECT_THROW(kernels.record_matvec(rec, a), std::invalid_argument);  // 300 % 256 != 0
  a.cols = 256;
  a.type = TensorType::Q8_1;
  EXPECT_THROW(kernels.record_matvec(rec, a), std::invalid_argument);  // no kernel
  a.type = TensorType::Q4_K;
  a.weights = b.slice(0, 4 * 144);  // the tensor fits but not the read slack
  EXPECT_THROW(kernels.record_matvec(rec, a), std::invalid_argument);
  a.weights = b.slice();
  a.norm_weight = b.slice();  // x through its RMSNorm: float weights only
  EXPECT_THROW(kernels.record_matvec(rec, a), std::invalid_argument);
  EXPECT_THROW(kernels.record_matmul(rec, a), std::invalid_argument);
  a.norm_weight = {};
  a.x_stride = 258;  // not a multiple of 4
  EXPECT_THROW(kernels.record_matmul(rec, a), std::invalid_argument);
  a.x_stride = 0;
  a.batch = 40;
  a.y = b.slice(0, 4 * 4 * 39);  // one output vector short
  EXPECT_THROW(kernels.record_matmul(rec, a), std::invalid_argument);
  rec.submit_and_wait();
}

}  // namespace
}  // namespace vkllm::matmul_test
