// A prompt too long for its context: cut by the scheduler's shift rule or refused as Ollama
// refuses it (prompt_tokens.h).
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/http/status_error.h"
#include "server/requests/prompt_tokens.h"

namespace vkllm::requests {
namespace {

std::vector<int32_t> iota(int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(PromptFit, APromptThatLeavesRoomForATokenIsKept) {
  auto t = iota(31);
  fit_prompt(t, {.num_ctx = 32});
  EXPECT_EQ(t, iota(31));
}

TEST(PromptFit, ALongPromptKeepsNumKeepAndBosThenItsNewestTokens) {
  auto t = iota(200);
  fit_prompt(t, {.num_ctx = 64, .num_keep = 4, .add_bos = true});
  ASSERT_LT(t.size(), 64u);
  EXPECT_GE(t.size(), 32u);  // about half the window stays free for the reply
  EXPECT_EQ(std::vector<int32_t>(t.begin(), t.begin() + 5), iota(5));
  EXPECT_EQ(t.back(), 199);
  EXPECT_EQ(t[5], 200 - static_cast<int32_t>(t.size() - 5));
}

TEST(PromptFit, TruncateFalseRefusesWithLlamaServersErrorObject) {
  auto t = iota(40);
  try {
    fit_prompt(t, {.num_ctx = 32, .truncate = false});
    FAIL() << "an over-long prompt with truncate:false must be refused";
  } catch (const http::StatusError& e) {
    EXPECT_EQ(e.status(), 400u);
    const auto body = nlohmann::json::parse(e.what());
    EXPECT_EQ(body["error"]["type"], "exceed_context_size_error");
    EXPECT_EQ(body["error"]["n_prompt_tokens"], 40);
    EXPECT_EQ(body["error"]["n_ctx"], 32);
  }
  EXPECT_EQ(t.size(), 40u);
}

TEST(PromptFit, ShiftFalseRefusesWithOllamasText) {
  auto t = iota(32);
  try {
    fit_prompt(t, {.num_ctx = 32, .shift = false});
    FAIL() << "an over-long prompt with shift:false must be refused";
  } catch (const http::StatusError& e) {
    EXPECT_EQ(e.status(), 400u);
    EXPECT_NE(std::string(e.what()).find("the prompt is longer than the context length"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace vkllm::requests
