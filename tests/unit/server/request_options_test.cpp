#include "server/requests/request_options.h"

#include <gtest/gtest.h>

#include "server/http/status_error.h"

namespace vkllm::requests {
namespace {

using oj = nlohmann::ordered_json;

TEST(RequestOptions, LaterLayersWinKeyByKey) {
  const oj defaults = {{"stop", {"<|end|>"}}, {"temperature", 0.1}};
  const oj model = {{"temperature", 0.5}, {"num_ctx", 8192}};
  const oj request = {{"temperature", 0.0}, {"top_k", 7.9}, {"seed", 42}};
  const auto o = resolve_options({&defaults, &model, &request});
  EXPECT_EQ(o.sampling.temperature, 0.0f);
  EXPECT_EQ(o.sampling.top_k, 7);  // Go truncates a fraction for integer options
  EXPECT_EQ(o.sampling.seed, 42);
  EXPECT_EQ(o.num_ctx, 8192);
  ASSERT_EQ(o.stop.size(), 1u);
  EXPECT_EQ(o.stop[0], "<|end|>");
}

TEST(RequestOptions, OllamaDefaults) {
  const auto o = resolve_options({});
  EXPECT_FLOAT_EQ(o.sampling.temperature, 0.8f);
  EXPECT_EQ(o.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(o.sampling.top_p, 0.9f);
  EXPECT_FLOAT_EQ(o.sampling.repeat_penalty, 1.0f);
  EXPECT_EQ(o.num_predict, -1);
  EXPECT_EQ(o.num_keep, 4);
  EXPECT_FALSE(o.num_ctx.has_value());
}

TEST(RequestOptions, UnknownKeysAndNullsAreIgnored) {
  const oj request = {{"tfs_z", 1.0}, {"numa", true}, {"temperature", nullptr}};
  EXPECT_NO_THROW(resolve_options({&request}));
}

// A wrong option type is the client's mistake: 400 (Ollama answers 500), with Ollama's text.
TEST(RequestOptions, WrongTypesAre400sWithOllamasText) {
  auto message = [](const oj& request) {
    try {
      resolve_options({&request});
    } catch (const http::StatusError& e) {
      EXPECT_EQ(e.status(), 400u);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{"num_ctx", "big"}}), "option \"num_ctx\" must be of type integer");
  EXPECT_EQ(message({{"temperature", "hot"}}), "option \"temperature\" must be of type float32");
  EXPECT_EQ(message({{"stop", 3}}), "option \"stop\" must be of type array");
  EXPECT_EQ(message({{"stop", {1, 2}}}), "option \"stop\" must be of type an array of strings");
  EXPECT_EQ(message({{"use_mmap", 1}}), "option \"use_mmap\" must be of type boolean");
  EXPECT_EQ(message({{"num_predict", 1e300}}), "option \"num_predict\" must be of type integer");
  EXPECT_EQ(message({{"num_ctx", 1e19}}), "option \"num_ctx\" must be of type integer");
}

}  // namespace
}  // namespace vkllm::requests
