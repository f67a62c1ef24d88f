// Real llama.cpp outputs (shared test data): the Q8_0 and Q4_K_M quantizations of
// ref-llama-f16.gguf. Our dequantizers must reproduce the F16 tensors within each format's
// error, and our quantizers, run on the F16 tensors, must match llama.cpp's choice of bytes (Q8_0
// and, since we use the same search, the K-quants) and be at least as accurate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/quants.h"
#include "tests/unit/gguf/quants_test_util.h"

namespace vkllm::gguf {
namespace {

const std::string kModels = std::string(VKLLM_SHARED_DIR) + "/testdata/models/";

std::vector<float> to_floats(const GgufFile& file, const TensorInfo& t) {
  std::vector<float> out(t.element_count());
  dequantize(t.type, file.tensor_data(t).data(), out.data(), out.size());
  return out;
}

// Upper bounds on RMSE / RMS(F16 tensor) for the dequantized tensor of each format, taken from
// the synthetic round trips with a margin for real tensors' heavier tails.
double dequant_bound(TensorType type) {
  switch (type) {
    case TensorType::Q8_0:
      return 0.0065;
    case TensorType::Q6_K:
      return 0.022;
    case TensorType::Q5_K:
      return 0.044;
    case TensorType::Q4_K:
      return 0.085;
    case TensorType::Q5_0:
      return 0.05;
    case TensorType::Q5_1:
      return 0.045;
    case TensorType::Q4_0:
      return 0.1;
    default:
      return 0.0;  // F32/F16 tensors are copied unchanged
  }
}

struct Summary {
  std::map<TensorType, int> tensors_by_type;
  size_t blocks = 0, identical_blocks = 0;
};

Summary compare_with_llama_cpp(const std::string& quantized_name) {
  Summary summary;
  const GgufFile f16 = GgufFile::open(kModels + "ref-llama-f16.gguf");
  const GgufFile quantized = GgufFile::open(kModels + quantized_name);
  EXPECT_EQ(f16.tensors().size(), quantized.tensors().size());
  for (const TensorInfo& t : quantized.tensors()) {
    SCOPED_TRACE(t.name + " (" + std::string(type_name(t.type)) + ")");
    const TensorInfo* ref = f16.find_tensor(t.name);
    EXPECT_NE(ref, nullptr);
    if (ref == nullptr) continue;
    EXPECT_EQ(ref->shape, t.shape);
    ++summary.tensors_by_type[t.type];
    const auto original = to_floats(f16, *ref);
    const auto theirs = to_floats(quantized, t);
    const double data_rms = test::rms(original.data(), original.size());
    const double their_err = test::rmse(original.data(), theirs.data(), original.size()) / data_rms;
    const double bound = dequant_bound(t.type);
    if (bound == 0.0) {
      EXPECT_EQ(their_err, 0.0);
      continue;
    }
    EXPECT_LT(their_err, bound);
    EXPECT_GT(their_err, bound / 10) << "suspiciously exact for a lossy format";

    // Our quantizer on the same F16 data, to the type llama.cpp chose for this tensor.
    std::vector<uint8_t> ours(quantized_size(t.type, original.size()));
    quantize(t.type, original.data(), ours.data(), original.size());
    const auto llama_bytes = quantized.tensor_data(t);
    EXPECT_EQ(ours.size(), llama_bytes.size());
    if (ours.size() != llama_bytes.size()) continue;
    const size_t block_bytes = traits(t.type).block_bytes;
    for (size_t off = 0; off < ours.size(); off += block_bytes) {
      ++summary.blocks;
      summary.identical_blocks +=
          std::memcmp(ours.data() + off, llama_bytes.data() + off, block_bytes) == 0;
    }
    std::vector<float> ours_f(original.size());
    dequantize(t.type, ours.data(), ours_f.data(), ours_f.size());
    const double our_err = test::rmse(original.data(), ours_f.data(), original.size()) / data_rms;
    std::printf("%-28s %-5s llama.cpp %.5f ours %.5f\n", t.name.c_str(),
                std::string(type_name(t.type)).c_str(), their_err, our_err);
    EXPECT_LE(our_err, 1.02 * their_err);
  }
  return summary;
}

TEST(QuantsRealData, Q8_0MatchesLlamaCpp) {
  const Summary s = compare_with_llama_cpp("ref-llama-q8_0.gguf");
  EXPECT_GE(s.tensors_by_type.at(TensorType::Q8_0), 10);
  ASSERT_GT(s.blocks, 0u);
  const double identical = static_cast<double>(s.identical_blocks) / static_cast<double>(s.blocks);
  std::printf("Q8_0: %zu of %zu blocks byte-identical to llama.cpp (%.5f)\n", s.identical_blocks,
              s.blocks, identical);
  // Same formula and fp16 rounding: only a last-ulp difference in 1/d may flip a rounding.
  EXPECT_GE(identical, 0.999);
}

TEST(QuantsRealData, Q4_K_MMatchesLlamaCpp) {
  const Summary s = compare_with_llama_cpp("ref-llama-q4_k_m.gguf");
  EXPECT_GE(s.tensors_by_type.at(TensorType::Q4_K), 5);
  EXPECT_GE(s.tensors_by_type.at(TensorType::Q6_K), 1);
  ASSERT_GT(s.blocks, 0u);
  const double identical = static_cast<double>(s.identical_blocks) / static_cast<double>(s.blocks);
  std::printf("Q4_K_M: %zu of %zu blocks byte-identical to llama.cpp (%.5f)\n", s.identical_blocks,
              s.blocks, identical);
  // The same search run in the same order makes the same choices; float summation details may
  // rarely tip a near-tie.
  EXPECT_GE(identical, 0.99);
}

}  // namespace
}  // namespace vkllm::gguf
