// Hybrid models resuming from a state checkpoint (engine/kv/state_checkpoints.h, the backends'
// copy_states) on both backends (Vulkan: lavapipe here, Qwen3.5; the CPU backend: LFM2's short
// convolutions and Qwen3.5's Gated DeltaNet; make-model's test shapes): a sequence that reuses a
// cached prefix and restores its checkpoint into a state slot another sequence has just dirtied
// gives the same logits, bit for bit, as the sequence that computed the prefix itself and went
// on in the same chunks, and the logits of the whole prompt in one step within float tolerance;
// its greedy continuation is the same. A prefix without a checkpoint is not reused.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/vulkan_step_buffers.h"
#include "tests/engine/backend_runner.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/model_reference.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

using test::Backend;

// Logits of the last token after computing `tokens` in `table`, one step; with `checkpoint`,
// a checkpoint of the state after it.
std::vector<float> feed(Runner& r, kv::BlockTable& table, std::span<const int32_t> tokens,
                        kv::Checkpoint checkpoint = kv::Checkpoint::none) {
  SequenceStep s{&table, tokens, LogitsWanted::Last, false, checkpoint};
  return r.step(std::span(&s, 1)).logits.at(0);
}

std::vector<int32_t> greedy(Runner& r, kv::BlockTable& table, int32_t first, int n) {
  std::vector<int32_t> out{first};
  while (static_cast<int>(out.size()) < n) {
    SequenceStep s{&table, std::span(&out.back(), 1), LogitsWanted::Last};
    out.push_back(r.step(std::span(&s, 1), /*greedy_only=*/true).greedy.at(0));
  }
  return out;
}

class StateCheckpoint : public ::testing::TestWithParam<std::tuple<Backend, std::string>> {};

TEST_P(StateCheckpoint, AResumedSequenceEqualsTheOneThatComputedItsPrefix) {
  const auto [backend, arch] = GetParam();
  model::MakeModelOptions mo;
  mo.arch = arch;
  mo.shape = model::parse_model_shape("test");
  mo.seed = 36;
  const std::vector<uint8_t> bytes = test::random_model_bytes(mo);
  const auto file = gguf::GgufFile::parse(bytes);
  RunnerOptions ro;
  ro.max_seqs = 2;
  ro.max_context = 128;
  ro.max_batch_tokens = 64;
  ro.kv_budget_bytes = 8u << 20;
  ro.warm_up = false;
  const test::BackendRunner runner(backend, file, ro);
  Runner& r = *runner.runner;
  ASSERT_TRUE(r.spec().has_recurrent_state());
  ASSERT_GT(r.pool().checkpoints().size(), 0u);
  const uint32_t bs = r.block_size();

  std::vector<int32_t> prompt(3 * bs + 5);  // a checkpoint after 2 blocks, then 21 tokens
  std::iota(prompt.begin(), prompt.end(), 7);
  const auto head = std::span<const int32_t>(prompt).first(2 * bs);
  const auto tail = std::span<const int32_t>(prompt).subspan(2 * bs);

  // The sequence that computes its prefix, keeping a checkpoint after it, and goes on.
  std::vector<float> chunked;
  std::vector<int32_t> chunked_tokens;
  {
    kv::BlockTable first(r.pool(), bs);
    feed(r, first, head, kv::Checkpoint::keep);
    chunked = feed(r, first, tail);
    chunked_tokens = greedy(r, first, test::argmax(chunked), 6);
  }
  ASSERT_EQ(r.pool().checkpoints().stats().held, 1u);
  // The whole prompt in one step, in the slot the first sequence used: it leaves its own state
  // there. (A fresh table reuses nothing.)
  std::vector<float> whole;
  {
    kv::BlockTable other(r.pool(), bs);
    whole = feed(r, other, prompt);
  }
  kv::BlockTable resumed(r.pool(), bs);
  ASSERT_EQ(resumed.reuse_prefix(prompt), 2 * bs) << "up to the checkpoint, not the 3rd block";
  ASSERT_TRUE(resumed.pending_restore());
  const std::vector<float> got = feed(r, resumed, tail);
  EXPECT_FALSE(resumed.pending_restore());
  EXPECT_EQ(resumed.state_tokens(), prompt.size());
  EXPECT_EQ(got, chunked) << "restored state and reused K/V: the same computation";
  const double cos = reference::cosine(got, whole);
  std::printf("%s: resumed vs whole prompt: cosine %.7f, max abs diff %.3g\n", arch.c_str(), cos,
              reference::max_abs_diff(got, whole));
  EXPECT_GE(cos, 0.99999);
  EXPECT_EQ(greedy(r, resumed, test::argmax(got), 6), chunked_tokens);

  // A different prompt that shares cached blocks but no checkpoint computes from its start.
  std::vector<int32_t> branch(prompt.begin(), prompt.begin() + bs + 3);
  kv::BlockTable fresh(r.pool(), bs);
  EXPECT_EQ(fresh.reuse_prefix(branch), 0u);
}

// The recurrent kernels bind every slot's state at once, so the device's binding range bounds
// the slots (Granite 4.0-H Micro at 64 sequences, 4.9 GB of states, failed every step's dispatch
// on an H200's 4 GiB bindings): max_seqs where they fit, else the slots that fit, and a model one
// of whose states cannot fit a binding is refused when its runner is made, naming the sizes.
TEST(StateSlots, TheStatesOfAllSlotsFitOneBinding) {
  model::MakeModelOptions mo;
  mo.arch = "qwen35";
  mo.shape = model::parse_model_shape("test");
  mo.seed = 36;
  const std::vector<uint8_t> bytes = test::random_model_bytes(mo);
  const auto file = gguf::GgufFile::parse(bytes);
  Model device(test::vk_context(), file);
  uint64_t slot_bytes = 0;
  for (uint64_t f : device.spec().recurrent_state_floats()) slot_bytes += 4 * f;
  ASSERT_GT(slot_bytes, 0u);
  RunnerOptions ro;
  ro.max_seqs = 64;
  vk::DeviceCapabilities caps = test::vk_context().caps();
  caps.max_storage_buffer_range = 64 * slot_bytes;
  EXPECT_EQ(state_slot_count(caps, device.spec(), ro), 64u);
  caps.max_storage_buffer_range = 5 * slot_bytes + slot_bytes / 2;
  EXPECT_EQ(state_slot_count(caps, device.spec(), ro), 5u);
  caps.max_storage_buffer_range = slot_bytes - 1;
  EXPECT_THROW(state_slot_count(caps, device.spec(), ro), std::runtime_error);
  // On a device capped at 40 KiB bindings, below one state: the load of a runner says why.
  ASSERT_GT(slot_bytes, test::kCappedBindingRange);
  Model capped(test::capped_context(), file);
  ro.max_seqs = 2;
  ro.max_batch_tokens = 2;
  ro.warm_up = false;
  try {
    Runner r(capped, ro);
    ADD_FAILURE() << "a state larger than a binding was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("recurrent state"), std::string::npos) << e.what();
  }
}

std::string case_label(const ::testing::TestParamInfo<std::tuple<Backend, std::string>>& info) {
  return test::backend_label(std::get<0>(info.param)) + std::get<1>(info.param);
}

// The copy is the same for every hybrid; on lavapipe (about 4 s a case, mostly pipelines) the
// DeltaNet's larger state, on the CPU both.
INSTANTIATE_TEST_SUITE_P(Hybrids, StateCheckpoint,
                         ::testing::Values(std::make_tuple(Backend::Vulkan, "qwen35"),
                                           std::make_tuple(Backend::Cpu, "qwen35"),
                                           std::make_tuple(Backend::Cpu, "lfm2")),
                         case_label);

}  // namespace
}  // namespace vkllm::runtime
