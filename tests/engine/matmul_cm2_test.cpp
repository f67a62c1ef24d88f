// The workgroup-scope tensor-core GEMM (shaders/matmul_cm2.comp, with dequant_f16.comp for the
// block formats) against the double-precision scalar reference, on fresh random weights and
// activations. Runs where the device offers VK_NV_cooperative_matrix2's workgroup-scope f16
// matrices (an NVIDIA GPU with a recent driver); skipped elsewhere (lavapipe has none: CI checks
// there that the build's SPIR-V rewrite produced what those devices need, in
// coopmat_khr_rewrite_test).
//
// Tolerance as matmul_coopmat_test's: f16 weights and activations, f32 accumulation.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/engine/matmul_test_support.h"

namespace vkllm::matmul_test {
namespace {

constexpr double kF16Tolerance = 2e-3;

#define SKIP_WITHOUT_COOPMAT2(kernels, args)                                                \
  if (!(kernels).coopmat2(args))                                                            \
  GTEST_SKIP() << "device \"" << context().device().caps().name                             \
               << "\" has no VK_NV_cooperative_matrix2 workgroup-scope f16 GEMM (lavapipe " \
                  "has none)"

// K per type: whole 256-wide unrolled steps plus a tail of 64-wide slices (576), and a K that is
// no multiple of the slice (96, 264: every tile then takes the bounds-checked path); types of
// 256-weight blocks take whole steps (768, 512).
std::vector<uint32_t> test_cols(TensorType type) {
  switch (block_elements(type)) {
    case 256:
      return {768, 512};
    case 32:
      return {576, 96};
    default:
      return {576, 264};
  }
}

// A product's shape, for asking MatmulKernels::coopmat2 which kernel it takes.
vk::MatmulArgs shape_of(TensorType type, uint32_t rows, uint32_t cols, uint32_t batch) {
  vk::MatmulArgs args;
  args.type = type;
  args.rows = rows;
  args.cols = cols;
  args.batch = batch;
  return args;
}

class MatmulCoopMat2 : public testing::TestWithParam<TensorType> {};

TEST_P(MatmulCoopMat2, MatchesReference) {
  const TensorType type = GetParam();
  vk::MatmulKernels kernels(context().pipelines(), {.cm2_min_tokens = 1});
  SKIP_WITHOUT_COOPMAT2(kernels, shape_of(type, 128, 256, 128));
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  const std::vector<uint32_t> cols = test_cols(type);
  // Whole tiles; partial row and token tiles (130 rows: a 2-row edge tile, outputs 132 apart
  // since they go in whole 4-float groups; 200 tokens: a partial wide tile); the narrow token tile
  // (<= 64 tokens) with a partial one; strided, accumulating outputs.
  const Shape shapes[] = {{256, cols[0], 128},
                          {130, cols[0], 200, 0, 132},
                          {256, cols[1], 37},
                          {384, cols[1], 64},
                          {200, cols[0], 130, cols[0] + 8, 260, true},
                          {256, cols[1], 150, 0, 268, true}};
  for (const Shape& s : shapes)
    run_and_check(
        type, s, rng,
        [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) {
          ASSERT_TRUE(kernels.coopmat2(a));
          kernels.record_matmul(r, a);
        },
        kF16Tolerance);
}

INSTANTIATE_TEST_SUITE_P(TensorCoreTypes, MatmulCoopMat2,
                         testing::Values(TensorType::F16, TensorType::Q4_0, TensorType::Q4_1,
                                         TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                                         TensorType::IQ4_NL, TensorType::Q2_K, TensorType::Q3_K,
                                         TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                                         TensorType::IQ4_XS, TensorType::MXFP4),
                         type_param_name);

// Weights decoded a chunk of rows at a time: chunks of 128 rows over 520 (the last partial),
// into scratch halves taken in turn, must give the product decoded whole; and two products
// recorded back to back (no barrier between them) keep their own chunks.
TEST(MatmulCoopMat2Chunks, ChunkedDecodeMatchesReference) {
  vk::MatmulKernels kernels(context().pipelines(), {.cm2_min_tokens = 1, .cm2_chunk_rows = 128});
  SKIP_WITHOUT_COOPMAT2(kernels, shape_of(TensorType::Q4_K, 128, 256, 128));
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  auto record = [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) {
    kernels.record_matmul(r, a);
  };
  for (TensorType type : {TensorType::Q4_K, TensorType::Q8_0, TensorType::Q6_K}) {
    SCOPED_TRACE(std::string(gguf::type_name(type)));
    run_and_check(type, {520, 512, 130}, rng, record, kF16Tolerance);
    run_and_check(type, {384, 256, 140, 0, 388, true}, rng, record, kF16Tolerance);
  }
}

// K split over 2 or 3 workgroups (the last split shorter, or past K and empty), the partials
// summed into strided, accumulating outputs; and the default rule, which splits these small
// grids.
TEST(MatmulCoopMat2SplitK, SplitsMatchReference) {
  vk::MatmulKernels probe(context().pipelines(), {.cm2_min_tokens = 1});
  SKIP_WITHOUT_COOPMAT2(probe, shape_of(TensorType::F16, 128, 256, 128));
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  for (uint32_t splits : {0u, 2u, 3u}) {
    SCOPED_TRACE("splits=" + std::to_string(splits));
    vk::MatmulKernels kernels(context().pipelines(),
                              {.cm_splits = splits, .cm2_min_tokens = 1, .cm2_chunk_rows = 256});
    auto record = [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) {
      kernels.record_matmul(r, a);
    };
    run_and_check(TensorType::F16, {256, 1280, 130}, rng, record, kF16Tolerance);
    run_and_check(TensorType::F16, {130, 1032, 200, 0, 132, true}, rng, record, kF16Tolerance);
    run_and_check(TensorType::Q4_K, {384, 1536, 140, 0, 388, true}, rng, record, kF16Tolerance);
  }
}

// Activations given as f16 rows (MatmulArgs::x_f16, written by the norm or GLU before a prefill
// product) are what the GEMM multiplies: x itself holds other values, so a product converting x
// would miss the reference. The slice holds the batch's rows only (200 tokens: the last token
// tile loads checked) or whole 128-token tiles (130: padding rows of stale values, never
// stored); f16 weights, and Q4_K decoded to f16 first.
TEST(MatmulCoopMat2GivenF16, MultipliesTheGivenRowsNotX) {
  vk::MatmulKernels kernels(context().pipelines(), {.cm2_min_tokens = 1});
  SKIP_WITHOUT_COOPMAT2(kernels, shape_of(TensorType::F16, 256, 512, 130));
  EXPECT_TRUE(kernels.reads_f16_rows(TensorType::F16, 130));
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  vk::Device& dev = context().device();
  for (TensorType type : {TensorType::F16, TensorType::Q4_K}) {
    for (uint32_t batch : {200u, 130u}) {
      SCOPED_TRACE(std::string(gguf::type_name(type)) + " batch=" + std::to_string(batch));
      const Shape s{256, 512, batch};
      const uint32_t slice_rows = batch == 130 ? 256 : batch;
      const std::vector<float> x = random_floats(uint64_t{batch} * s.cols, rng);
      ExactF16 given = exact_f16_floats(uint64_t{slice_rows} * s.cols, rng);
      vk::Buffer xb(dev, x.size() * 4, vk::MemoryKind::DeviceLocal, "test x");
      vk::Buffer x16b(dev, given.bits.size() * 2, vk::MemoryKind::DeviceLocal, "test x f16");
      vk::upload(dev, xb.slice(), std::span<const float>(x));
      vk::upload(dev, x16b.slice(), std::span<const uint16_t>(given.bits));
      const std::vector<uint8_t> wq = random_weights(type, s.rows, s.cols, rng);
      const vk::Buffer wb = device_weights(type, wq);
      vk::Buffer yb(dev, uint64_t{batch} * s.rows * 4, vk::MemoryKind::DeviceLocal, "test y");
      const vk::MatmulArgs args{.type = type,
                                .weights = wb.slice(),
                                .x = xb.slice(),
                                .y = yb.slice(),
                                .rows = s.rows,
                                .cols = s.cols,
                                .batch = batch,
                                .x_f16 = x16b.slice()};
      ASSERT_TRUE(kernels.coopmat2(args));
      vk::CommandRecorder rec(dev);
      rec.begin();
      kernels.record_matmul(rec, args);
      rec.submit_and_wait();
      const std::vector<float> y = vk::download<float>(dev, yb.slice(), uint64_t{batch} * s.rows);
      given.values.resize(uint64_t{batch} * s.cols);
      expect_matches_reference(type, s, dequantize_rows(type, wq, s.rows, s.cols), given.values, {},
                               y, kF16Tolerance);
    }
  }
}

// Below the token threshold, and with the workgroup-scope GEMM off, products take the other
// kernels.
TEST(MatmulCoopMat2Choice, ThresholdAndOffSelectOtherKernels) {
  vk::MatmulKernels on(context().pipelines(), {.cm2_min_tokens = 100});
  vk::MatmulArgs args = shape_of(TensorType::Q4_K, 256, 256, 100);
  SKIP_WITHOUT_COOPMAT2(on, args);
  args.batch = 99;
  EXPECT_FALSE(on.coopmat2(args));
  args.batch = 100;
  args.cols = 260;  // rows of f16 no longer 16-byte aligned
  EXPECT_FALSE(on.coopmat2(args));
  args.cols = 256;
  args.y_offset = 2;
  EXPECT_FALSE(on.coopmat2(args));
  // The defaults: f16 weights from 2 tokens (which of their decode steps leave the matvec is the
  // backend's matvec_limit), others from 128.
  vk::MatmulKernels defaults(context().pipelines(), {.cm2_min_tokens = 0});
  EXPECT_TRUE(defaults.coopmat2(shape_of(TensorType::F16, 256, 256, 2)));
  EXPECT_FALSE(defaults.coopmat2(shape_of(TensorType::F16, 256, 256, 1)));
  EXPECT_TRUE(defaults.coopmat2(shape_of(TensorType::Q4_K, 256, 256, 128)));
  EXPECT_FALSE(defaults.coopmat2(shape_of(TensorType::Q4_K, 256, 256, 127)));
  vk::MatmulKernels off(context().pipelines(), {.coopmat2 = vk::CoopMat::Off, .cm2_min_tokens = 1});
  args.y_offset = 0;
  EXPECT_FALSE(off.coopmat2(args));
}

}  // namespace
}  // namespace vkllm::matmul_test
