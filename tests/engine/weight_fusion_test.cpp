// Q|K|V and gate|up stacked into one tensor each at load (engine/runtime/weight_fusion.h): the
// fused model gives the same logits as the unfused one, bit for bit (each output row is the same
// dot product either way), on prefill and decode; fusion happens in every layer or none (a K-quant
// mix with Q6_K value rows in some layers keeps Q/K/V apart); a fused tensor above the binding
// range is split by rows with its sources' rows landing across the parts; and the file is read
// forward only, as a streaming source needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/tensor_data_source.h"
#include "engine/vulkan/context.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

using model::FileType;
using model::Weight;

constexpr uint32_t kVocab = test::kFixtureVocab;
// Below the fixture's fused Q|K|V (512 x 256) and gate|up (640 x 256) tensors at every type.
constexpr uint64_t kRange = test::kCappedBindingRange;

// The file's bytes, failing the test if a read goes backwards.
class ForwardOnlySource final : public TensorDataSource {
 public:
  explicit ForwardOnlySource(const gguf::GgufFile& file) : file_(file) {}
  void read(uint64_t offset, std::span<std::byte> out) override {
    EXPECT_GE(offset, next_) << "read went back";
    next_ = offset + out.size();
    GgufFileSource(file_).read(offset, out);
  }

 private:
  const gguf::GgufFile& file_;
  uint64_t next_ = 0;
};

struct FusionCase {
  FileType type;
  bool capped;  // binding range below the fused tensors: they load split by rows
};

class WeightFusion : public ::testing::TestWithParam<FusionCase> {};

TEST_P(WeightFusion, FusedModelGivesTheUnfusedLogits) {
  const FusionCase c = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));

  const std::vector<uint8_t> bytes =
      test::random_model_bytes(test::wide_llama_options(c.type, seed));
  const auto file = gguf::GgufFile::parse(bytes);

  vk::Context& ctx = c.capped ? test::capped_context() : test::vk_context();
  ForwardOnlySource source(file);
  Model fused(ctx, file, source, {.fuse_weights = true, .layers = {}, .shard = {}});
  Model plain(ctx, file, {.fuse_weights = false, .layers = {}, .shard = {}});

  const model::ModelSpec& spec = fused.spec();
  EXPECT_FALSE(plain.spec().fused_qkv);
  EXPECT_FALSE(plain.spec().fused_gate_up);
  EXPECT_TRUE(plain.find(Weight::AttnQ, 1));
  // Q4_K_M keeps layer 1's value rows in Q6_K (llama.cpp's mix), so Q/K/V stay apart in every
  // layer; the other types fuse them.
  const bool qkv = c.type != FileType::Q4_K_M;
  EXPECT_EQ(spec.fused_qkv, qkv);
  EXPECT_TRUE(spec.fused_gate_up);
  for (uint32_t l = 0; l < spec.n_layer; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    EXPECT_EQ(fused.find(Weight::AttnQ, l) == nullptr, qkv);
    EXPECT_EQ(fused.find(Weight::AttnQKV, l) != nullptr, qkv);
    EXPECT_EQ(fused.find(Weight::FfnGate, l), nullptr);
    const DeviceTensor& up = fused.get(Weight::FfnUp, l);
    EXPECT_EQ(up.rows(), 2ull * spec.n_ff);
    EXPECT_EQ(up.type, plain.get(Weight::FfnUp, l).type);
    if (qkv) {
      const DeviceTensor& t = fused.get(Weight::AttnQKV, l);
      EXPECT_EQ(t.rows(), uint64_t(spec.n_embd_q()) + 2ull * spec.n_embd_k_gqa());
      EXPECT_EQ(t.cols(), spec.n_embd);
    }
    if (c.capped) {
      EXPECT_GT(up.parts.size(), 1u);
      for (const RowPart& p : up.parts) EXPECT_LE(p.data.size, kRange);
    }
  }
  EXPECT_EQ(fused.weight_bytes(), plain.weight_bytes());

  RunnerOptions opts;
  opts.max_batch_tokens = 16;
  opts.max_seqs = 2;
  opts.max_logits_rows = 16;
  opts.max_context = 64;
  opts.kv_budget_bytes = 8u << 20;
  opts.matvec_max_batch = 8;  // the 16-token prefill takes the tiled GEMM, decode the matvec
  Runner fused_runner(fused, opts);
  Runner plain_runner(plain, opts);
  Generator a(fused_runner), b(plain_runner);

  std::uniform_int_distribution<int32_t> token(3, kVocab - 1);
  std::vector<int32_t> prompt(16);
  for (auto& t : prompt) t = token(rng);
  const std::vector<float> fa = a.feed(prompt, /*all_rows=*/true);
  const std::vector<float> fb = b.feed(prompt, /*all_rows=*/true);
  ASSERT_EQ(fa.size(), fb.size());
  EXPECT_EQ(fa, fb) << "prefill logits differ; max abs diff " << reference::max_abs_diff(fa, fb);
  for (int step = 0; step < 3; ++step) {
    const std::vector<int32_t> next(step == 0 ? 3 : 1, token(rng));
    const std::vector<float> da = a.feed(next);
    const std::vector<float> db = b.feed(next);
    EXPECT_EQ(da, db) << "decode step " << step << " logits differ; max abs diff "
                      << reference::max_abs_diff(da, db);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, WeightFusion,
                         ::testing::Values(FusionCase{FileType::Q4_K_M, false},
                                           FusionCase{FileType::Q8_0, false},
                                           FusionCase{FileType::F16, true},
                                           FusionCase{FileType::Q4_K_M, true}),
                         [](const ::testing::TestParamInfo<FusionCase>& info) {
                           return std::string(model::file_type_name(info.param.type)) +
                                  (info.param.capped ? "_split" : "");
                         });

}  // namespace
}  // namespace vkllm::runtime
