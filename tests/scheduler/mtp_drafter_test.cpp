// Multi-token-prediction drafting through the continuous batcher (mtp_drafter.h), on the CPU
// backend with make-model's Qwen3.5 test shape carrying a NextN block (random weights: the block's
// drafts are rarely right, which exercises rejection; the engine test checks its numbers against
// llama.cpp): greedy streams with the block drafting equal their runs without speculation, token
// for token, concurrently, again when the model takes their prompts from its prefix cache (the
// block then follows from its own cache), and the block forgets every finished sequence. The
// block's first draft after a prompt prefilled in two chunks is llama.cpp's draft-mtp's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/model/nextn_head.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/mtp_drafter.h"
#include "tests/reference/model_reference.h"
#include "tests/scheduler/scheduler_run.h"

namespace vkllm::sched {
namespace {

using namespace test_run;

// Passes everything to the block's drafter and keeps each sequence's first proposal.
class FirstDrafts final : public Drafter {
 public:
  explicit FirstDrafts(Drafter& inner) : inner_(inner) {}
  bool wants_hidden() const override { return inner_.wants_hidden(); }
  void observe(std::span<const StepObservation> seen) override { inner_.observe(seen); }
  std::vector<std::vector<int32_t>> propose(std::span<const DraftRequest> requests) override {
    auto drafts = inner_.propose(requests);
    for (size_t i = 0; i < requests.size(); ++i) first.try_emplace(requests[i].sequence, drafts[i]);
    return drafts;
  }
  void forget(uint64_t sequence) override { inner_.forget(sequence); }
  std::map<uint64_t, std::vector<int32_t>> first;

 private:
  Drafter& inner_;
};

TEST(MtpDrafting, GreedyStreamsAreTheModelsWithTheBlockDrafting) {
  model::MakeModelOptions o;
  o.arch = "qwen35";
  o.shape = model::parse_model_shape("test");
  o.seed = 35;
  o.nextn_layers = 1;
  const std::vector<uint8_t> bytes = reference::make_model_bytes(
      o, reference::shared_testdata_dir() / "vocab" / "ggml-vocab-llama-spm.gguf");
  const gguf::GgufFile file = gguf::GgufFile::parse(bytes);
  gguf::GgufFile view = gguf::GgufFile::parse(bytes);
  model::view_as_nextn_head(view);
  const runtime::HostModel model(file), block(view);
  const auto tok = tokenizer::Tokenizer::from_gguf(file);

  runtime::RunnerOptions ro = runner_options();
  ro.max_seqs = 4;
  runtime::Runner plain(model, ro);
  ro.token_hidden = true;
  ro.draft_states = 2 * SpeculationOptions{}.draft_max;  // Qwen3.5 is a hybrid
  runtime::Runner target(model, ro);
  runtime::RunnerOptions bo = runner_options();
  bo.max_seqs = 4;
  bo.embedding_inputs = true;
  runtime::Runner head(block, bo);
  MtpDrafter drafter(head);

  const std::string fox = "The quick brown fox jumps over the lazy dog, and the dog sighed. ";
  const std::vector<std::vector<int32_t>> prompts{
      tok->encode(fox + fox + fox, true, false), tok->encode("Once upon a time", true, false),
      tok->encode("A delta rule carries its state from token to token", true, false)};
  const SequenceOptions greedy = greedy_options(32);
  std::vector<std::vector<int32_t>> solo;
  for (const auto& p : prompts)
    solo.push_back(run(plain, *tok, {p}, SpeculationMode::off, "mtp-solo", greedy).tokens[0]);

  const Outcome together =
      run(target, *tok, prompts, SpeculationMode::draft, "mtp-1", greedy, &drafter);
  EXPECT_EQ(together.tokens, solo);
  EXPECT_GT(together.drafted, 0) << "the block drafted nothing";
  EXPECT_EQ(drafter.sequences(), 0u) << "finished sequences are forgotten";
  // The same prompts again: the model takes their blocks from its prefix cache, the block from
  // its own.
  const Outcome again =
      run(target, *tok, prompts, SpeculationMode::draft, "mtp-2", greedy, &drafter);
  EXPECT_EQ(again.tokens, solo);
  EXPECT_GT(again.drafted, 0);
  std::printf("drafted %.0f / %.0f tokens, %.0f / %.0f accepted\n", together.drafted, again.drafted,
              together.accepted, again.accepted);

  // The first draft after a prompt prefilled in two chunks is llama.cpp's draft-mtp's on the
  // same file and prompt (tests/reference/mtp; the engine test checks its logits).
  const reference::ModelCase c = reference::load_model_case(
      std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "mtp", "qwen35-f16");
  ASSERT_EQ(c.model.seed, o.seed);
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(
      std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "mtp" / "qwen35-f16.json"));
  ASSERT_GT(c.expected.prompt_tokens.size(), ro.max_batch_tokens);
  FirstDrafts recording(drafter);
  const Outcome one = run(target, *tok, {c.expected.prompt_tokens}, SpeculationMode::draft, "mtp-3",
                          greedy_options(8), &recording);
  EXPECT_EQ(one.tokens[0][0], c.expected.greedy_tokens[0]);
  ASSERT_EQ(recording.first.size(), 1u);
  // As many as the sequence's draft gate allowed.
  const std::vector<int32_t>& got = recording.first.begin()->second;
  const auto want = j.at("mtp").at("draft_tokens").get<std::vector<int32_t>>();
  ASSERT_GE(got.size(), 2u);
  ASSERT_LE(got.size(), want.size());
  EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + got.size()));
}

}  // namespace
}  // namespace vkllm::sched
