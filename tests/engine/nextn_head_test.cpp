// Qwen3.5's multi-token-prediction (NextN) block (engine/model/nextn_head.h) on both backends
// (Vulkan: lavapipe here; the CPU backend) against llama.cpp's draft-mtp steps on the same
// make-model --mtp fixture (tests/reference/mtp, record_family_case.sh): the model, whose file now
// carries the block after its layers, answers as llama.cpp's (last logits, greedy tokens up to a
// near-tie); the block, viewed as a one-layer model, takes in the prompt with the model's hidden
// states shifted by one position (RunnerOptions::token_hidden, SequenceStep::hidden_in), and its
// first draft step's logits match llama.cpp's by cosine (>= 0.9999 F16, >= 0.999 Q8_0), its greedy
// drafts, each fed back with the block's own hidden state (Runner::step_draft), llama.cpp's drafts
// up to a near-tie.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/nextn_head.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "tests/engine/backend_runner.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/model_reference.h"
#include "tests/support/fixture_model.h"

namespace vkllm::runtime {
namespace {

using reference::cosine;

std::filesystem::path mtp_dir() {
  return std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "mtp";
}

using test::Backend;
using test::BackendRunner;

RunnerOptions options() {
  RunnerOptions o;
  o.max_batch_tokens = 256;
  o.max_seqs = 2;
  o.max_context = 320;
  o.kv_budget_bytes = 48u << 20;
  o.warm_up = false;
  return o;
}

class NextnHead : public ::testing::TestWithParam<std::tuple<Backend, std::string>> {};

TEST_P(NextnHead, DraftsAsLlamaCppDoes) {
  const auto [backend, name] = GetParam();
  const reference::ModelCase c = reference::load_model_case(mtp_dir(), name);
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(mtp_dir() / (name + ".json")));
  const nlohmann::json& mtp = j.at("mtp");
  const std::vector<uint8_t> bytes = reference::model_case_bytes(c);
  const gguf::GgufFile file = gguf::GgufFile::parse(bytes);
  const reference::LlamaCppCase& ref = c.expected;
  const std::vector<int32_t>& prompt = ref.prompt_tokens;
  const auto n = static_cast<uint32_t>(prompt.size());

  // The model: the block's layer is not one of its own.
  RunnerOptions mo = options();
  mo.token_hidden = true;
  const BackendRunner target(backend, file, mo);
  const model::ModelSpec& spec = target.runner->spec();
  ASSERT_EQ(spec.n_nextn, 1u);
  ASSERT_FALSE(spec.nextn_head);
  const uint32_t E = spec.n_embd;
  kv::BlockTable t(target.runner->pool(), target.runner->block_size());
  SequenceStep ts{&t, prompt, LogitsWanted::Last};
  const StepResult tr = target.runner->step(std::span(&ts, 1));
  const double model_cos = cosine(tr.logits.at(0), ref.last_logits);
  EXPECT_GE(model_cos, ref.min_cosine) << "the model's last logits";
  const std::vector<float>& h = tr.token_hidden.at(0);
  ASSERT_EQ(h.size(), uint64_t(n) * E);
  const int32_t next = tr.greedy.at(0);
  EXPECT_EQ(next, ref.greedy_tokens.at(0));

  // The block: the prompt's tokens, each with the model's state before it.
  gguf::GgufFile view = gguf::GgufFile::parse(bytes);
  model::view_as_nextn_head(view);
  RunnerOptions ho = options();
  ho.embedding_inputs = true;
  // On a device it uses the model's embeddings and LM head (the same tensors of the same file).
  ModelOptions shared;
  if (target.device) shared.share_from = &*target.device;
  const BackendRunner head(backend, view, ho, shared);
  if (head.device) {
    // The test shape's vocabulary outweighs its layers: the block alone is the smaller part.
    EXPECT_GT(head.device->shared_bytes(), 0u);
    EXPECT_LT(head.device->weight_bytes(), head.device->shared_bytes());
  }
  ASSERT_TRUE(head.runner->spec().nextn_head);
  ASSERT_EQ(head.runner->spec().n_layer, 1u);
  ASSERT_FALSE(head.runner->spec().has_recurrent_state());
  std::vector<float> shifted(uint64_t(n) * E, 0.0f);
  std::copy(h.begin(), h.end() - E, shifted.begin() + E);
  kv::BlockTable b(head.runner->pool(), head.runner->block_size());
  SequenceStep fill{&b, prompt, LogitsWanted::None};
  fill.hidden_in = shifted;
  head.runner->step(std::span(&fill, 1));
  ASSERT_EQ(b.num_tokens(), n);

  // Drafts: the model's next token with the last prompt state, then each draft with the block's.
  std::vector<int32_t> tokens{next};
  std::vector<float> hidden(h.end() - E, h.end());
  std::vector<int32_t> drafts;
  float tie = reference::kNearTieMargin;
  const auto want = mtp.at("draft_tokens").get<std::vector<int32_t>>();
  const auto margins = mtp.at("draft_margins").get<std::vector<float>>();
  for (size_t k = 0; k < want.size(); ++k) {
    SequenceStep s{&b, tokens, LogitsWanted::Last, /*provisional=*/true};
    s.hidden_in = hidden;
    if (k == 0) {  // its logits too
      const StepResult first = head.runner->step(std::span(&s, 1));
      b.trim_reserved();
      const double cos =
          cosine(first.logits.at(0), mtp.at("first_logits").get<std::vector<float>>());
      std::printf("%s: model %.7f, first draft step %.7f against llama.cpp\n", name.c_str(),
                  model_cos, cos);
      EXPECT_GE(cos, ref.min_cosine) << "the block's first draft logits";
      tie = reference::near_tie_margin(
          ref, reference::max_abs_diff(first.logits.at(0),
                                       mtp.at("first_logits").get<std::vector<float>>()));
    }
    const StepResult r = head.runner->step_draft(std::span(&s, 1));
    b.trim_reserved();
    ASSERT_EQ(r.hidden.at(0).size(), E);
    drafts.push_back(r.greedy.at(0));
    tokens.push_back(r.greedy.at(0));
    hidden.insert(hidden.end(), r.hidden.at(0).begin(), r.hidden.at(0).end());
  }
  EXPECT_EQ(b.num_tokens(), n) << "drafts leave the block's cache as it was";
  for (size_t k = 0; k < want.size(); ++k) {
    if (drafts[k] != want[k]) {
      EXPECT_LT(margins[k], tie) << "draft " << k << ": " << drafts[k] << " where llama.cpp drafts "
                                 << want[k];
      break;  // later drafts follow another token
    }
  }
}

std::string case_label(const ::testing::TestParamInfo<std::tuple<Backend, std::string>>& info) {
  std::string s = test::backend_label(std::get<0>(info.param)) + std::get<1>(info.param);
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Qwen35, NextnHead,
                         ::testing::Combine(::testing::Values(Backend::Vulkan, Backend::Cpu),
                                            ::testing::Values("qwen35-f16", "qwen35-q8_0",
                                                              "qwen35moe-f16", "qwen3next-f16")),
                         case_label);

}  // namespace
}  // namespace vkllm::runtime
