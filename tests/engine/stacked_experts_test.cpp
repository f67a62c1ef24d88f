// Stacked gate|up experts (blk.N.ffn_gate_up_exps, make-model --stacked-experts): the file holds
// one tensor per layer where its split twin holds ffn_gate_exps and ffn_up_exps, the reader sees
// the two as strided views of it (gguf::split_stacked_experts), and both backends compute the
// same logits from it as from the twin made with the same seed, bit for bit: the CPU reads the
// views where they lie (the stacked file copied from a forward-only stream, as the server loads
// registry blobs; the twin in place); Vulkan holds them as one gate|up tensor (weight_fusion.h) and
// runs one product of 2 x n_ff_exp rows per expert and the GLU over its halves, compared with the
// twin loaded unfused (separate gate and up products). Vulkan runs the prompt on the grouped expert
// GEMMs and the decode steps on the indirect matvec, on the grouped decode kernel, and on q8 inputs
// (int8 dot products) where the device has them (lavapipe does).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_maker.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/tensor_data_source.h"
#include "tests/engine/moe_test_contexts.h"
#include "tests/engine/vk_test_context.h"
#include "tests/support/fixture_model.h"

namespace vkllm::test {
namespace {

struct TwinCase {
  const char* arch;
  const char* shape;
  model::FileType type;
};

model::MakeModelOptions options(const TwinCase& c, bool stacked) {
  model::MakeModelOptions o;
  o.arch = c.arch;
  o.shape = model::parse_model_shape(c.shape);
  o.file_type = c.type;
  o.seed = 35;
  o.stacked_experts = stacked;
  return o;
}

enum class Way { Cpu, VulkanGemm, VulkanGroupedMatvec, VulkanInt8 };

// The file's bytes as a registry blob's stream gives them: reads must go forward only (the
// stacked tensor's two views are read expert by expert, interleaved, not one after the other).
class ForwardOnlySource final : public runtime::TensorDataSource {
 public:
  explicit ForwardOnlySource(const gguf::GgufFile& f) : file_(f) {}
  void read(uint64_t offset, std::span<std::byte> out) override {
    EXPECT_GE(offset, next_) << "a read went back in the stream";
    next_ = offset + out.size();
    file_.read(offset, out);
  }

 private:
  runtime::GgufFileSource file_;
  uint64_t next_ = 0;
};

// The logits after a 12-token prompt and after each of 3 decode steps (tokens fixed by the
// caller, so both files see the same sequence). `fuse` (the stacked file): loaded through a
// forward-only stream, copied on the CPU, the experts fused on Vulkan; else read in place (CPU)
// and unfused.
std::vector<std::vector<float>> run(const gguf::GgufFile& file, Way way,
                                    const std::vector<int32_t>& steps, bool fuse) {
  ForwardOnlySource stream(file);
  runtime::RunnerOptions opts;
  opts.max_batch_tokens = 16;
  opts.max_seqs = 1;
  opts.max_context = 64;
  opts.kv_budget_bytes = 4u << 20;
  if (way == Way::VulkanInt8) opts.int8_dot = vk::Int8Dot::On;
  std::optional<runtime::HostModel> host;
  std::optional<runtime::Model> device;
  std::unique_ptr<runtime::Runner> runner;
  if (way == Way::Cpu) {
    if (fuse) {
      host.emplace(file, stream);
    } else {
      host.emplace(file, runtime::MappedWeights::InPlace);
    }
    runner = std::make_unique<runtime::Runner>(*host, opts);
  } else {
    runtime::ModelOptions mo;
    mo.fuse_weights = fuse;
    // Grouped GEMMs from 8 (token, expert) pairs: the prompt takes them, decode the indirect
    // matvec; or every step on the grouped decode kernel.
    vk::Context& ctx = way == Way::VulkanGroupedMatvec ? grouped_matvec_context() : moe_context(8);
    if (fuse) {
      device.emplace(ctx, file, stream, mo);
    } else {
      device.emplace(ctx, file, mo);
    }
    // Fused: one gate|up expert tensor a MoE layer on the device, whatever the file's layout.
    EXPECT_EQ(device->find(model::Weight::FfnGateUpExps, 0) != nullptr, fuse);
    EXPECT_EQ(device->find(model::Weight::FfnGateExps, 0) == nullptr, fuse);
    runner = std::make_unique<runtime::Runner>(*device, opts);
  }
  runtime::Generator gen(*runner);
  const std::vector<int32_t> prompt{1, 9, 23, 4, 57, 11, 30, 8, 61, 2, 44, 17};
  std::vector<std::vector<float>> out{gen.feed(prompt)};
  for (int32_t t : steps) out.push_back(gen.feed(std::vector<int32_t>{t}));
  if (way == Way::VulkanGemm) {
    EXPECT_GE(runner->moe_grouped_ffns(), 1u) << "the prompt on the grouped GEMMs";
  }
  if (way == Way::VulkanInt8) {
    EXPECT_GE(runner->moe_int8_ffns(), steps.size()) << "decode steps on q8 inputs";
  }
  return out;
}

class StackedExperts : public ::testing::TestWithParam<std::tuple<TwinCase, Way>> {};

TEST_P(StackedExperts, LogitsEqualTheSplitTwins) {
  const auto [c, way] = GetParam();
  if (way == Way::VulkanInt8 && !vk_context().caps().integer_dot_product)
    GTEST_SKIP() << "no integer dot product";
  const std::vector<uint8_t> split_bytes = random_model_bytes(options(c, false));
  const std::vector<uint8_t> stacked_bytes = random_model_bytes(options(c, true));
  const auto split = gguf::GgufFile::parse(split_bytes);
  const auto stacked = gguf::GgufFile::parse(stacked_bytes);

  // As stored: one [n_embd, 2 x n_ff_exp, n_expert] tensor a layer, no split halves.
  const auto raw = gguf::GgufFile::parse(stacked_bytes, gguf::ReadLayout::Raw);
  const gguf::TensorInfo* gate = split.find_tensor("blk.0.ffn_gate_exps.weight");
  const gguf::TensorInfo* gate_up = raw.find_tensor("blk.0.ffn_gate_up_exps.weight");
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(raw.find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
  EXPECT_EQ(gate_up->shape,
            (std::vector<uint64_t>{gate->shape[0], 2 * gate->shape[1], gate->shape[2]}));
  const auto count = [](const gguf::GgufFile& f, std::string_view part) {
    return std::count_if(f.tensors().begin(), f.tensors().end(),
                         [&](const gguf::TensorInfo& t) { return t.name.ends_with(part); });
  };
  EXPECT_EQ(count(raw, ".ffn_gate_up_exps.weight"), count(split, ".ffn_gate_exps.weight"));
  EXPECT_EQ(count(raw, ".ffn_up_exps.weight"), 0);
  EXPECT_EQ(raw.tensors().size() + count(raw, ".ffn_gate_up_exps.weight"), split.tensors().size());
  // As read: the two halves, expert by expert the split twin's bytes.
  const auto split_extent = [](const gguf::GgufFile& f, const std::string& name, uint64_t e) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    const uint64_t n = t->byte_size / t->shape[2];
    const uint64_t at = t->expert_skip + e * (t->strided() ? t->expert_stride : n);
    return std::vector<uint8_t>(f.tensor_extent(*t).begin() + at,
                                f.tensor_extent(*t).begin() + at + n);
  };
  for (const char* half : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight"}) {
    const gguf::TensorInfo* v = stacked.find_tensor(half);
    ASSERT_NE(v, nullptr) << half;
    EXPECT_TRUE(v->strided()) << half;
    EXPECT_EQ(v->shape, gate->shape) << half;
    EXPECT_THROW(stacked.tensor_data(*v), gguf::GgufError);
    for (uint64_t e : {uint64_t{0}, gate->shape[2] - 1})
      EXPECT_EQ(split_extent(stacked, half, e), split_extent(split, half, e)) << half << " " << e;
  }

  const std::vector<int32_t> steps{5, 70, 33};
  // The split twin as the file has it, the stacked file (on Vulkan) with each layer's experts as
  // one device tensor, one product of 2 x n_ff_exp rows and the GLU over its halves.
  const auto want = run(split, way, steps, /*fuse=*/false);
  const auto got = run(stacked, way, steps, /*fuse=*/true);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "step " << i;
}

std::string label(const ::testing::TestParamInfo<std::tuple<TwinCase, Way>>& info) {
  const auto& [c, way] = info.param;
  const char* ways[] = {"Cpu", "VulkanGemm", "VulkanGroupedMatvec", "VulkanInt8"};
  std::string arch = c.arch;
  return arch + "_" + std::string(model::file_type_name(c.type)) + "_" +
         ways[static_cast<int>(way)];
}

// gemma4's MoE layers (beside a dense FFN, a router with its own input and per-expert scales) in
// Q8_0 on the CPU and the grouped GEMMs / indirect matvec; qwen3moe's in Q4_K_M (an int8 expert
// type lavapipe's q8 path takes) on every way.
INSTANTIATE_TEST_SUITE_P(Gemma4, StackedExperts,
                         ::testing::Combine(::testing::Values(TwinCase{"gemma4",
                                                                       "test-moe-narrow:2",
                                                                       model::FileType::Q8_0}),
                                            ::testing::Values(Way::Cpu, Way::VulkanGemm)),
                         label);
INSTANTIATE_TEST_SUITE_P(
    Qwen3Moe, StackedExperts,
    ::testing::Combine(::testing::Values(TwinCase{"qwen3moe", "test", model::FileType::Q4_K_M}),
                       ::testing::Values(Way::Cpu, Way::VulkanGemm, Way::VulkanGroupedMatvec,
                                         Way::VulkanInt8)),
    label);

}  // namespace
}  // namespace vkllm::test
