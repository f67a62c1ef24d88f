// Quantize -> dequantize round trips of fresh random data for every quantizable format, with
// relative RMSE bounds in the range llama.cpp's reference quantizers achieve on the same data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "engine/gguf/quants.h"
#include "tests/unit/gguf/quants_test_util.h"

namespace vkllm::gguf {
namespace {

using test::Distribution;

struct RoundTripCase {
  TensorType type;
  // Bounds on the mean over rows of RMSE / RMS(data), for normal and uniform data. The margin
  // over llama.cpp's own figures covers sampling noise of 4096-element rows, not a weaker search.
  double normal_bound;
  double uniform_bound;
};

class QuantRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(QuantRoundTrip, ErrorWithinFormatBound) {
  const RoundTripCase c = GetParam();
  auto rng = test::seeded_rng();
  constexpr size_t kRows = 6, kRowLength = 4096;
  for (auto dist : {Distribution::kNormal, Distribution::kUniform}) {
    const double bound = dist == Distribution::kNormal ? c.normal_bound : c.uniform_bound;
    double worst = 0, sum = 0;
    for (size_t row = 0; row < kRows; ++row) {
      // Rows at different magnitudes (error must scale with the data), kept where the fp16
      // block scales stay normal numbers: below that every format loses precision.
      const float scale = std::ldexp(1.0f, static_cast<int>(row) * 2 - 2);
      const auto x = test::random_values(rng, kRowLength, dist, scale);
      const auto y = test::round_trip(c.type, x);
      const double rel = test::rmse(x.data(), y.data(), x.size()) / test::rms(x.data(), x.size());
      worst = std::max(worst, rel);
      sum += rel;
    }
    const double mean = sum / kRows;
    std::printf("%-5s %-7s relative RMSE mean %.5f worst %.5f (bound %.5f)\n",
                test::format_name(c.type).c_str(),
                dist == Distribution::kNormal ? "normal" : "uniform", mean, worst, bound);
    EXPECT_LT(mean, bound) << test::format_name(c.type);
    // A single row may be unlucky (Q8_K's one scale per 256 values is the noisiest).
    EXPECT_LT(worst, 1.15 * bound) << test::format_name(c.type);
    EXPECT_GT(worst, 0.0) << "a lossy format reproduced random data exactly";
  }
}

// Blocks that defeat naive scale formulas: all zero, constant, a single outlier, tiny values.
TEST_P(QuantRoundTrip, DegenerateBlocks) {
  const TensorType type = GetParam().type;
  const size_t n = 512;
  std::vector<float> zeros(n, 0.0f);
  for (float v : test::round_trip(type, zeros)) ASSERT_EQ(v, 0.0f);

  for (float c : {0.75f, -3.0f}) {
    std::vector<float> constant(n, c);
    for (float v : test::round_trip(type, constant)) ASSERT_NEAR(v, c, 0.02f * std::fabs(c));
  }

  std::vector<float> outlier(n, 0.01f);
  outlier[37] = 50.0f;
  outlier[300] = -20.0f;
  const auto y = test::round_trip(type, outlier);
  EXPECT_NEAR(y[37], 50.0f, 50.0f * 0.1f);
  EXPECT_NEAR(y[300], -20.0f, 20.0f * 0.3f);
  for (float v : y) ASSERT_TRUE(std::isfinite(v));
}

INSTANTIATE_TEST_SUITE_P(
    AllQuantizable, QuantRoundTrip,
    ::testing::Values(
        // Bounds are ~1.06x what llama.cpp's reference quantizers measure on 1M samples of the
        // same distribution (normal / uniform), e.g. Q4_K 0.0714 / 0.0546, Q6_K 0.0177 / 0.0133.
        RoundTripCase{TensorType::Q8_0, 0.00568, 0.00399},
        RoundTripCase{TensorType::Q8_1, 0.00568, 0.00399},
        RoundTripCase{TensorType::Q4_0, 0.0911, 0.0690},
        RoundTripCase{TensorType::Q4_1, 0.0830, 0.0643},
        RoundTripCase{TensorType::Q5_0, 0.0453, 0.0331},
        RoundTripCase{TensorType::Q5_1, 0.0402, 0.0311},
        RoundTripCase{TensorType::Q2_K, 0.3144, 0.2471},
        RoundTripCase{TensorType::Q3_K, 0.1600, 0.1327},
        RoundTripCase{TensorType::Q4_K, 0.0757, 0.0578},
        RoundTripCase{TensorType::Q5_K, 0.0383, 0.0292},
        RoundTripCase{TensorType::Q6_K, 0.0188, 0.0140},
        RoundTripCase{TensorType::Q8_K, 0.00739, 0.00415},
        // Round-to-nearest with 11 / 8 significant bits.
        RoundTripCase{TensorType::F16, 0.00026, 0.00026},
        RoundTripCase{TensorType::BF16, 0.0021, 0.0021}),
    [](const auto& info) { return test::format_name(info.param.type); });

}  // namespace
}  // namespace vkllm::gguf
