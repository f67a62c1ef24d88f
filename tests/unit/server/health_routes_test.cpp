#include "server/api/health_routes.h"

#include <gtest/gtest.h>

#include "server/http/api_key_policy.h"

using vkllm::api::readiness;
using vkllm::api::ReadinessInput;

namespace {

ReadinessInput healthy() {
  ReadinessInput in;
  in.preload.wanted = 2;
  in.preload.loaded = 2;
  in.queued = 3;
  in.max_queue = 512;
  return in;
}

TEST(Readiness, ReadyWhenPreloadedQueueBelowLimitAndNotDraining) {
  const auto r = readiness(healthy());
  EXPECT_TRUE(r.ready);
  EXPECT_EQ(r.body["ready"], true);
  EXPECT_TRUE(r.body["reasons"].empty());
  EXPECT_EQ(r.body["models"]["preload"], 2);
  EXPECT_EQ(r.body["models"]["loaded"], 2);
  EXPECT_EQ(r.body["queue"]["waiting"], 3);
  EXPECT_EQ(r.body["queue"]["limit"], 512);
}

TEST(Readiness, NothingToPreloadIsReady) {
  ReadinessInput in;
  in.max_queue = 512;
  EXPECT_TRUE(readiness(in).ready);
}

TEST(Readiness, EachConditionAloneMakesItUnready) {
  auto in = healthy();
  in.preload.loaded = 1;
  auto r = readiness(in);
  EXPECT_FALSE(r.ready);
  ASSERT_EQ(r.body["reasons"].size(), 1u);
  EXPECT_EQ(r.body["reasons"][0], "preloading: 1 of 2 models loaded");

  in = healthy();
  in.queued = 512;
  r = readiness(in);
  EXPECT_FALSE(r.ready);
  ASSERT_EQ(r.body["reasons"].size(), 1u);
  EXPECT_EQ(r.body["reasons"][0], "queue full: 512 of 512 requests waiting");

  in = healthy();
  in.queued = 511;
  EXPECT_TRUE(readiness(in).ready);

  in = healthy();
  in.draining = true;
  r = readiness(in);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.body["ready"], false);
  ASSERT_EQ(r.body["reasons"].size(), 1u);
  EXPECT_EQ(r.body["reasons"][0], "draining: the server is shutting down");
}

TEST(Readiness, ReportsEveryReasonAndFailedAttempts) {
  ReadinessInput in;
  in.preload.wanted = 1;
  in.preload.failed_attempts = 4;
  in.queued = 9;
  in.max_queue = 8;
  in.draining = true;
  const auto r = readiness(in);
  EXPECT_FALSE(r.ready);
  ASSERT_EQ(r.body["reasons"].size(), 3u);
  EXPECT_NE(r.body["reasons"][1].get<std::string>().find("4 failed attempts"), std::string::npos);
}

TEST(ApiKeyPolicy, ProbesNeedNoKeyButOtherRoutesDo) {
  const vkllm::http::ApiKeyPolicy keys({"secret"});
  for (const char* m : {"GET", "HEAD"}) {
    EXPECT_TRUE(keys.allows(m, "/livez", std::nullopt, std::nullopt)) << m;
    EXPECT_TRUE(keys.allows(m, "/readyz", std::nullopt, std::nullopt)) << m;
  }
  EXPECT_FALSE(keys.allows("POST", "/readyz", std::nullopt, std::nullopt));
  EXPECT_FALSE(keys.allows("GET", "/readyz/x", std::nullopt, std::nullopt));
  EXPECT_FALSE(keys.allows("GET", "/livezz", std::nullopt, std::nullopt));
  EXPECT_FALSE(keys.allows("GET", "/metrics", std::nullopt, std::nullopt));
  EXPECT_TRUE(keys.allows("GET", "/metrics", std::string("Bearer secret"), std::nullopt));
}

}  // namespace
