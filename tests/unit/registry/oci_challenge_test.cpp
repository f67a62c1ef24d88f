#include "registry/oci_challenge.h"

#include <gtest/gtest.h>

namespace vkllm::registry {
namespace {

TEST(OciChallenge, ParsesADockerBearerChallenge) {
  auto challenges = parse_www_authenticate(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull,push")");
  ASSERT_EQ(challenges.size(), 1u);
  EXPECT_EQ(challenges[0].scheme, "bearer");
  EXPECT_EQ(challenges[0].param("realm"), "https://auth.docker.io/token");
  EXPECT_EQ(challenges[0].param("service"), "registry.docker.io");
  // The comma inside the quoted scope belongs to the value.
  EXPECT_EQ(challenges[0].param("scope"), "repository:library/ubuntu:pull,push");
  EXPECT_EQ(challenges[0].param("missing"), "");
}

TEST(OciChallenge, ParsesSeveralChallengesSpacesAndEscapes) {
  auto challenges = parse_www_authenticate(
      R"(Basic realm="a \"quoted\" realm" , BEARER Realm=https://r/t, service = "s")");
  ASSERT_EQ(challenges.size(), 2u);
  EXPECT_EQ(challenges[0].scheme, "basic");
  EXPECT_EQ(challenges[0].param("realm"), "a \"quoted\" realm");
  EXPECT_EQ(challenges[1].scheme, "bearer");
  EXPECT_EQ(challenges[1].param("realm"), "https://r/t");
  EXPECT_EQ(challenges[1].param("service"), "s");
}

TEST(OciChallenge, MalformedHeadersNeverThrow) {
  for (const char* junk : {"", "   ", ",,,", "Bearer", "Bearer realm=\"unterminated", "=\"x\"",
                           "Bearer realm=", "\"\"\"", "Bearer ,,, realm=x,,"}) {
    EXPECT_NO_THROW(parse_www_authenticate(junk)) << junk;
  }
  auto unterminated = parse_www_authenticate("Bearer realm=\"https://x");
  ASSERT_EQ(unterminated.size(), 1u);
  EXPECT_EQ(unterminated[0].scheme, "bearer");
  EXPECT_TRUE(parse_www_authenticate("").empty());
}

}  // namespace
}  // namespace vkllm::registry
