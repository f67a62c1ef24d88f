// The tensor-core GEMM (shaders/matmul_coopmat.comp) against the double-precision scalar
// reference, on fresh random weights and activations, for every weight type it decodes. Runs on
// whatever device the tests get; skipped where that device has no VK_NV_cooperative_matrix with
// a 16x16x16 f16 shape (lavapipe has none: CI tests the portable GEMM in matmul_kernels_test).
//
// Tolerance: weights and activations are rounded to f16 (relative 2^-11 each) before f32
// accumulation, so each product carries up to ~1e-3 relative error; 2e-3 of sum_k |w_k x_k| bounds
// the result with room for the accumulation, and still fails on any misplaced element or tile.
#include <gtest/gtest.h>

#include "tests/engine/matmul_test_support.h"

namespace vkllm::matmul_test {
namespace {

constexpr double kF16Tolerance = 2e-3;

const std::vector<TensorType>& coopmat_types() {
  static const std::vector<TensorType> types = {
      TensorType::F16,  TensorType::Q4_0,   TensorType::Q4_1,   TensorType::Q5_0, TensorType::Q5_1,
      TensorType::Q8_0, TensorType::IQ4_NL, TensorType::Q2_K,   TensorType::Q3_K, TensorType::Q4_K,
      TensorType::Q5_K, TensorType::Q6_K,   TensorType::IQ4_XS, TensorType::MXFP4};
  return types;
}

std::vector<uint32_t> test_cols(TensorType type) {
  switch (block_elements(type)) {
    case 256:
      return {256, 768};
    case 32:
      return {96, 544};
    default:
      return {36, 260};  // partial last 32-wide K slice
  }
}

#define SKIP_WITHOUT_COOPMAT(kernels, type)                                                     \
  if (!(kernels).coopmat(type))                                                                 \
  GTEST_SKIP() << "device \"" << context().device().caps().name                                 \
               << "\" has no VK_NV_cooperative_matrix 16x16x16 f16 shape (lavapipe has none); " \
                  "the portable GEMM is checked by MatmulKernels.*"

class MatmulCoopMat : public testing::TestWithParam<TensorType> {};

TEST_P(MatmulCoopMat, MatchesReferenceForTokenCounts) {
  const TensorType type = GetParam();
  vk::MatmulKernels kernels(context().pipelines());
  SKIP_WITHOUT_COOPMAT(kernels, type);
  test::SeededRng seeded;  // prints its seed with any failure
  std::mt19937& rng = seeded.gen();
  const std::vector<uint32_t> cols = test_cols(type);
  // Token counts reach every tile choice (<= 16, <= 32, <= 64, > 64 tokens; Q8_0's own prefill
  // tile) and slice width with partial token tiles and fragments; rows 96/200/130 leave partial
  // 64-row tiles and 16-row fragments, 256 whole ones (the direct fragment stores).
  const Shape shapes[] = {{96, cols[0], 1},    {200, cols[1], 9},  {256, cols[0], 16},
                          {200, cols[0], 24},  {130, cols[1], 33}, {256, cols[1], 64},
                          {200, cols[0], 130}, {256, cols[1], 256}};
  for (const Shape& s : shapes)
    run_and_check(
        type, s, rng,
        [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) { kernels.record_matmul(r, a); },
        kF16Tolerance);
}

INSTANTIATE_TEST_SUITE_P(TensorCoreTypes, MatmulCoopMat, testing::ValuesIn(coopmat_types()),
                         type_param_name);

// Strides, the fused residual add (through the edge path and the direct stores), and other tile
// shapes, on one type per decode layout.
class MatmulCoopMatTiles : public testing::TestWithParam<TensorType> {};

TEST_P(MatmulCoopMatTiles, TileShapesStridesAndAccumulation) {
  const TensorType type = GetParam();
  vk::MatmulKernels probe(context().pipelines());
  SKIP_WITHOUT_COOPMAT(probe, type);
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  const uint32_t k = test_cols(type)[1];
  const vk::MatmulTuning tiles[] = {
      {},  // chosen by token count
      {.cm_warps_m = 2, .cm_warps_n = 2, .cm_frags_m = 2, .cm_frags_n = 4},
      {.cm_warps_m = 4, .cm_warps_n = 2, .cm_frags_m = 1, .cm_frags_n = 1},
      {.cm_batched_loads = 0, .cm_x_f16 = 0},  // the f32 activation paths, item by item
      {.cm_batched_loads = 1, .cm_x_f16 = 0},  // and batched
      {.cm_batched_loads = 0, .cm_x_f16 = 1},
      {.cm_batched_loads = 2},  // software-pipelined where the type has split decoders
      {.cm_batched_loads = 2, .cm_decode_f16 = 0},  // ... decoding in f32, then converting
      {.cm_warps_m = 1, .cm_warps_n = 8, .cm_frags_m = 4, .cm_frags_n = 1, .cm_batched_loads = 2},
      {.cm_warps_m = 2, .cm_warps_n = 2, .cm_frags_m = 2, .cm_frags_n = 4, .cm_x_f16 = 0},
      // wider K slices, double- and single-buffered (a partial last slice for F16 and Q4_0),
      // on tiles whose buffers fit 48 KiB of shared memory
      {.cm_warps_m = 2,
       .cm_warps_n = 2,
       .cm_frags_m = 2,
       .cm_frags_n = 2,
       .cm_batched_loads = 2,
       .cm_slice_k = 64},
      {.cm_batched_loads = 2, .cm_slice_k = 64, .cm_stages = 1},
      {.cm_warps_m = 2,
       .cm_warps_n = 2,
       .cm_frags_m = 2,
       .cm_frags_n = 2,
       .cm_batched_loads = 0,
       .cm_x_f16 = 0,
       .cm_slice_k = 128,
       .cm_stages = 1},
      {.cm_warps_m = 2,
       .cm_warps_n = 2,
       .cm_frags_m = 2,
       .cm_frags_n = 4,
       .cm_batched_loads = 1,
       .cm_slice_k = 64,
       .cm_stages = 1}};
  for (const vk::MatmulTuning& tile : tiles) {
    vk::MatmulKernels kernels(context().pipelines(), tile);
    auto record = [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) {
      kernels.record_matmul(r, a);
    };
    // y_stride 133: no direct stores (unaligned rows); 260: direct where fragments are whole.
    run_and_check(type, {130, k, 45, k + 4, 133, true}, rng, record, kF16Tolerance);
    run_and_check(type, {256, k, 96, k + 8, 260, true}, rng, record, kF16Tolerance);
    run_and_check(type, {256, k, 80, 0, 260, false}, rng, record, kF16Tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(SomeWeightTypes, MatmulCoopMatTiles,
                         testing::Values(TensorType::F16, TensorType::Q4_0, TensorType::Q6_K),
                         type_param_name);

// Split-K: K cut into 2, 3, 5 or 7 ranges (uneven last ranges included) at batched-decode token
// counts, rows that leave partial tiles, strided and accumulating outputs; the partials and
// their reduction must give the unsplit product. (Shapes of the tests above split too where their
// grid is small, by the occupancy rule.)
class MatmulCoopMatSplitK : public testing::TestWithParam<TensorType> {};

TEST_P(MatmulCoopMatSplitK, SplitsMatchReference) {
  const TensorType type = GetParam();
  vk::MatmulKernels probe(context().pipelines());
  SKIP_WITHOUT_COOPMAT(probe, type);
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  const uint32_t k = test_cols(type)[1];
  for (uint32_t splits : {2u, 3u, 7u, 5u}) {
    SCOPED_TRACE("splits=" + std::to_string(splits));
    // The last: splits of whole 64-wide slices, single-buffered.
    vk::MatmulKernels kernels(context().pipelines(), {.cm_batched_loads = splits == 3 ? 0 : 2,
                                                      .cm_x_f16 = splits == 7 || splits == 5,
                                                      .cm_splits = splits,
                                                      .cm_slice_k = splits == 5 ? 64u : 0u,
                                                      .cm_stages = splits == 5 ? 1u : 0u});
    auto record = [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) {
      kernels.record_matmul(r, a);
    };
    run_and_check(type, {130, k, 16}, rng, record, kF16Tolerance);
    run_and_check(type, {200, k, 33, k + 4, 203, true}, rng, record, kF16Tolerance);
    run_and_check(type, {256, k, 64, 0, 260, true}, rng, record, kF16Tolerance);
  }
  // The rule off: one workgroup per tile walks the whole K.
  vk::MatmulKernels unsplit(context().pipelines(), {.cm_split_per_cu = 0});
  run_and_check(
      type, {200, k, 64}, rng,
      [&](vk::CommandRecorder& r, const vk::MatmulArgs& a) { unsplit.record_matmul(r, a); },
      kF16Tolerance);
}

INSTANTIATE_TEST_SUITE_P(SomeWeightTypes, MatmulCoopMatSplitK,
                         testing::Values(TensorType::F16, TensorType::Q8_0, TensorType::Q4_K,
                                         TensorType::Q6_K),
                         type_param_name);

// Three split products recorded back to back with no barrier between them (as the forward pass
// records Q, K and V from one input): each reduction must still read its own partials.
TEST(MatmulCoopMatSplitKOrder, BackToBackProductsKeepTheirPartials) {
  constexpr TensorType type = TensorType::Q4_K;
  vk::MatmulKernels kernels(context().pipelines(), {.cm_splits = 4});
  SKIP_WITHOUT_COOPMAT(kernels, type);
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  vk::Device& dev = context().device();
  const Shape s{200, 1024, 48};
  const std::vector<float> x = random_floats(uint64_t{s.batch} * s.cols, rng);
  vk::Buffer xb(dev, x.size() * 4, vk::MemoryKind::DeviceLocal, "test x");
  vk::upload(dev, xb.slice(), std::span<const float>(x));
  std::vector<std::vector<uint8_t>> wq;
  std::vector<vk::Buffer> wb, yb;
  for (int i = 0; i < 3; ++i) {
    wq.push_back(random_weights(type, s.rows, s.cols, rng));
    wb.push_back(device_weights(type, wq.back()));
    yb.emplace_back(dev, uint64_t{s.batch} * s.rows * 4, vk::MemoryKind::DeviceLocal, "test y");
  }
  vk::CommandRecorder rec(dev);
  rec.begin();
  for (int i = 0; i < 3; ++i)
    kernels.record_matmul(rec, {.type = type,
                                .weights = wb[i].slice(),
                                .x = xb.slice(),
                                .y = yb[i].slice(),
                                .rows = s.rows,
                                .cols = s.cols,
                                .batch = s.batch});
  rec.submit_and_wait();
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("product " + std::to_string(i));
    const std::vector<float> y =
        vk::download<float>(dev, yb[i].slice(), uint64_t{s.batch} * s.rows);
    expect_matches_reference(type, s, dequantize_rows(type, wq[i], s.rows, s.cols), x, {}, y,
                             kF16Tolerance);
  }
}

// A deferred split-K product (record_matmul's SplitParts) reading x from f16 rows it was given:
// its partials, added in order, are bit for bit the output of the same product reduced by the
// second pass and converting x itself (x holds values f16 represents exactly, so either
// conversion gives the same rows); y is left alone. Unsplit, the deferred product writes y.
TEST(MatmulCoopMatDeferred, PartialsFromGivenF16RowsEqualTheReducedProduct) {
  constexpr TensorType type = TensorType::Q4_K;
  vk::MatmulKernels kernels(context().pipelines(), {.cm_x_f16 = 1, .cm_splits = 3});
  SKIP_WITHOUT_COOPMAT(kernels, type);
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  vk::Device& dev = context().device();
  const Shape s{200, 1024, 40};
  const ExactF16 exact = exact_f16_floats(uint64_t{s.batch} * s.cols, rng);
  const std::vector<float>& x = exact.values;
  vk::Buffer xb(dev, x.size() * 4, vk::MemoryKind::DeviceLocal, "test x");
  vk::Buffer x16b(dev, exact.bits.size() * 2, vk::MemoryKind::DeviceLocal, "test x f16");
  vk::upload(dev, xb.slice(), std::span<const float>(x));
  vk::upload(dev, x16b.slice(), std::span<const uint16_t>(exact.bits));
  const std::vector<uint8_t> wq = random_weights(type, s.rows, s.cols, rng);
  const vk::Buffer wb = device_weights(type, wq);
  const uint64_t y_floats = uint64_t{s.batch} * s.rows;
  vk::Buffer reduced(dev, y_floats * 4, vk::MemoryKind::DeviceLocal, "test y reduced");
  vk::Buffer untouched(dev, y_floats * 4, vk::MemoryKind::DeviceLocal, "test y deferred");
  const std::vector<float> sentinel(y_floats, 1234.5f);
  vk::upload(dev, untouched.slice(), std::span<const float>(sentinel));
  const vk::MatmulArgs args{.type = type,
                            .weights = wb.slice(),
                            .x = xb.slice(),
                            .y = reduced.slice(),
                            .rows = s.rows,
                            .cols = s.cols,
                            .batch = s.batch};
  vk::MatmulArgs given = args;
  given.y = untouched.slice();
  given.x_f16 = x16b.slice();
  vk::SplitParts parts;
  vk::CommandRecorder rec(dev);
  rec.begin();
  kernels.record_matmul(rec, args);
  kernels.record_matmul(rec, given, &parts);
  rec.submit_and_wait();
  ASSERT_EQ(parts.splits, 3u);
  ASSERT_GE(parts.ld, s.rows);
  const std::vector<float> want = vk::download<float>(dev, reduced.slice(), y_floats);
  expect_matches_reference(type, s, dequantize_rows(type, wq, s.rows, s.cols), x, {}, want,
                           kF16Tolerance);
  const std::vector<float> partials =
      vk::download<float>(dev, parts.parts, uint64_t{parts.splits} * parts.stride);
  size_t mismatches = 0;
  for (uint32_t t = 0; t < s.batch; ++t)
    for (uint32_t r = 0; r < s.rows; ++r) {
      float sum = 0.f;
      for (uint32_t k = 0; k < parts.splits; ++k)
        sum += partials[uint64_t{k} * parts.stride + uint64_t{t} * parts.ld + r];
      mismatches += sum != want[uint64_t{t} * s.rows + r];
    }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(vk::download<float>(dev, untouched.slice(), y_floats), sentinel);

  vk::MatmulKernels unsplit(context().pipelines(), {.cm_x_f16 = 1, .cm_splits = 1});
  vk::CommandRecorder again(dev);
  again.begin();
  unsplit.record_matmul(again, given, &parts);
  again.submit_and_wait();
  EXPECT_EQ(parts.splits, 0u);
  expect_matches_reference(type, s, dequantize_rows(type, wq, s.rows, s.cols), x, {},
                           vk::download<float>(dev, untouched.slice(), y_floats), kF16Tolerance);
}

// Activations beyond f16's range are clamped, not turned into inf/NaN that would poison the
// whole output row.
TEST(MatmulCoopMatRange, LargeActivationsStayFinite) {
  vk::MatmulKernels kernels(context().pipelines());
  SKIP_WITHOUT_COOPMAT(kernels, TensorType::Q8_0);
  test::SeededRng seeded;
  std::mt19937& rng = seeded.gen();
  const Shape s{64, 256, 20};
  vk::Device& dev = context().device();
  const std::vector<uint8_t> wq = random_weights(TensorType::Q8_0, s.rows, s.cols, rng);
  std::vector<float> x = random_floats(uint64_t{s.batch} * s.cols, rng);
  x[5] = 1e6f;  // token 0
  vk::Buffer wb = device_weights(TensorType::Q8_0, wq);
  vk::Buffer xb(dev, x.size() * 4, vk::MemoryKind::DeviceLocal, "test x");
  vk::Buffer yb(dev, uint64_t{s.batch} * s.rows * 4, vk::MemoryKind::DeviceLocal, "test y");
  vk::upload(dev, xb.slice(), std::span<const float>(x));
  vk::CommandRecorder rec(dev);
  rec.begin();
  kernels.record_matmul(rec, {.type = TensorType::Q8_0,
                              .weights = wb.slice(),
                              .x = xb.slice(),
                              .y = yb.slice(),
                              .rows = s.rows,
                              .cols = s.cols,
                              .batch = s.batch});
  rec.submit_and_wait();
  const std::vector<float> y = vk::download<float>(dev, yb.slice(), uint64_t{s.batch} * s.rows);
  for (float v : y) ASSERT_TRUE(std::isfinite(v));
  // Other tokens are unaffected: token 1 matches the reference.
  const std::vector<float> w = dequantize_rows(TensorType::Q8_0, wq, s.rows, s.cols);
  for (uint32_t n = 0; n < s.rows; ++n) {
    double ref = 0, mag = 0;
    for (uint32_t kk = 0; kk < s.cols; ++kk) {
      ref += double(w[uint64_t{n} * s.cols + kk]) * x[s.cols + kk];
      mag += std::fabs(double(w[uint64_t{n} * s.cols + kk]) * x[s.cols + kk]);
    }
    EXPECT_LE(std::fabs(y[s.rows + n] - ref), kF16Tolerance * mag) << "row " << n;
  }
}

// Off keeps the portable kernel even where the tensor cores exist.
TEST(MatmulCoopMatRange, OffSelectsThePortableKernel) {
  vk::MatmulKernels kernels(context().pipelines(), {.coopmat = vk::CoopMat::Off});
  for (TensorType t : coopmat_types()) EXPECT_FALSE(kernels.coopmat(t));
  vk::MatmulKernels automatic(context().pipelines());
  EXPECT_FALSE(automatic.coopmat(TensorType::F32));
  EXPECT_FALSE(automatic.coopmat(TensorType::BF16));
}

}  // namespace
}  // namespace vkllm::matmul_test
